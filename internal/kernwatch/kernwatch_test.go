//go:build unix

package kernwatch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/dl/dltest"
	"github.com/gpurent/gpurent/internal/mounts"
)

// With --metrics, what the kernel logged while gpurent ran is counted, by
// Xid code and by fault kind and level; with no log to read, nothing is
// served (a 0 would claim a clean machine).
func TestKernelMetrics(t *testing.T) {
	kmsg := filepath.Join(t.TempDir(), "kmsg")
	if err := os.WriteFile(kmsg, []byte("6,0,0,-;Linux version 6.8.0\n4,1,1,-;NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w := Start(context.Background(), Options{Path: kmsg, Log: func(string, ...any) {}})
	defer w.Stop()
	f, _ := os.OpenFile(kmsg, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("4,2,2,-;NVRM: Xid (PCI:0000:18:00): 13, pid=1, name=x, Graphics Exception\n4,3,3,-;NVRM: Xid (PCI:0000:18:00): 13, pid=1, name=x, Graphics Exception\n" +
		"3,4,4,-;I/O error, dev sda, sector 8 op 0x1:(WRITE) flags 0x0 phys_seg 1 prio class 2\n" +
		"4,5,5,-;pcieport 0000:00:01.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)\n")
	f.Close()
	w.Causes() // reads what was logged
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
	none := Start(context.Background(), Options{Path: filepath.Join(t.TempDir(), "none"), NVMLLibrary: filepath.Join(t.TempDir(), "libnvidia-ml.so.1"), Log: func(string, ...any) {}})
	defer none.Stop()
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
	w := Start(context.Background(), Options{Path: kmsg, CkptDir: dir, Log: func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		said = append(said, fmt.Sprintf(f, a...))
	}})
	defer w.Stop()
	f, _ := os.OpenFile(kmsg, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "3,1,1,-;I/O error, dev %s, sector 8 op 0x1:(WRITE) flags 0x0 phys_seg 1 prio class 2\n3,2,2,-;I/O error, dev other9, sector 8 op 0x1:(WRITE) flags 0x0 phys_seg 1 prio class 2\n", dev)
	f.Close()
	causes := w.Causes()
	mu.Lock()
	defer mu.Unlock()
	if len(causes) != 2 || !strings.HasPrefix(causes[0].String(), "the kernel reported 1 disk I/O error on "+dev+", the disk of --ckpt-dir (") ||
		strings.Contains(causes[1].String(), "--ckpt-dir") || len(said) != 2 || !strings.Contains(said[0], dev+", the disk of --ckpt-dir") {
		t.Errorf("causes %q\nsaid %q", causes, said)
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
	w := Start(context.Background(), Options{Path: filepath.Join(t.TempDir(), "none"), NVMLLibrary: nvml, Log: func(f string, a ...any) {
		mu.Lock()
		said = append(said, fmt.Sprintf(f, a...))
		mu.Unlock()
	}})
	defer w.Stop()
	causes := w.Causes() // takes what NVML holds
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
	if len(causes) != 2 || !strings.HasPrefix(causes[0].String(), "the NVIDIA driver reported Xid 79 on the GPU at PCI 0000:3b:00 (") {
		t.Errorf("causes %q", causes)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(said) != 1 || !strings.HasPrefix(said[0], "warning: the NVIDIA driver reported Xid 79") {
		t.Errorf("said %q", said)
	}
}
