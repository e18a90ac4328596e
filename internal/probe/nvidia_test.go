package probe

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/dl"
	"github.com/gpurent/gpurent/internal/dl/dltest"
)

// nvmlFallbacks names, for each NVML function a driver may lack, what the
// binding does instead: another function, or "" where the reading is
// optional and reported as unavailable. (The process lists' _v3 and _v2
// names are built at run time and tried in turn down to the plain name,
// which is in the source and so checked.)
var nvmlFallbacks = map[string]string{
	"nvmlDeviceGetCurrentClocksEventReasons": "nvmlDeviceGetCurrentClocksThrottleReasons", // renamed in 535
	"nvmlDeviceGetMemoryInfo_v2":             "nvmlDeviceGetMemoryInfo",
	"nvmlDeviceGetGpuMaxPcieLinkGeneration":  "",
	"nvmlEventSetWait_v2":                    "nvmlEventSetWait",
	"nvmlDeviceGetGpuFabricInfoV":            "", // 535 has only the first form, 470 neither
	"nvmlDeviceGetGpuFabricInfo":             "",
}

// A real NVML (drivers 550, 535 and Tesla 470 from Debian's non-free archive,
// unpacked by scripts/nvidia-debs.sh) exports every function gpurent calls
// or the fallback it uses, and with no kernel driver OpenNVML says there is
// no GPU and why, without a panic.
func TestRealNVMLWithoutGPU(t *testing.T) {
	syms := dltest.BoundSymbols(t, `"(nvml[A-Z][A-Za-z0-9]*(?:_v[0-9])?)"`, 20)
	for _, dir := range dltest.RealDrivers(t) {
		path := filepath.Join(dir, "libnvidia-ml.so.1")
		t.Run(filepath.Base(dir), func(t *testing.T) {
			lib, err := dl.Open(path)
			if err != nil {
				t.Fatalf("the driver library does not load: %v", err)
			}
			defer lib.Close()
			var missing []string
			for _, s := range syms {
				if lib.Has(s) {
					continue
				}
				missing = append(missing, s)
				fb, ok := nvmlFallbacks[s]
				switch {
				case !ok:
					t.Errorf("%s is not exported by %s and the binding has no fallback for it", s, path)
				case fb != "" && !lib.Has(fb):
					t.Errorf("neither %s nor its fallback %s is exported by %s", s, fb, path)
				}
			}
			t.Logf("%s: %d of %d functions exported; missing, each with its fallback: %v", path, len(syms)-len(missing), len(syms), missing)

			_, err = OpenNVML(path)
			if !IsNoGPU(err) || !strings.HasPrefix(err.Error(), "no NVIDIA GPU was found: NVML failed to initialise: ") {
				t.Errorf("OpenNVML with no GPU: %v", err)
			}
			f := GPU(t.Context(), GPUOptions{Library: path})
			if f.Available || !strings.Contains(f.Error, "NVML failed to initialise") {
				t.Errorf("GPU with no GPU: available %v, %q", f.Available, f.Error)
			}
			t.Logf("without a GPU: %v", err)
		})
	}
}
