package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/dl/dltest"
)

// TestGPUCheckSimulated runs scripts/gpu-check.sh, the check a session with
// a GPU gets a few minutes of device time for, whole, on a machine made to
// look like one: a CGO_ENABLED=0 gpurent as shipped, the simulated NVML,
// CUDA driver and cuBLASLt the package tests use (an H100 SXM with other
// tenants' processes), the stand-in torch, and an nvidia-smi that prints
// what the simulated NVML says. Every step must run and print its figures:
// NVML agrees with nvidia-smi field by field; cuda and torch, given the
// same rates, agree within 2% on each probe both have; the sustained probe
// raises no alarm on the idle GPU and catches the co-tenant (gpurent burn,
// whose GEMMs make other processes' launches wait) in 3 of 3 runs; run
// without the kernel log registers for NVML's Xid events. The binary is the
// one scripts/gpu-check-prep.sh builds for the device machine (stripped, so
// that it travels there), and what the run leaves in its output directory
// must come back from that machine: no binary, no file over 16 MiB. Then
// GPU_CHECK_STEPS reruns two steps alone. It checks the script and the
// binary's plumbing, not any GPU figure.
func TestGPUCheckSimulated(t *testing.T) {
	t.Parallel() // it runs processes of its own: the longest tests overlap
	if testing.Short() {
		t.Skip("-short: the simulated gpu-check.sh run takes about two minutes")
	}
	for _, tool := range []string{"bash", "python3", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	root, simEnv := simGPUs(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "gpurent")
	if b, err := exec.Command("bash", filepath.Join(root, "scripts/gpu-check-prep.sh"), bin).CombinedOutput(); err != nil {
		t.Fatalf("gpu-check-prep.sh: %v\n%s", err, b)
	} else if !strings.Contains(string(b), "of the device tool's 64.0 MiB") || !strings.Contains(string(b), "timeout 480 bash scripts/gpu-check.sh") {
		t.Fatalf("gpu-check-prep.sh does not say what fits and what to run:\n%s", b)
	}
	smi := filepath.Join(dir, "bin", "nvidia-smi")
	os.MkdirAll(filepath.Dir(smi), 0o755)
	// The fields gpu-check.sh queries, as nvidia-smi prints them for the
	// simulated NVML's device (fakenvml.c, fake_default).
	csv := "0, NVIDIA H100 80GB HBM3, GPU-5b8c9a3e-1f2d-4c6b-9e7a-0d1c2b3a4f5e, 0x233010DE, 0x16C110DE, 81559, 2048, " +
		"500.00, 700.00, 4, 16, 570.86.15, Disabled, Enabled, Exclusive_Process, 41"
	if err := os.WriteFile(smi, []byte("#!/bin/sh\ncase \"$*\" in\n*--query-gpu*) echo '"+csv+"' ;;\n*) echo 'simulated nvidia-smi' ;;\nesac\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(dir, "out")
	env := append(simEnv(1, "cotenant="+filepath.Join(dir, "busy")+" cotenant_every=3 cotenant_ms=2"),
		"GPURENT_BIN="+bin,
		"PATH="+filepath.Dir(smi)+":"+os.Getenv("PATH"),
		"PYTHONPATH="+filepath.Join(root, "internal/compute/testdata/faketorch"),
		`FAKE_TORCH_RATES={"fp32": 6e13, "tf32": 4e14, "bf16": 8e14, "device": 3e12, "link": 5e10}`,
		"XDG_STATE_HOME="+filepath.Join(dir, "state"),
		"GPU_CHECK_SOAK=10s",
		// Fewer and shorter trials than on a card: the plumbing is the
		// same, and the simulated run is the longest test of the module.
		"GPU_CHECK_TRIALS=3", "GPU_CHECK_BURN=15s",
	)
	cmd := exec.Command("bash", filepath.Join(root, "scripts/gpu-check.sh"), out)
	cmd.Env = env
	b, err := cmd.CombinedOutput()
	summary, _ := os.ReadFile(filepath.Join(out, "summary.txt"))
	t.Logf("gpu-check.sh summary:\n%s", summary)
	if err != nil {
		t.Fatalf("gpu-check.sh: %v\n%s", err, b)
	}
	s := string(summary)
	for _, want := range []string{
		"all fields agree",
		"cuda backend on Simulated GPU (gpurent test driver):",
		"cuda/torch ratios on Simulated GPU (fake torch):",
		"judged against the datasheet (cuda backend, full mode):",
		"sustained probe: alarm in 0 of 3 idle runs (want 0), in 3 of 3 runs beside a co-tenant (want 3)",
		"idle runs failed by any check: ", // the simulated card is shared: its own checks fail
		"cuda/torch GEMM ratios, three more pairs taking turns (median):",
		"co-tenant: gpurent burn: device 0, cuBLASLt ",
		"GEMM loop",
		"every probe beside the co-tenant, over the idle quick run:",
		// The simulated driver hands out zeros unless told residue=N.
		"residue after a process wrote GPU memory and exited: gpu0.residue pass: cuda backend: read 78.0 MiB in 1248 samples over ",
		"gpurent run's GPU watch: gpurent: GPU utilization while the command ran (NVML, every 10s): GPU 0 37%",
		"nvidia-smi utilization.gpu meanwhile: no samples",
		"Xid reports since boot: gpurent ",
		"Xids without the kernel log: NVML's events registered on the card (0 codes seen)",
		"soak 10s and memtest: exit ",
		"  gpu0.residue           pass  cuda backend: read all ",
		"  gpu0.memtest           pass  cuda backend: 73 passes over ",
		"  gpu0.soak              pass  cuda backend: cuBLASLt ",
		"  soak/torch gemm_bf16 on gpu0: ",
		"  memtest/mem_copy on gpu0: median pass ",
		"links with the libnccl.so.2 gpurent finds: exit ", // 3: the simulated card has other tenants
		"  gpu.p2p_bandwidth      skip  1 GPU visible to CUDA: no pair to copy between",
		"  gpu.allreduce          skip  one GPU visible to CUDA: no all-reduce between GPUs; NCCL 2.28.3 ran one rank, its sum checked (2 GiB in ",
		"  nccl: libnccl.so.2 2.28.3, 1 ranks, checked True, error -",
		"step 1 took ", "step 2 took ", "step 3 took ", "step 4 took ", "step 5 took ", "step 6 took ", "step 7 took ",
		"steps 1 2 3 4 5 6 7: ",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	if strings.Contains(s, "DIFF") || strings.Contains(s, "did not run") || strings.Contains(s, "no ratio") {
		t.Errorf("summary reports a difference or a probe that did not run")
	}
	// The mma.sync fraction calibration() needs, read off the summary.
	if !regexp.MustCompile(`(?m)^  gpu0\.tensor_bf16 +\w+ +\d+% of the H100 SXM5 datasheet's 989.5 TFLOPS`).MatchString(s) {
		t.Errorf("summary lacks tensor_bf16's fraction of the datasheet peak")
	}
	ratio := regexp.MustCompile(`(?m)^  (\w+) +cuda [0-9.]+ / torch [0-9.]+ \S+ = ([0-9.]+)$`)
	seen := map[string]bool{}
	for _, m := range ratio.FindAllStringSubmatch(s, -1) {
		seen[m[1]] = true
		if r, _ := strconv.ParseFloat(m[2], 64); r < 0.98 || r > 1.02 {
			t.Errorf("%s: cuda/torch %s on equal simulated rates", m[1], m[2])
		}
	}
	for _, p := range []string{"mem_copy", "h2d", "d2h", "gemm_fp32", "gemm_tf32", "gemm_bf16"} {
		if !seen[p] {
			t.Errorf("no cuda/torch ratio for %s", p)
		}
	}
	// The soak's GEMM and torch's, on equal simulated rates.
	if m := regexp.MustCompile(`soak/torch gemm_bf16 on gpu0: \S+ / \S+ TFLOPS = ([0-9.]+)`).FindStringSubmatch(s); m == nil {
		t.Errorf("no soak/torch ratio")
	} else if r, _ := strconv.ParseFloat(m[1], 64); r < 0.95 || r > 1.05 {
		t.Errorf("soak/torch %s on equal simulated rates", m[1])
	}
	checkComesBack(t, out)

	// A second try of steps 1 and 5 (the quick ones), into a new directory
	// as on a fresh machine: they run, and nothing of the other steps; the
	// binary lost its execute bit on the way, as a copy can.
	if err := os.Chmod(bin, 0o644); err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(dir, "again")
	cmd = exec.Command("bash", filepath.Join(root, "scripts/gpu-check.sh"), again)
	cmd.Env = append(env, "GPU_CHECK_STEPS=1 5")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("GPU_CHECK_STEPS=\"1 5\" gpu-check.sh: %v\n%s", err, b)
	}
	summary, _ = os.ReadFile(filepath.Join(again, "summary.txt"))
	s = string(summary)
	for _, want := range []string{"all fields agree", "Xids without the kernel log: NVML's events registered", "step 1 took ", "step 5 took ", "steps 1 5: "} {
		if !strings.Contains(s, want) {
			t.Errorf("GPU_CHECK_STEPS=\"1 5\": summary lacks %q:\n%s", want, s)
		}
	}
	for _, other := range []string{"cuda backend", "co-tenant", "GPU watch", "step 2 took", "step 3 took", "step 4 took", "step 6 took", "soak", "step 7 took"} {
		if strings.Contains(s, other) {
			t.Errorf("GPU_CHECK_STEPS=\"1 5\" ran more than steps 1 and 5: %q in\n%s", other, s)
		}
	}
	cmd = exec.Command("bash", filepath.Join(root, "scripts/gpu-check.sh"), filepath.Join(dir, "bad"))
	cmd.Env = append(env, "GPU_CHECK_STEPS=2 8")
	if b, err := cmd.CombinedOutput(); cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(b), "no step 8: the steps are 1 to 7") {
		t.Errorf("GPU_CHECK_STEPS=\"2 8\": %v, want exit 2 naming step 8:\n%s", err, b)
	}
	cmd = exec.Command("bash", filepath.Join(root, "scripts/gpu-check.sh"), filepath.Join(dir, "bad"))
	cmd.Env = append(env, "GPU_CHECK_TRIALS=ten")
	if b, err := cmd.CombinedOutput(); cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(b), "GPU_CHECK_TRIALS: want 1 to 99, got ten") {
		t.Errorf("GPU_CHECK_TRIALS=ten: %v, want exit 2 naming it:\n%s", err, b)
	}
}

// checkComesBack fails when the device tool would not bring back all of
// out: it returns files of at most 16 MiB, so the script must leave no
// binary there (the tarball of out must fit too).
func checkComesBack(t *testing.T, out string) {
	t.Helper()
	var total int64
	filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		if info.Mode()&0o111 != 0 || d.Name() == "gpurent" {
			t.Errorf("gpu-check.sh left an executable in its output: %s", path)
		}
		return nil
	})
	if total > 16<<20 {
		t.Errorf("gpu-check.sh wrote %d bytes to %s: over the 16 MiB the device tool brings back in one file", total, out)
	}
	t.Logf("gpu-check.sh output: %d bytes", total)
}

// simGPUs builds the simulated NVML, CUDA driver and cuBLASLt and returns
// the repository root and env: the environment that makes a gpurent process
// load them, with gpus simulated H100s (1 or 2: NVML at buses 3B and 5E,
// the driver numbering them as the real one does) and further $FAKECUDA
// words.
func simGPUs(t *testing.T) (root string, env func(gpus int, fakecuda string) []string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	nvml := dltest.BuildC(t, filepath.Join(root, "internal/probe/testdata/fakenvml.c"), "libnvidia-ml.so.1")
	cuda := dltest.BuildC(t, filepath.Join(root, "internal/compute/testdata/fakecuda.c"), "libcuda.so.1", "-lm")
	blas := dltest.BuildC(t, filepath.Join(root, "internal/compute/testdata/fakecublaslt.c"), "libcublasLt.so.12")
	nccl := dltest.BuildC(t, filepath.Join(root, "internal/compute/testdata/fakenccl.c"), "libnccl.so.2")
	return root, func(gpus int, fakecuda string) []string {
		var out []string
		for _, kv := range os.Environ() { // the caller sets the CUDA ordering
			if !strings.HasPrefix(kv, "CUDA_VISIBLE_DEVICES=") && !strings.HasPrefix(kv, "CUDA_DEVICE_ORDER=") {
				out = append(out, kv)
			}
		}
		return append(out,
			"LD_LIBRARY_PATH="+strings.Join([]string{filepath.Dir(nvml), filepath.Dir(cuda), filepath.Dir(blas), filepath.Dir(nccl)}, ":"),
			"FAKENVML="+strconv.Itoa(gpus),
			"FAKECUDA=driver=12080 ptx=88 fp32=60e12 tensor=800e12 mem=3000e9 link=50e9 devices="+strconv.Itoa(gpus)+" "+fakecuda)
	}
}

// benchSim runs this binary as gpurent bench in env (simGPUs' simulated
// GPUs) with args, and returns its JSON report; exit 3 (a failed verdict:
// the simulation has other tenants) is not an error.
func benchSim(t *testing.T, env []string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"bench", "--no-history", "--disk-mb", "0", "-o", "json"}, args...)...)
	cmd.Env = append(env, "GPURENT_AS_MAIN=1", "XDG_STATE_HOME="+t.TempDir())
	b, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() == 3) {
		t.Fatalf("%v: %s", err, b)
	}
	return b
}

// On a two-GPU machine, bench --full measures every GPU CUDA shows and
// judges each against the NVML device at the same PCI address, whatever
// CUDA's numbering; a GPU that CUDA_VISIBLE_DEVICES hides is named as not
// measured, and no result lands on the wrong card.
func TestBenchMultiGPUSimulated(t *testing.T) {
	t.Parallel() // it runs processes of its own: the longest tests overlap
	_, simEnv := simGPUs(t)
	for _, tc := range []struct {
		name     string
		env      []string
		fakecuda string
		want     string // per NVML index: the bus measured there, or "hidden"
		order    string // NVML indices in the order CUDA numbered them
	}{
		// bench asks for PCI order (CUDA_DEVICE_ORDER) unless the user chose
		{"default order", nil, "", "0:0000:3B:00.0 1:0000:5E:00.0", "[0 1]"},
		{"fastest first", []string{"CUDA_DEVICE_ORDER=FASTEST_FIRST"}, "", "0:0000:3B:00.0 1:0000:5E:00.0", "[1 0]"},
		{"second GPU only", []string{"CUDA_VISIBLE_DEVICES=1"}, "", "0:hidden 1:0000:5E:00.0", "[1]"},
		{"first GPU only", []string{"CUDA_VISIBLE_DEVICES=0"}, "", "0:0000:3B:00.0 1:hidden", "[0]"},
		{"none", []string{"CUDA_VISIBLE_DEVICES="}, "", "0:none 1:none", "[]"},
		// CUDA's device 0 is held by another process in exclusive mode: its
		// failure is filed under that GPU (bus 5E, NVML's 1), not under gpu0
		{"fastest first, one held", []string{"CUDA_DEVICE_ORDER=FASTEST_FIRST"}, "busy=1", "0:0000:3B:00.0 1:held", "[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := benchSim(t, append(simEnv(2, tc.fakecuda), tc.env...), "--full", "--backend", "cuda", "--probes", "fp32_fma", "--duration", "200ms")
			var rep struct {
				Facts struct {
					Compute []struct {
						Index     int    `json:"index"`
						Available bool   `json:"available"`
						BusID     string `json:"bus_id"`
						Error     string `json:"error"`
					} `json:"compute"`
				} `json:"facts"`
				Checks []struct{ ID, Status, Evidence string } `json:"checks"`
			}
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatalf("%v: %s", err, b)
			}
			got := map[int]string{}
			order := []int{}
			for _, c := range rep.Facts.Compute {
				if c.Available {
					order = append(order, c.Index)
				}
				if _, dup := got[c.Index]; dup {
					t.Errorf("two results for gpu%d", c.Index)
				}
				switch {
				case c.Available:
					got[c.Index] = c.BusID
				case strings.Contains(c.Error, "CUDA does not show this GPU") && strings.Contains(c.Error, "CUDA_VISIBLE_DEVICES"):
					got[c.Index] = "hidden"
				case strings.Contains(c.Error, "CUDA_ERROR_NO_DEVICE") && strings.Contains(c.Error, "CUDA_VISIBLE_DEVICES"):
					got[c.Index] = "none"
				case strings.Contains(c.Error, "CUDA_ERROR_DEVICE_UNAVAILABLE"):
					got[c.Index] = "held"
				default:
					got[c.Index] = c.Error
				}
			}
			if s := fmt.Sprintf("0:%s 1:%s", got[0], got[1]); s != tc.want || len(got) != 2 {
				t.Errorf("measured %s, want %s", s, tc.want)
			}
			if fmt.Sprint(order) != tc.order {
				t.Errorf("measured in the order %v, want %s", order, tc.order)
			}
			for _, c := range rep.Checks {
				if strings.HasSuffix(c.ID, ".fp32_fma") && c.Status != "pass" {
					t.Errorf("%+v", c)
				}
			}
		})
	}
}

// bench's --duration is how long the sustained probe launches, as the
// sampling window is: a user who asks for 30 s of looking for another
// tenant gets 30 s of launches, not the quick default.
func TestBenchDurationSustainedSimulated(t *testing.T) {
	_, simEnv := simGPUs(t)
	b := benchSim(t, simEnv(1, ""), "--backend", "cuda", "--probes", "sustained", "--duration", "1500ms")
	var rep struct {
		Facts struct {
			DurationS float64 `json:"duration_s"`
			Compute   []struct {
				Results []struct {
					Probe, Notes string
					WallMs       float64 `json:"wall_ms"`
				} `json:"results"`
			} `json:"compute"`
		} `json:"facts"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if rep.Facts.DurationS != 1.5 || len(rep.Facts.Compute) != 1 || len(rep.Facts.Compute[0].Results) != 1 {
		t.Fatalf("want a 1.5 s window and one sustained result: %s", b)
	}
	r := rep.Facts.Compute[0].Results[0]
	if r.Probe != "sustained" || !strings.HasSuffix(r.Notes, " over 1.5s") || r.WallMs < 1500 {
		t.Errorf("sustained probe did not launch for --duration: %+v", r)
	}
}

// Full mode on a node measures its GPUs at once, but H2D and D2H one GPU
// at a time; every GPU gets every probe asked for, in the usual order,
// with the rates the simulation was given, whichever phase ran it.
func TestBenchFullParallelSimulated(t *testing.T) {
	_, simEnv := simGPUs(t)
	b := benchSim(t, simEnv(2, ""), "--full", "--backend", "cuda", "--probes", "h2d,fp32_fma,sustained,d2h,gemm_bf16", "--duration", "1s")
	var rep struct {
		Facts struct {
			Compute []struct {
				Index     int
				Available bool
				BusID     string `json:"bus_id"`
				Results   []struct {
					Probe, Error string
					Value        float64
				}
			}
		}
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if len(rep.Facts.Compute) != 2 {
		t.Fatalf("%d GPUs measured, want 2: %s", len(rep.Facts.Compute), b)
	}
	want := map[string]float64{"fp32_fma": 60, "gemm_bf16": 800, "h2d": 50, "d2h": 50}
	for i, c := range rep.Facts.Compute {
		var probes []string
		for _, r := range c.Results {
			probes = append(probes, r.Probe)
			if w, ok := want[r.Probe]; r.Error != "" || (ok && (r.Value < 0.98*w || r.Value > 1.02*w)) {
				t.Errorf("gpu%d %s = %v (%s)", c.Index, r.Probe, r.Value, r.Error)
			}
		}
		if c.Index != i || !c.Available || fmt.Sprint(probes) != "[fp32_fma gemm_bf16 h2d d2h sustained]" {
			t.Errorf("gpu%d (%s): available %v, probes %v", c.Index, c.BusID, c.Available, probes)
		}
	}
}

// bench --soak --memtest on two simulated GPUs, each fault class of the
// simulation at once: the 20th GEMM of the process gets an element wrong
// (on one GPU), both draw 60% of their power limit and their SM clocks
// fall from the 4th second, and bit 5 at 700 MiB into every GiB piece is
// stuck at 0. Every GPU is soaked and tested, each fault is judged on the
// GPU that has it, and the recorded facts judge the same by replay.
func TestBenchSoakSimulated(t *testing.T) {
	t.Parallel() // it runs processes of its own: the longest tests overlap
	_, simEnv := simGPUs(t)
	facts := filepath.Join(t.TempDir(), "facts.json")
	env := append(simEnv(2, "sdc=20 flip=734003201:5"), "FAKENVML_SOAK=power=0.6 clockdrop=4")
	b := benchSim(t, env, "--soak", "10s", "--memtest", "--probes", "residue", "--record", facts)
	verdict, status, _ := benchChecks(t, b, func(id string) bool { return strings.Contains(id, "soak") || strings.HasSuffix(id, "memtest") })
	for _, g := range []string{"gpu0", "gpu1"} {
		for id, want := range map[string]string{".memtest": "fail", ".soak_power": "warn", ".soak_clocks": "warn", ".residue": "pass"} {
			if status[g+id] != want {
				t.Errorf("%s%s: %q, want %s", g, id, status[g+id], want)
			}
		}
	}
	if (status["gpu0.soak"] == "fail") == (status["gpu1.soak"] == "fail") {
		t.Errorf("the wrong result is on one GPU: gpu0.soak %s, gpu1.soak %s", status["gpu0.soak"], status["gpu1.soak"])
	}
	if verdict != "fail" {
		t.Errorf("verdict %s", verdict)
	}
	again := benchSim(t, os.Environ(), "--replay", facts) // the environment as given: under qemu-user it says how to run this binary
	var rerun struct{ Verdict string }
	if err := json.Unmarshal(again, &rerun); err != nil || rerun.Verdict != verdict {
		t.Errorf("replay: %v %s", err, again)
	}
}

// A four-GPU HGX slice, simulated: one NVLink down, the fabric up, and
// one pair whose copies hang. bench prints the link matrix, fails the
// link and the hung pair, and finishes: the hang costs its timeout, not
// the bench. The recorded facts judge the same on replay.
func TestBenchLinksSimulated(t *testing.T) {
	t.Parallel() // it runs processes of its own: the longest tests overlap
	_, simEnv := simGPUs(t)
	facts := filepath.Join(t.TempDir(), "facts.json")
	env := append(simEnv(4, "hangpair=1:3"), "FAKENVML_TOPO=nvswitch down=2:5", "CUDA_DEVICE_ORDER=PCI_BUS_ID")
	start := time.Now()
	b := benchSim(t, env, "--probes", "residue", "--record", facts)
	if took := time.Since(start); took > 60*time.Second {
		t.Errorf("bench took %s with a hanging pair", took)
	}
	_, status, _ := benchChecks(t, b, func(id string) bool { return strings.HasPrefix(id, "gpu.") || strings.HasSuffix(id, "nvlink") })
	for id, want := range map[string]string{"gpu2.nvlink": "fail", "gpu.nvlink": "pass", "gpu.fabric": "pass", "gpu.p2p": "pass",
		"gpu.p2p_bandwidth": "fail", "gpu.nvlink_errors": "pass", "gpu.allreduce": "skip"} {
		if status[id] != want {
			t.Errorf("%s: %q, want %s", id, status[id], want)
		}
	}

	// No hang; NCCL, told not to use P2P, runs at a twentieth of the
	// copies' bandwidth: named, with the variable that did it.
	env = append(simEnv(4, ""), "FAKENVML_TOPO=nvswitch", "FAKENCCL=busbw=18", "NCCL_P2P_DISABLE=1")
	b = benchSim(t, env, "--probes", "residue")
	want := map[string]string{"gpu.allreduce": "warn", "gpu.p2p_bandwidth": "pass", "gpu.nvlink": "pass"}
	_, status, evidence := benchChecks(t, b, func(id string) bool { return want[id] != "" })
	for id, w := range want {
		if status[id] != w {
			t.Errorf("%s %s, want %s", id, status[id], w)
		}
	}
	if !strings.Contains(evidence["gpu.allreduce"], "NCCL_P2P_DISABLE=1") {
		t.Errorf("gpu.allreduce does not name the variable: %s", evidence["gpu.allreduce"])
	}

	// A copy that faults: the matrix stops there and NCCL is not run
	// behind it.
	b = benchSim(t, append(simEnv(3, "faultpair=0:2"), "FAKENVML_TOPO=nvswitch", "CUDA_DEVICE_ORDER=PCI_BUS_ID"), "--probes", "residue")
	_, status, evidence = benchChecks(t, b, func(id string) bool { return id == "gpu.p2p_bandwidth" || id == "gpu.allreduce" })
	if status["gpu.p2p_bandwidth"] != "fail" || status["gpu.allreduce"] != "skip" ||
		!strings.HasPrefix(evidence["gpu.allreduce"], "not run: copies from CUDA device 0 to 2 failed") {
		t.Errorf("a faulting pair: p2p_bandwidth %s, allreduce %s: %s", status["gpu.p2p_bandwidth"], status["gpu.allreduce"], evidence["gpu.allreduce"])
	}
	cmd := exec.Command(os.Args[0], "bench", "--replay", facts)
	cmd.Env = append(os.Environ(), "GPURENT_AS_MAIN=1")
	out, _ := cmd.CombinedOutput()
	for _, want := range []string{"links between the GPUs:", "GPU0  X     NV18  NV17  NV18", "GPU2  NV17  NV17  X", "GPU-to-GPU copies, GB/s", "hung", "verdict: FAIL"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("replay's output lacks %q:\n%s", want, out)
		}
	}
}

// benchChecks reads a bench JSON report: its verdict and each check's
// status by id; the checks show bears on are logged with their evidence.
func benchChecks(t *testing.T, b []byte, show func(id string) bool) (string, map[string]string, map[string]string) {
	t.Helper()
	var rep struct {
		Verdict string
		Checks  []struct{ ID, Status, Evidence string }
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	status, evidence := map[string]string{}, map[string]string{}
	for _, c := range rep.Checks {
		status[c.ID], evidence[c.ID] = c.Status, c.Evidence
		if show(c.ID) {
			t.Logf("%s %s: %s", c.ID, c.Status, c.Evidence)
		}
	}
	return rep.Verdict, status, evidence
}
