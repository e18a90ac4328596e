package measure

import (
	"slices"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/compute"
	"github.com/gpurent/gpurent/internal/probe"
)

// With CUDA_VISIBLE_DEVICES=3 the only CUDA device is NVML's fourth: its
// results belong to gpu3, found by PCI address whatever case and domain
// width each library prints.
func TestNVMLIndex(t *testing.T) {
	g := probe.GPUFacts{Devices: []probe.Device{
		{Index: 0, BusID: "00000000:18:00.0"}, {Index: 1, BusID: "00000000:2A:00.0"},
		{Index: 2, BusID: "00000000:3A:00.0"}, {Index: 3, BusID: "00000000:5D:00.0"},
	}}
	if got := nvmlIndex("0000:5d:00.0", 0, g); got != 3 {
		t.Errorf("CUDA 0 at 5d: gpu%d, want gpu3", got)
	}
	if got := nvmlIndex("", 1, g); got != 1 {
		t.Errorf("no bus id: gpu%d, want the CUDA index 1", got)
	}
	if got := nvmlIndex("0000:99:00.0", 2, g); got != 2 {
		t.Errorf("unknown bus id: gpu%d, want the CUDA index 2", got)
	}
}

// The soak's judgement sees only the samples taken while its loop ran:
// set-up before it and the wait for slower GPUs after it are idle.
func TestWhileLooping(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)
	var xs []compute.SoakSample
	for at := 1.0; at <= 10; at++ {
		xs = append(xs, compute.SoakSample{AtS: at})
	}
	got := whileLooping(xs, t0, t0.Add(2500*time.Millisecond), t0.Add(6*time.Second))
	var ats []float64
	for _, x := range got {
		ats = append(ats, x.AtS)
	}
	if want := []float64{0.5, 1.5, 2.5, 3.5}; !slices.Equal(ats, want) {
		t.Errorf("kept %v, want %v", ats, want)
	}
}
