//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/dl/dltest"
)

// While gpurent run runs, an Xid the NVIDIA driver logs (here into a file
// of kernel log records, as /dev/kmsg gives them) is said at once when it
// is a fault of the hardware, notified (gpu_xid), and named as the cause
// of the failure that follows; so is a hardware error the kernel reports
// (host_fault), once however many lines it logs; what the log held before
// the run is not.
func TestRunNamesKernelFaults(t *testing.T) {
	dir := t.TempDir()
	kmsg := filepath.Join(dir, "kmsg")
	old := "6,0,0,-;Linux version 6.8.0\n4,1,5000000,-;NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.\n"
	if err := os.WriteFile(kmsg, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GPURENT_KMSG", kmsg)
	_, hookFile, events := webhook(t, dir)
	// The command logs an uncorrectable memory error and a program's MMU
	// fault, waits for the watch to read them, and fails.
	script := `printf '4,2,9000000,-;NVRM: Xid (PCI:0000:18:00): 48, pid=5, name=python, An uncorrectable double bit error (DBE) has been detected\n' >> "$0"
sleep 2.2
printf '4,2,9000000,-;NVRM: Xid (PCI:0000:18:00): 48, pid=5, name=python, An uncorrectable double bit error (DBE) has been detected\n' >> "$0"
printf '4,3,9000100,-;NVRM: Xid (PCI:0000:18:00): 31, pid=5, name=python, MMU Fault\n' >> "$0"
for s in 8 16; do printf '3,4,9000200,-;I/O error, dev nvme0n1, sector %s op 0x1:(WRITE) flags 0x0 phys_seg 1 prio class 2\n' $s >> "$0"; sleep 2.2; done
sleep 1; exit 1`
	code, _, stderr := gpurent(t, "run", "--ckpt-dir", filepath.Join(dir, "ck"), "--preemption", "none", "--no-status", "--max-restarts", "0",
		"--notify", hookFile, "--", "sh", "-c", script, kmsg)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, stderr)
	}
	dbe := "the NVIDIA driver reported Xid 48 on the GPU at PCI 0000:18:00, pid 5 (python): \"An uncorrectable double bit error (DBE) has been detected\""
	if !strings.Contains(stderr, "gpurent: warning: "+dbe+": an uncorrectable (double-bit) GPU memory error") || strings.Count(stderr, "warning: the NVIDIA driver reported") != 1 {
		t.Errorf("the Xid 48 not said once as it came:\n%s", stderr)
	}
	if strings.Contains(stderr, "warning: the NVIDIA driver reported Xid 31") {
		t.Errorf("a program's own fault said as a hardware warning:\n%s", stderr)
	}
	if strings.Contains(stderr, "Xid 79") {
		t.Errorf("an Xid from before the run:\n%s", stderr)
	}
	// The cause, worst first, in the final message.
	i48 := strings.Index(stderr, "used up; "+dbe)
	i31 := strings.Index(stderr, "; the NVIDIA driver reported Xid 31 on the GPU at PCI 0000:18:00, pid 5 (python): \"MMU Fault\" (NVIDIA's catalog: restart the application")
	if i48 < 0 || i31 < i48 {
		t.Errorf("the Xids are not the failure's causes, worst first:\n%s", stderr)
	}
	var kinds []string
	for _, e := range events() {
		kinds = append(kinds, e.Kind)
		if e.Kind == "gpu_xid" && !strings.Contains(e.Text, "Xid 48") {
			t.Errorf("gpu_xid event: %q", e.Text)
		}
	}
	if strings.Join(kinds, " ") != "start gpu_xid host_fault end" {
		t.Errorf("events %v, want start gpu_xid host_fault end", kinds)
	}
	disk := `the kernel reported 1 disk I/O error on nvme0n1 ("I/O error, dev nvme0n1, sector 8 op 0x1:(WRITE) flags 0x0 phys_seg 1 prio class 2"): a disk failed reads or writes`
	if !strings.Contains(stderr, "gpurent: warning: "+disk) || strings.Count(stderr, "warning: the kernel reported") != 1 {
		t.Errorf("the disk errors not said once as they came:\n%s", stderr)
	}
	if !strings.Contains(stderr, `the kernel reported 2 disk I/O errors on nvme0n1 ("I/O error, dev nvme0n1, sector 16`) {
		t.Errorf("the disk errors are not among the causes, counted:\n%s", stderr)
	}
}

// Where the kernel log cannot be read (a container without /dev/kmsg, the
// rule on GPU marketplaces), gpurent run takes the Xids from NVML's events
// (here the simulated NVML's: an uncorrectable memory error on GPU 1, then
// a program's MMU fault on GPU 0): the hardware fault is said at once, the
// program's error is not, and both are named, worst first, as causes of
// the failure that follows.
func TestRunNamesNVMLXidsSimulated(t *testing.T) {
	nvml := dltest.BuildC(t, "../../internal/probe/testdata/fakenvml.c", "libnvidia-ml.so.1")
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "run", "--ckpt-dir", filepath.Join(dir, "ck"), "--preemption", "none", "--no-status",
		"--max-restarts", "0", "--", "sh", "-c", "sleep 2; exit 1")
	cmd.Env = append(os.Environ(), "GPURENT_AS_MAIN=1", "LD_LIBRARY_PATH="+filepath.Dir(nvml), "FAKENVML=2",
		"FAKENVML_XIDS=48:1:300,31:0:400", "GPURENT_KMSG="+filepath.Join(dir, "no-kmsg"))
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("%v, want exit 1\n%s", err, out)
	}
	s := string(out)
	dbe := "the NVIDIA driver reported Xid 48 on the GPU at PCI 0000:5e:00"
	if !strings.Contains(s, "gpurent: warning: "+dbe+": an uncorrectable (double-bit) GPU memory error") || strings.Count(s, "warning: the NVIDIA driver reported") != 1 {
		t.Errorf("the Xid 48 not said once as it came:\n%s", s)
	}
	i48 := strings.Index(s, "used up; "+dbe+" (")
	i31 := strings.Index(s, "; the NVIDIA driver reported Xid 31 on the GPU at PCI 0000:3b:00 (NVIDIA's catalog: restart the application")
	if i48 < 0 || i31 < i48 {
		t.Errorf("the Xids are not the failure's causes, worst first:\n%s", s)
	}
	if strings.Contains(s, "not watched") {
		t.Errorf("said not watched:\n%s", s)
	}
}

// Where neither the kernel log nor NVML's events can be had (here a GPU
// that reports no Xid events, as a vGPU guest's), gpurent run says once
// that GPU faults are not watched, and why for each.
func TestRunSaysXidsAreNotWatchedSimulated(t *testing.T) {
	nvml := dltest.BuildC(t, "../../internal/probe/testdata/fakenvml.c", "libnvidia-ml.so.1")
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "run", "--ckpt-dir", filepath.Join(dir, "ck"), "--preemption", "none", "--no-status", "--", "true")
	cmd.Env = append(os.Environ(), "GPURENT_AS_MAIN=1", "LD_LIBRARY_PATH="+filepath.Dir(nvml), "FAKENVML=1",
		"FAKENVML_NO_XID_EVENTS=1", "GPURENT_KMSG="+filepath.Join(dir, "no-kmsg"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := "gpurent: GPU faults (Xid) are not watched: the kernel log cannot be read: no " + filepath.Join(dir, "no-kmsg") +
		" (a container without it); NVML: no GPU reports Xid events through NVML (GPU 0: no Xid events (supported event types 0x6))\n"
	if strings.Count(string(out), want) != 1 {
		t.Errorf("want once %q in:\n%s", want, out)
	}
}

// bench in a container that cannot read the kernel log fails a GPU whose
// driver reported a hardware Xid through NVML's events while it measured
// (the simulated NVML: an uncorrectable memory error at once), and
// records the events with the facts.
func TestBenchXidEventsSimulated(t *testing.T) {
	nvml := dltest.BuildC(t, "../../internal/probe/testdata/fakenvml.c", "libnvidia-ml.so.1")
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "bench", "--no-history", "--disk-mb", "0", "--duration", "200ms", "--backend", "none",
		"--record", filepath.Join(dir, "facts.json"))
	cmd.Env = append(os.Environ(), "GPURENT_AS_MAIN=1", "LD_LIBRARY_PATH="+filepath.Dir(nvml), "FAKENVML=1",
		"FAKENVML_XIDS=48:0:0", "GPURENT_KMSG="+filepath.Join(dir, "no-kmsg"), "XDG_STATE_HOME="+dir)
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("%v, want exit 3\n%s", err, out)
	}
	if !strings.Contains(string(out), "gpu0.xid") || !strings.Contains(string(out), "1 Xid report from NVML's events while this bench measured") {
		t.Errorf("no gpu0.xid from NVML's events:\n%s", out)
	}
	facts, _ := os.ReadFile(filepath.Join(dir, "facts.json"))
	if !strings.Contains(string(facts), `"xid_events"`) || !strings.Contains(string(facts), `"code": 48`) {
		t.Errorf("facts lack the events:\n%s", facts)
	}
}
