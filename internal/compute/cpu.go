package compute

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
)

// CPU is the host backend: it runs the same pipeline without a GPU. Its
// figures are the host's, labelled CPU, and never judged against GPU
// datasheets.
type CPU struct{}

// Name is "cpu".
func (CPU) Name() string { return "cpu" }

// Run measures an FP32 matrix multiply and a memory copy on the host.
func (CPU) Run(ctx context.Context, opt Options) Results {
	res := Results{Backend: "cpu", Available: true, CPU: true, Device: fmt.Sprintf("host, %d threads", runtime.GOMAXPROCS(0))}
	reps := 3
	if opt.Full {
		reps = 5
	}
	if opt.Wants(ProbeGEMMFP32) {
		res.Results = append(res.Results, cpuGEMM(ctx, 384, reps))
	}
	if opt.Wants(ProbeCopy) {
		res.Results = append(res.Results, cpuCopy(ctx, 128<<20, reps))
	}
	return res
}

// cpuGEMM multiplies two n×n FP32 matrices with an i-k-j loop split by
// rows over all threads: 2n³ FLOPs. It is plain Go, not BLAS: a floor for
// the host's arithmetic, not its peak.
func cpuGEMM(ctx context.Context, n, reps int) Result {
	r := Result{Probe: ProbeGEMMFP32, Precision: "fp32", Unit: "GFLOPS", Notes: i18n.Textf("pure Go %d³ FP32 GEMM (i-k-j), not BLAS", n)}
	a, b, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
	for i := range a {
		a[i], b[i] = float32(i%7)*0.5, float32(i%5)*0.25
	}
	workers := runtime.GOMAXPROCS(0)
	once := func() {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += workers {
					row := c[i*n : (i+1)*n]
					clear(row)
					for k := 0; k < n; k++ {
						aik := a[i*n+k]
						bk := b[k*n : (k+1)*n]
						for j := range row {
							row[j] += aik * bk[j]
						}
					}
				}
			}()
		}
		wg.Wait()
	}
	once() // warm-up
	var ms, tf []float64
	for range reps {
		if ctx.Err() != nil {
			break
		}
		start := time.Now()
		once()
		t := time.Since(start).Seconds()
		ms = append(ms, t*1e3)
		tf = append(tf, 2*float64(n)*float64(n)*float64(n)/t/1e9)
	}
	r.Timing, r.Value = Summarize(ms), Summarize(tf).Median
	return r
}

// cpuCopy copies a buffer of n bytes: bytes counted read + written.
func cpuCopy(ctx context.Context, n, reps int) Result {
	r := Result{Probe: ProbeCopy, Unit: "GB/s", Notes: i18n.Textf("copy() of %d MiB; bytes counted read + written", n>>20)}
	src, dst := make([]byte, n), make([]byte, n)
	for i := range src {
		src[i] = byte(i)
	}
	copy(dst, src) // warm-up, and faults the pages in
	var ms, gbs []float64
	for range reps {
		if ctx.Err() != nil {
			break
		}
		start := time.Now()
		copy(dst, src)
		t := time.Since(start).Seconds()
		ms = append(ms, t*1e3)
		gbs = append(gbs, 2*float64(n)/t/1e9)
	}
	r.Timing, r.Value = Summarize(ms), Summarize(gbs).Median
	return r
}
