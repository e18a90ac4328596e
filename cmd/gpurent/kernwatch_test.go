//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/dl/dltest"
	"github.com/gpurent/gpurent/internal/mounts"
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

// With --metrics, what the kernel logged while gpurent ran is counted, by
// Xid code and by fault kind and level; with no log to read, nothing is
// served (a 0 would claim a clean machine).
func TestKernelMetrics(t *testing.T) {
	kmsg := filepath.Join(t.TempDir(), "kmsg")
	if err := os.WriteFile(kmsg, []byte("6,0,0,-;Linux version 6.8.0\n4,1,1,-;NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w := startKernWatch(context.Background(), kmsg, "", "", func(string, ...any) {}, nil)
	defer w.stop()
	f, _ := os.OpenFile(kmsg, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("4,2,2,-;NVRM: Xid (PCI:0000:18:00): 13, pid=1, name=x, Graphics Exception\n4,3,3,-;NVRM: Xid (PCI:0000:18:00): 13, pid=1, name=x, Graphics Exception\n" +
		"3,4,4,-;I/O error, dev sda, sector 8 op 0x1:(WRITE) flags 0x0 phys_seg 1 prio class 2\n" +
		"4,5,5,-;pcieport 0000:00:01.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)\n")
	f.Close()
	w.causes() // reads what was logged
	var b strings.Builder
	w.WriteTo(&b)
	for _, want := range []string{
		"gpurent_kernel_xids_total{code=\"13\"} 2\n",
		"gpurent_kernel_faults_total{kind=\"disk\",level=\"error\"} 1\n",
		"gpurent_kernel_faults_total{kind=\"pcie\",level=\"corrected\"} 1\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), `code="79"`) {
		t.Errorf("an Xid from before gpurent started:\n%s", b.String())
	}
	// A program's Xids for days with no failure: the newest 100 wait.
	f, _ = os.OpenFile(kmsg, os.O_APPEND|os.O_WRONLY, 0)
	for i := range 150 {
		fmt.Fprintf(f, "4,%d,%d,-;NVRM: Xid (PCI:0000:18:00): 13, pid=%d, name=x, Graphics Exception\n", 6+i, 6+i, 1000+i)
	}
	f.Close()
	w.mu.Lock()
	w.poll(time.Now())
	if n, last := len(w.unexplained.Xids), w.unexplained.Xids[len(w.unexplained.Xids)-1].PID; n != maxUnexplained || last != 1149 {
		t.Errorf("%d Xids wait, the newest of pid %d", n, last)
	}
	w.mu.Unlock()
	none := startKernWatch(context.Background(), filepath.Join(t.TempDir(), "none"), filepath.Join(t.TempDir(), "libnvidia-ml.so.1"), "", func(string, ...any) {}, nil)
	defer none.stop()
	b.Reset()
	if none.WriteTo(&b); b.Len() != 0 {
		t.Errorf("metrics without a log:\n%s", b.String())
	}
}

// A failing disk that holds --ckpt-dir is named as that one.
func TestKernelWatchNamesTheCheckpointDisk(t *testing.T) {
	dir := t.TempDir()
	m, ok := mounts.Read("/").Find(dir)
	dev, onDisk := strings.CutPrefix(m.Source, "/dev/")
	if !ok || !onDisk {
		t.Skipf("%s is not on a block device here (%q)", dir, m.Source)
	}
	kmsg := filepath.Join(t.TempDir(), "kmsg")
	os.WriteFile(kmsg, []byte("6,0,0,-;Linux version 6.8.0\n"), 0o600)
	var mu sync.Mutex
	var said []string
	w := startKernWatch(context.Background(), kmsg, "", dir, func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		said = append(said, fmt.Sprintf(f, a...))
	}, nil)
	defer w.stop()
	f, _ := os.OpenFile(kmsg, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "3,1,1,-;I/O error, dev %s, sector 8 op 0x1:(WRITE) flags 0x0 phys_seg 1 prio class 2\n3,2,2,-;I/O error, dev other9, sector 8 op 0x1:(WRITE) flags 0x0 phys_seg 1 prio class 2\n", dev)
	f.Close()
	causes := w.causes()
	mu.Lock()
	defer mu.Unlock()
	if len(causes) != 2 || !strings.HasPrefix(causes[0], "the kernel reported 1 disk I/O error on "+dev+", the disk of --ckpt-dir (") ||
		strings.Contains(causes[1], "--ckpt-dir") || len(said) != 2 || !strings.Contains(said[0], dev+", the disk of --ckpt-dir") {
		t.Errorf("causes %q\nsaid %q", causes, said)
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

// With the Xids from NVML's events, --metrics counts them by code, and
// serves no hardware-error counts: those only the kernel log has.
func TestKernelMetricsNVMLSimulated(t *testing.T) {
	nvml := dltest.BuildC(t, "../../internal/probe/testdata/fakenvml.c", "libnvidia-ml.so.1")
	t.Setenv("FAKENVML", "1")
	t.Setenv("FAKENVML_XIDS", "13:0:0,13:0:0,79:0:0")
	var mu sync.Mutex
	var said []string
	w := startKernWatch(context.Background(), filepath.Join(t.TempDir(), "none"), nvml, "", func(f string, a ...any) {
		mu.Lock()
		said = append(said, fmt.Sprintf(f, a...))
		mu.Unlock()
	}, nil)
	defer w.stop()
	causes := w.causes() // takes what NVML holds
	var b strings.Builder
	w.WriteTo(&b)
	for _, want := range []string{"gpurent_kernel_xids_total{code=\"13\"} 2\n", "gpurent_kernel_xids_total{code=\"79\"} 1\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "gpurent_kernel_faults_total") {
		t.Errorf("hardware-error counts without the kernel log:\n%s", b.String())
	}
	if len(causes) != 2 || !strings.HasPrefix(causes[0], "the NVIDIA driver reported Xid 79 on the GPU at PCI 0000:3b:00 (") {
		t.Errorf("causes %q", causes)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(said) != 1 || !strings.HasPrefix(said[0], "warning: the NVIDIA driver reported Xid 79") {
		t.Errorf("said %q", said)
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
