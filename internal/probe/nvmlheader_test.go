package probe

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/gpurent/gpurent/internal/dl/dltest"
)

// abiCheck is one C expression over nvml.h and the value gpurent's Go
// binding holds for it.
type abiCheck struct {
	expr string
	want int64
}

// nvmlChecks lists what the binding mirrors from nvml.h: struct sizes and
// the offsets it reads, the version word, buffer sizes, and every enum
// value and flag it passes or decodes.
func nvmlChecks() []abiCheck {
	c := []abiCheck{
		{"sizeof(nvmlPciInfo_t)", int64(unsafe.Sizeof(nvmlPciInfo{}))},
		{"offsetof(nvmlPciInfo_t, pciDeviceId)", int64(unsafe.Offsetof(nvmlPciInfo{}.PciDeviceID))},
		{"offsetof(nvmlPciInfo_t, pciSubSystemId)", int64(unsafe.Offsetof(nvmlPciInfo{}.PciSubSystemID))},
		{"offsetof(nvmlPciInfo_t, busId)", int64(unsafe.Offsetof(nvmlPciInfo{}.BusID))},
		{"sizeof(nvmlMemory_v2_t)", int64(unsafe.Sizeof(nvmlMemoryV2{}))},
		{"offsetof(nvmlMemory_v2_t, total)", int64(unsafe.Offsetof(nvmlMemoryV2{}.Total))},
		{"offsetof(nvmlMemory_v2_t, reserved)", int64(unsafe.Offsetof(nvmlMemoryV2{}.Reserved))},
		{"offsetof(nvmlMemory_v2_t, free)", int64(unsafe.Offsetof(nvmlMemoryV2{}.Free))},
		{"offsetof(nvmlMemory_v2_t, used)", int64(unsafe.Offsetof(nvmlMemoryV2{}.Used))},
		{"nvmlMemory_v2", nvmlMemoryV2Version},
		{"sizeof(nvmlMemory_t)", int64(unsafe.Sizeof(nvmlMemoryV1{}))},
		{"offsetof(nvmlMemory_t, free)", int64(unsafe.Offsetof(nvmlMemoryV1{}.Free))},
		{"offsetof(nvmlMemory_t, used)", int64(unsafe.Offsetof(nvmlMemoryV1{}.Used))},
		{"sizeof(nvmlUtilization_t)", int64(unsafe.Sizeof(nvmlUtilization{}))},
		{"offsetof(nvmlUtilization_t, memory)", int64(unsafe.Offsetof(nvmlUtilization{}.Memory))},
		{"sizeof(nvmlSample_t)", int64(unsafe.Sizeof(nvmlSample{}))},
		{"offsetof(nvmlSample_t, sampleValue)", int64(unsafe.Offsetof(nvmlSample{}.Value))},
		// processes() reads pid at 0 and usedGpuMemory at 8 with a stride of 16 or 24.
		{"sizeof(nvmlProcessInfo_v1_t)", 16},
		{"sizeof(nvmlProcessInfo_v2_t)", 24},
		{"offsetof(nvmlProcessInfo_v2_t, usedGpuMemory)", 8},
		{"NVML_DEVICE_NAME_V2_BUFFER_SIZE", nvmlNameBuffer},
		{"NVML_DEVICE_UUID_V2_BUFFER_SIZE", nvmlUUIDBuffer},
		{"NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE", nvmlVersionBuffer},
		{"NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE", nvmlVersionBuffer},
		{"NVML_NVLINK_MAX_LINKS", nvmlNVLinkMaxLinks},
		{"NVML_GPU_UTILIZATION_SAMPLES", nvmlGPUUtilSamples},
		{"NVML_CLOCK_GRAPHICS", nvmlClockGraphicsType},
		{"NVML_CLOCK_SM", nvmlClockSMType},
		{"NVML_CLOCK_MEM", nvmlClockMemType},
		{"NVML_FEATURE_ENABLED", nvmlEnabled},
		{"NVML_DEVICE_MIG_ENABLE", nvmlEnabled},
		{"NVML_TEMPERATURE_GPU", nvmlTemperatureGPU},
		{"NVML_MEMORY_ERROR_TYPE_CORRECTED", nvmlErrCorrected},
		{"NVML_MEMORY_ERROR_TYPE_UNCORRECTED", nvmlErrUncorrected},
		{"NVML_VOLATILE_ECC", nvmlVolatileECC},
		{"NVML_AGGREGATE_ECC", nvmlAggregateECC},
		{"NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS", nvmlRetiredMultipleSBE},
		{"NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR", nvmlRetiredDBE},
		{"NVML_SUCCESS", nvmlSuccess},
	}
	// Decoding tables, from the names gpurent gives back to the header's.
	for code := int32(1); code <= 1000; code++ {
		if n := nvmlErrorName(code); !strings.HasPrefix(n, "error ") {
			c = append(c, abiCheck{"NVML_ERROR_" + n, int64(code)})
		}
	}
	for v := uint32(0); v < 4; v++ {
		c = append(c, abiCheck{"NVML_GPU_VIRTUALIZATION_MODE_" + strings.ToUpper(virtualizationName(v)), int64(v)})
		c = append(c, abiCheck{"NVML_COMPUTEMODE_" + strings.ToUpper(computeModeName(v)), int64(v)})
	}
	c = append(c, abiCheck{"NVML_GPU_VIRTUALIZATION_MODE_" + strings.ToUpper(virtualizationName(4)), 4})
	for a := uint32(0); a < 32; a++ {
		if n := archName(a); !strings.HasPrefix(n, "unknown") {
			c = append(c, abiCheck{"NVML_DEVICE_ARCH_" + strings.ToUpper(n), int64(a)})
		}
	}
	for bit := uint64(1); bit < 1<<16; bit <<= 1 {
		if ns := ClockEventNames(bit); len(ns) == 1 {
			c = append(c, abiCheck{"nvmlClocksThrottleReason" + camel(ns[0]), int64(bit)})
		}
	}
	return c
}

// camel turns gpu_idle into GpuIdle.
func camel(s string) string {
	parts := strings.Split(s, "_")
	for i, p := range parts {
		parts[i] = strings.ToUpper(p[:1]) + p[1:]
	}
	return strings.Join(parts, "")
}

// The NVML binding agrees with NVIDIA's nvml.h (12.4, Debian's
// libnvidia-ml-dev, unpacked by scripts/nvidia-debs.sh): every struct
// size and offset, version word, buffer size, enum value and flag above
// is compiled from the header with the C compiler and compared with the
// Go side. A name the header does not have (newer than 12.4: Blackwell's
// architecture code, say) is listed, not compared.
func TestNVMLMatchesNVIDIAHeader(t *testing.T) {
	header := os.Getenv("GPURENT_NVML_HEADER")
	if header == "" {
		t.Skip("GPURENT_NVML_HEADER is not set: scripts/test.sh sets it (scripts/nvidia-debs.sh)")
	}
	text, err := os.ReadFile(header)
	if err != nil {
		t.Fatal(err)
	}
	var checks []abiCheck
	var absent []string
	ident := regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	for _, c := range nvmlChecks() {
		// Every identifier of the expression but C's own must be in the header.
		missing := ""
		for _, id := range ident.FindAllString(c.expr, -1) {
			if id != "sizeof" && id != "offsetof" && !regexp.MustCompile(`\b`+id+`\b`).Match(text) {
				missing = id
			}
		}
		if missing != "" {
			absent = append(absent, c.expr)
			continue
		}
		checks = append(checks, c)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "abi.c")
	var b strings.Builder
	b.WriteString("#include <stdio.h>\n#include <stddef.h>\n#include \"nvml.h\"\nint main(void) {\n")
	for i, c := range checks {
		fmt.Fprintf(&b, "  printf(\"%d %%lld\\n\", (long long)(%s));\n", i, c.expr)
	}
	b.WriteString("  return 0;\n}\n")
	if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cc := dltest.Compiler(t, "CC", "cc", "gcc", "clang", "clang-19")
	bin := filepath.Join(dir, "abi")
	if out, err := exec.Command(cc, "-I", filepath.Dir(header), "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != 2*len(checks) {
		t.Fatalf("the C program printed %d fields for %d checks", len(lines), len(checks))
	}
	for i := 0; i < len(lines); i += 2 {
		k, _ := strconv.Atoi(lines[i])
		got, err := strconv.ParseInt(lines[i+1], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if c := checks[k]; got != c.want {
			t.Errorf("%s is %d in nvml.h, %d in gpurent", c.expr, got, c.want)
		}
	}
	if len(checks) < 60 {
		t.Errorf("only %d checks compiled", len(checks))
	}
	slices.Sort(absent)
	t.Logf("%d values compared with %s; not in this header: %v", len(checks), header, absent)
}
