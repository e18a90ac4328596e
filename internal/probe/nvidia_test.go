package probe

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/dl"
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
}

// A real NVML (drivers 535 and Tesla 470 from Debian's non-free archive,
// unpacked by scripts/nvidia-debs.sh) exports every function gpurent calls
// or the fallback it uses, and with no kernel driver OpenNVML says there is
// no GPU and why, without a panic.
func TestRealNVMLWithoutGPU(t *testing.T) {
	v := os.Getenv("GPURENT_NVIDIA_DRIVERS")
	if v == "" {
		t.Skip("GPURENT_NVIDIA_DRIVERS is not set: scripts/test.sh sets it (scripts/nvidia-debs.sh)")
	}
	syms := nvmlSymbols(t)
	for _, dir := range strings.Split(v, ":") {
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

// nvmlSymbols is every NVML function the package's code names.
func nvmlSymbols(t *testing.T) []string {
	t.Helper()
	re := regexp.MustCompile(`"(nvml[A-Z][A-Za-z0-9]*(?:_v[0-9])?)"`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			if !slices.Contains(out, m[1]) {
				out = append(out, m[1])
			}
		}
	}
	slices.Sort(out)
	if len(out) < 20 {
		t.Fatalf("only %d NVML functions found in the package's source: %v", len(out), out)
	}
	return out
}
