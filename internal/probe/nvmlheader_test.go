package probe

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/gpurent/gpurent/internal/dl/dltest"
)

// nvmlChecks lists what the binding mirrors from nvml.h: struct sizes and
// the offsets it reads, the version word, buffer sizes, and every enum
// value and flag it passes or decodes.
func nvmlChecks() map[string]int64 {
	c := map[string]int64{
		"sizeof(nvmlPciInfo_t)":                   int64(unsafe.Sizeof(nvmlPciInfo{})),
		"offsetof(nvmlPciInfo_t, pciDeviceId)":    int64(unsafe.Offsetof(nvmlPciInfo{}.PciDeviceID)),
		"offsetof(nvmlPciInfo_t, pciSubSystemId)": int64(unsafe.Offsetof(nvmlPciInfo{}.PciSubSystemID)),
		"offsetof(nvmlPciInfo_t, busId)":          int64(unsafe.Offsetof(nvmlPciInfo{}.BusID)),
		"sizeof(nvmlMemory_v2_t)":                 int64(unsafe.Sizeof(nvmlMemoryV2{})),
		"offsetof(nvmlMemory_v2_t, total)":        int64(unsafe.Offsetof(nvmlMemoryV2{}.Total)),
		"offsetof(nvmlMemory_v2_t, reserved)":     int64(unsafe.Offsetof(nvmlMemoryV2{}.Reserved)),
		"offsetof(nvmlMemory_v2_t, free)":         int64(unsafe.Offsetof(nvmlMemoryV2{}.Free)),
		"offsetof(nvmlMemory_v2_t, used)":         int64(unsafe.Offsetof(nvmlMemoryV2{}.Used)),
		"nvmlMemory_v2":                           nvmlMemoryV2Version,
		"sizeof(nvmlMemory_t)":                    int64(unsafe.Sizeof(nvmlMemoryV1{})),
		"offsetof(nvmlMemory_t, free)":            int64(unsafe.Offsetof(nvmlMemoryV1{}.Free)),
		"offsetof(nvmlMemory_t, used)":            int64(unsafe.Offsetof(nvmlMemoryV1{}.Used)),
		"sizeof(nvmlUtilization_t)":               int64(unsafe.Sizeof(nvmlUtilization{})),
		"offsetof(nvmlUtilization_t, memory)":     int64(unsafe.Offsetof(nvmlUtilization{}.Memory)),
		"sizeof(nvmlSample_t)":                    int64(unsafe.Sizeof(nvmlSample{})),
		"offsetof(nvmlSample_t, sampleValue)":     int64(unsafe.Offsetof(nvmlSample{}.Value)),
		// processes() reads pid at 0 and usedGpuMemory at 8 with a stride of 16 or 24.
		"sizeof(nvmlProcessInfo_v1_t)":                              16,
		"sizeof(nvmlProcessInfo_v2_t)":                              24,
		"offsetof(nvmlProcessInfo_v2_t, usedGpuMemory)":             8,
		"NVML_DEVICE_NAME_V2_BUFFER_SIZE":                           nvmlNameBuffer,
		"NVML_DEVICE_UUID_V2_BUFFER_SIZE":                           nvmlUUIDBuffer,
		"NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE":                    nvmlVersionBuffer,
		"NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE":                      nvmlVersionBuffer,
		"NVML_NVLINK_MAX_LINKS":                                     nvmlNVLinkMaxLinks,
		"NVML_GPU_UTILIZATION_SAMPLES":                              nvmlGPUUtilSamples,
		"NVML_CLOCK_GRAPHICS":                                       nvmlClockGraphicsType,
		"NVML_CLOCK_SM":                                             nvmlClockSMType,
		"NVML_CLOCK_MEM":                                            nvmlClockMemType,
		"NVML_FEATURE_ENABLED":                                      nvmlEnabled,
		"NVML_DEVICE_MIG_ENABLE":                                    nvmlEnabled,
		"NVML_TEMPERATURE_GPU":                                      nvmlTemperatureGPU,
		"NVML_MEMORY_ERROR_TYPE_CORRECTED":                          nvmlErrCorrected,
		"NVML_MEMORY_ERROR_TYPE_UNCORRECTED":                        nvmlErrUncorrected,
		"NVML_VOLATILE_ECC":                                         nvmlVolatileECC,
		"NVML_AGGREGATE_ECC":                                        nvmlAggregateECC,
		"NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS": nvmlRetiredMultipleSBE,
		"NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR":           nvmlRetiredDBE,
		"NVML_SUCCESS":                                              nvmlSuccess,
		"sizeof(nvmlEventData_t)":                                   int64(unsafe.Sizeof(nvmlEventData{})),
		"offsetof(nvmlEventData_t, eventType)":                      int64(unsafe.Offsetof(nvmlEventData{}.EventType)),
		"offsetof(nvmlEventData_t, eventData)":                      int64(unsafe.Offsetof(nvmlEventData{}.EventData)),
		"offsetof(nvmlEventData_t, gpuInstanceId)":                  int64(unsafe.Offsetof(nvmlEventData{}.GPUInstanceID)),
		"offsetof(nvmlEventData_t, computeInstanceId)":              int64(unsafe.Offsetof(nvmlEventData{}.ComputeInstanceID)),
		"nvmlEventTypeXidCriticalError":                             nvmlEventTypeXidCritical,
		"sizeof(nvmlGpuFabricInfo_t)":                               int64(unsafe.Sizeof(nvmlGpuFabricInfoV1{})),
		"offsetof(nvmlGpuFabricInfo_t, status)":                     int64(unsafe.Offsetof(nvmlGpuFabricInfoV1{}.Status)),
		"offsetof(nvmlGpuFabricInfo_t, state)":                      int64(unsafe.Offsetof(nvmlGpuFabricInfoV1{}.State)),
		"sizeof(nvmlGpuFabricInfo_v2_t)":                            int64(unsafe.Sizeof(nvmlGpuFabricInfoV2{})),
		"offsetof(nvmlGpuFabricInfo_v2_t, status)":                  int64(unsafe.Offsetof(nvmlGpuFabricInfoV2{}.Status)),
		"offsetof(nvmlGpuFabricInfo_v2_t, state)":                   int64(unsafe.Offsetof(nvmlGpuFabricInfoV2{}.State)),
		"offsetof(nvmlGpuFabricInfo_v2_t, healthMask)":              int64(unsafe.Offsetof(nvmlGpuFabricInfoV2{}.HealthMask)),
		"nvmlGpuFabricInfo_v2":                                      nvmlFabricInfoV2Version,
		"NVML_NVLINK_ERROR_DL_REPLAY":                               nvmlErrCounterReplay,
		"NVML_NVLINK_ERROR_DL_RECOVERY":                             nvmlErrCounterRecover,
		"NVML_NVLINK_ERROR_DL_CRC_FLIT":                             nvmlErrCounterCRCFlit,
		"NVML_NVLINK_ERROR_DL_CRC_DATA":                             nvmlErrCounterCRCData,
		"NVML_P2P_CAPS_INDEX_READ":                                  nvmlP2PRead,
		"NVML_P2P_CAPS_INDEX_WRITE":                                 nvmlP2PWrite,
		"NVML_P2P_CAPS_INDEX_NVLINK":                                nvmlP2PNVLink,
		"NVML_P2P_CAPS_INDEX_ATOMICS":                               nvmlP2PAtomics,
	}
	// Decoding tables, from the names gpurent gives back to the header's.
	for code := int32(1); code <= 1000; code++ {
		if n := nvmlErrorName(code); !strings.HasPrefix(n, "error ") {
			c["NVML_ERROR_"+n] = int64(code)
		}
	}
	c["NVML_ERROR_TIMEOUT"] = nvmlErrTimeout // the event wait's, besides its name above
	for v := uint32(0); v < 4; v++ {
		c["NVML_GPU_VIRTUALIZATION_MODE_"+strings.ToUpper(virtualizationName(v))] = int64(v)
		c["NVML_COMPUTEMODE_"+strings.ToUpper(computeModeName(v))] = int64(v)
	}
	c["NVML_GPU_VIRTUALIZATION_MODE_"+strings.ToUpper(virtualizationName(4))] = 4
	for v := uint32(0); v <= 60; v += 10 {
		if n := topologyLevel(v); !strings.HasPrefix(n, "level") {
			c["NVML_TOPOLOGY_"+strings.ToUpper(n)] = int64(v)
		}
	}
	for v, name := range map[uint32]string{0: "OK", 1: "CHIPSET_NOT_SUPPORTED", 2: "GPU_NOT_SUPPORTED",
		3: "IOH_TOPOLOGY_NOT_SUPPORTED", 4: "DISABLED_BY_REGKEY", 5: "NOT_SUPPORTED", 6: "UNKNOWN"} {
		if strings.ReplaceAll(strings.ToUpper(p2pStatusName(v)), " ", "_") != name {
			c["p2pStatusName mismatch "+name] = -1
		}
		c["NVML_P2P_STATUS_"+name] = int64(v)
	}
	for v := uint32(1); v < 16; v++ {
		if n := nvlinkVersionName(v); !strings.HasPrefix(n, "version") {
			c["NVML_NVLINK_VERSION_"+strings.ReplaceAll(n, ".", "_")] = int64(v)
		}
	}
	for _, v := range []uint32{0, 1, 2, 0xff} {
		c["NVML_NVLINK_DEVICE_TYPE_"+strings.ToUpper(remoteTypeName(v))] = int64(v)
	}
	for v := uint8(0); v < 8; v++ {
		if n := fabricStateName(v); !strings.HasPrefix(n, "state") {
			c["NVML_GPU_FABRIC_STATE_"+strings.ToUpper(n)] = int64(v)
		}
	}
	for a := uint32(0); a < 32; a++ {
		if n := archName(a); !strings.HasPrefix(n, "unknown") {
			c["NVML_DEVICE_ARCH_"+strings.ToUpper(n)] = int64(a)
		}
	}
	for bit := uint64(1); bit < 1<<16; bit <<= 1 {
		if ns := ClockEventNames(bit); len(ns) == 1 {
			c["nvmlClocksThrottleReason"+camel(ns[0])] = int64(bit)
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
	dir := dltest.NVIDIA(t, "GPURENT_NVIDIA_INCLUDE")
	ev := dltest.CompareC(t, dir, "nvml.h", nvmlChecks())
	if len(ev.Values) < 60 {
		t.Errorf("only %d values compiled", len(ev.Values))
	}
	t.Logf("%d values compared with %s/nvml.h; not in this header: %v", len(ev.Values), dir, ev.Absent)
}
