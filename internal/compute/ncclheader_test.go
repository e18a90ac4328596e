package compute

import (
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/gpurent/gpurent/internal/dl/dltest"
)

// ncclChecks lists what the binding mirrors from nccl.h: each result code
// ncclResultName names, the data type and operation it passes, and the
// version word it decodes.
func ncclChecks() map[string]int64 {
	c := map[string]int64{
		"ncclFloat32": ncclFloat32,
		"ncclSum":     ncclSum,
		// ncclVersion reads X*10000+Y*100+Z after 2.8: the header's own
		// macro must agree with the decoding.
		"NCCL_VERSION(2, 22, 3)": 22203,
		"sizeof(ncclComm_t)":     int64(unsafe.Sizeof(uintptr(0))),
	}
	for r := int32(0); ; r++ {
		name := ncclResultName(r)
		if strings.HasPrefix(name, "ncclResult_t") {
			break
		}
		c[name] = int64(r)
	}
	return c
}

// nccl.h (Debian's libnccl-dev 2.22.3) compiled: every result code, type
// and operation gpurent passes or decodes has the header's value. A name
// newer than the header (ncclTimeout) is listed, not compared.
func TestNCCLMatchesNVIDIAHeader(t *testing.T) {
	dir := dltest.NVIDIA(t, "GPURENT_NCCL_INCLUDE")
	cuda := dltest.NVIDIA(t, "GPURENT_NVIDIA_INCLUDE") // cuda_runtime.h, which nccl.h includes
	ev := dltest.CompareC(t, dir+string(os.PathListSeparator)+cuda, "nccl.h", ncclChecks())
	if v := ncclVersion(int32(ev.Values["NCCL_VERSION(2, 22, 3)"])); v != "2.22.3" {
		t.Errorf("the header's version word for 2.22.3 decodes as %s", v)
	}
	if len(ev.Values) < 10 {
		t.Errorf("only %d values compiled: %v", len(ev.Values), ev.Values)
	}
	t.Logf("%d values compared with %s/nccl.h; not in this header: %v", len(ev.Values), dir, ev.Absent)
}
