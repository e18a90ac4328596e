package gpuwipe

import (
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/wipe"
)

// A MIG-enabled card is not scrubbed, forced or not, and no CUDA call is
// made for it; a card whose processes NVML names is left alone unforced.
func TestScrubOneRefuses(t *testing.T) {
	g := wipe.GPU{Index: 0, MIG: true}
	scrubOne(t.Context(), &g, 0, true)
	if g.Status != wipe.GPUFailed || !strings.Contains(g.Error.String(), "MIG is on") {
		t.Errorf("MIG: %+v", g)
	}
	g = wipe.GPU{Index: 0, HeldBy: []string{"pid 7 (1.00 GiB)"}}
	scrubOne(t.Context(), &g, 0, false)
	if g.Status != wipe.GPUInUse || g.ScrubbedBytes != 0 {
		t.Errorf("held: %+v", g)
	}
}
