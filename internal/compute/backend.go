package compute

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
)

// Probe names, shared by every backend so results can be compared.
const (
	ProbeFP32     = "fp32_fma"    // SIMT FP32 FMA throughput, TFLOPS
	ProbeBF16     = "tensor_bf16" // mma.sync BF16 in, FP32 accumulate, TFLOPS
	ProbeFP16     = "tensor_fp16" // mma.sync FP16 in, FP32 accumulate, TFLOPS
	ProbeTF32     = "tensor_tf32" // mma.sync TF32, TFLOPS
	ProbeFP8      = "tensor_fp8"  // mma.sync e4m3, FP32 accumulate, TFLOPS
	ProbeCopy     = "mem_copy"    // device copy kernel, GB/s (read + write)
	ProbeDtoD     = "memcpy_dtod" // cuMemcpyDtoD, GB/s (read + write)
	ProbeH2D      = "h2d"         // pinned host to device, GB/s
	ProbeD2H      = "d2h"         // device to pinned host, GB/s
	ProbeAlloc    = "alloc"       // memory allocated and touched, GiB
	ProbeSustain  = "sustained"   // fixed kernel launched back to back
	ProbeGEMMFP32 = "gemm_fp32"   // 8192^3 GEMM, TFLOPS
	ProbeGEMMTF32 = "gemm_tf32"
	ProbeGEMMBF16 = "gemm_bf16"
	ProbeResidue  = "residue" // fresh device memory read before anything writes it: bytes not zero
)

// Result is one probe's measurement.
type Result struct {
	Probe     string  `json:"probe"`
	Precision string  `json:"precision,omitempty"` // fp32, tf32, bf16, fp16, fp8: the datasheet peak it is judged against
	Value     float64 `json:"value"`               // the median over repetitions, in Unit
	Unit      string  `json:"unit"`
	// Timing summarises the repetitions in milliseconds.
	Timing Summary `json:"timing"`
	// WallMs is how long the probe took on the host's clock, set-up
	// included: what it adds to bench's running time.
	WallMs     float64     `json:"wall_ms,omitempty"`
	Notes      i18n.Text   `json:"notes,omitempty"`
	Error      string      `json:"error,omitempty"`
	Contention *Contention `json:"contention,omitempty"`
	Soak       *Soak       `json:"soak,omitempty"`
}

// Results is what one backend measured on one device.
type Results struct {
	Backend   string `json:"backend"` // cuda, torch or cpu
	Index     int    `json:"index"`   // device index (NVML order)
	Available bool   `json:"available"`
	Error     string `json:"error,omitempty"` // why the backend could not run
	Device    string `json:"device,omitempty"`
	// BusID is the device's PCI address as the backend reports it
	// ("0000:3B:00.0"), by which bench matches it to NVML's device when
	// CUDA_VISIBLE_DEVICES renumbers the devices CUDA sees.
	BusID string `json:"bus_id,omitempty"`
	// CPU is true for the cpu backend: its figures are the host's and are
	// never compared with GPU datasheets.
	CPU     bool     `json:"cpu,omitempty"`
	Driver  string   `json:"driver,omitempty"`
	Results []Result `json:"results"`
}

// Options tune a probe run.
type Options struct {
	Device int
	// Full runs longer repetitions; quick mode keeps the whole bench
	// under 15 s.
	Full bool
	// Sustained is how long the sustained probe launches (bench's
	// --duration); zero means 2 s, or 10 s in full mode.
	Sustained time.Duration
	// Probes limits the run to these probe names; empty runs them all.
	Probes []string
	// Memtest runs the memory test (bench --memtest) after the residue
	// check, which then reads all of the free memory, not a sample.
	Memtest bool
}

// Wants reports whether the options ask for probe.
func (o Options) Wants(probe string) bool {
	return len(o.Probes) == 0 || slices.Contains(o.Probes, probe)
}

// AllProbes lists every probe name, in the order the cuda backend runs them.
func AllProbes() []string {
	// The residue probe comes first: memory this process has already
	// written and freed would read as residue of its own.
	return []string{ProbeResidue, ProbeFP32, ProbeBF16, ProbeFP16, ProbeTF32, ProbeFP8, ProbeGEMMFP32, ProbeGEMMTF32, ProbeGEMMBF16,
		ProbeCopy, ProbeDtoD, ProbeH2D, ProbeD2H, ProbeSustain, ProbeAlloc}
}

// Backend measures one device.
type Backend interface {
	Name() string
	Run(ctx context.Context, opt Options) Results
}

// Find returns the result of a probe, or nil.
func (r *Results) Find(probe string) *Result {
	for i := range r.Results {
		if r.Results[i].Probe == probe {
			return &r.Results[i]
		}
	}
	return nil
}

// SameBusID reports whether two PCI addresses name one device. NVML writes
// "00000000:3B:00.0" (a 32-bit domain), CUDA "0000:3b:00.0"; both are
// domain:bus:device.function in hex.
func SameBusID(a, b string) bool {
	pa, ok1 := parseBusID(a)
	pb, ok2 := parseBusID(b)
	return ok1 && ok2 && pa == pb
}

func parseBusID(s string) ([4]uint64, bool) {
	var out [4]uint64
	s = strings.TrimSpace(s)
	dom, rest, ok1 := strings.Cut(s, ":")
	bus, rest, ok2 := strings.Cut(rest, ":")
	dev, fn, ok3 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || !ok3 {
		return out, false
	}
	for i, part := range []string{dom, bus, dev, fn} {
		v, err := strconv.ParseUint(part, 16, 32)
		if err != nil {
			return out, false
		}
		out[i] = v
	}
	return out, true
}
