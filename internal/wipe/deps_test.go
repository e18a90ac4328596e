package wipe

import (
	"os/exec"
	"strings"
	"testing"
)

// wipe runs on the machine being released and deletes what its plan
// lists: it needs to know the home files (homefiles) and the store's
// runs, never the GPU code (issue #38: it pulled in CUDA, NVML and bench
// through audit, which it used for the lists of home files).
func TestImportsNoGPUCode(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command on PATH to list the imports with: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"/internal/compute", "/internal/probe", "/internal/bench", "/internal/audit", "/internal/gpuwatch"} {
			if strings.HasSuffix(dep, "gpurent"+banned) {
				t.Errorf("wipe imports %s", dep)
			}
		}
	}
}
