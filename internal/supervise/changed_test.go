//go:build unix

package supervise

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gpurent/gpurent/internal/store"
)

// rewritingBackend rewrites path in place, once, when the first object of
// an upload has begun to be written: the command saving the checkpoint
// again while it is uploaded.
type rewritingBackend struct {
	store.Backend
	path string
	data []byte
	once sync.Once
	err  error
}

func (r *rewritingBackend) Put(ctx context.Context, key string, fill func(io.Writer) error) (int64, error) {
	if !strings.Contains(key, "/data/") {
		return r.Backend.Put(ctx, key, fill)
	}
	return r.Backend.Put(ctx, key, func(w io.Writer) error {
		return fill(writeFunc(func(p []byte) (int, error) {
			r.once.Do(func() { r.err = os.WriteFile(r.path, r.data, 0o644) })
			return w.Write(p)
		}))
	})
}

type writeFunc func(p []byte) (int, error)

func (f writeFunc) Write(p []byte) (int, error) { return f(p) }

// A checkpoint rewritten in place while it is uploaded is not committed
// torn: the upload is said to have been overtaken (not a failure of the
// store, so no store_failing), and the next scan uploads the new version
// whole. Before, the torn copy (a megabyte of the old bytes, then the new)
// was committed, hashed as it was read, and only then was the change said.
func TestCheckpointRewrittenDuringUpload(t *testing.T) {
	const size = 3 << 20 // read in 1 MiB buffers: the first is sent before the rewrite
	h := newHarness(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "step-1.pt")
	newer := bytes.Repeat([]byte("b"), size)
	rb := &rewritingBackend{Backend: h.b, path: path, data: newer}
	cfg := h.config(dir, rb)
	cfg.Glob = "step-*"
	cfg.StoreAlarm = 1 // a single failed upload would raise the alarm
	cfg.Cmd = []string{"sh", "-c", fmt.Sprintf("head -c %d /dev/zero | tr '\\000' a > %q; sleep 1", size, path)}
	logged := captureLog(&cfg)
	events := captureEvents(&cfg)
	sup, _ := New(cfg)
	ex, err := sup.Run(context.Background(), nil)
	if err != nil || ex.Code != 0 {
		t.Fatal(ex, err)
	}
	if rb.err != nil {
		t.Fatal(rb.err)
	}
	l := logged()
	if !strings.Contains(l, "step-1.pt changed during its upload; not committed, uploaded again at the next scan") ||
		strings.Contains(l, "upload of") || sup.Metrics.uploadErrors.Load() != 0 || slices.Contains(kinds(events()), "store_failing") {
		t.Errorf("events %q, log:\n%s", events(), l)
	}
	st := h.store(h.b)
	ms, err := st.List(context.Background(), "trial")
	if err != nil || len(ms) == 0 {
		t.Fatalf("committed %d checkpoints, %v\n%s", len(ms), err, l)
	}
	for _, m := range ms {
		dest := filepath.Join(t.TempDir(), "step")
		if _, err := st.Pull(context.Background(), "trial", m.ID, dest); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(dest); !bytes.Equal(got, newer) {
			t.Errorf("checkpoint %s holds %d bytes beginning %q, not the new version whole", m.ID, len(got), got[:min(len(got), 8)])
		}
	}
}
