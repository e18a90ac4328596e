package compute

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// torchScript measures the probes users know from PyTorch. It is the
// cross-check of the cuda backend and the reference in benchmarks.
//
//go:embed torch_probe.py
var torchScript string

// Torch runs the embedded script with python3, where torch with CUDA is
// installed.
type Torch struct {
	Python string // interpreter; "python3" when empty
}

// Name is "torch".
func (Torch) Name() string { return "torch" }

// Run executes the script and reads its JSON.
func (t Torch) Run(ctx context.Context, opt Options) Results {
	res := Results{Backend: "torch", Results: []Result{}}
	py := t.Python
	if py == "" {
		py = "python3"
	}
	path, err := exec.LookPath(py)
	if err != nil {
		res.Error = "python3 not found: the torch backend needs python3 with torch and CUDA"
		return res
	}
	limit := 2 * time.Minute
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	full := "0"
	if opt.Full {
		full = "1"
	}
	cmd := exec.CommandContext(ctx, path, "-c", torchScript, fmt.Sprint(opt.Device), full, strings.Join(opt.Probes, ","))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	runErr := cmd.Run()
	var parsed struct {
		Available bool   `json:"available"`
		Error     string `json:"error"`
		Device    string `json:"device"`
		BusID     string `json:"bus_id"`
		Driver    string `json:"driver"`
		// Results carry each repetition's time (ms), summarised here as
		// the cuda backend's are, so that the two read alike.
		Results []struct {
			Result
			Ms []float64 `json:"ms"`
		} `json:"results"`
	}
	if err := json.Unmarshal(out.Bytes(), &parsed); err != nil {
		msg := strings.TrimSpace(errOut.String())
		if len(msg) > 400 {
			msg = msg[len(msg)-400:]
		}
		if runErr != nil {
			res.Error = fmt.Sprintf("torch probe script failed (%v): %s", runErr, msg)
		} else {
			res.Error = fmt.Sprintf("torch probe script printed no JSON: %v", err)
		}
		return res
	}
	res.Available, res.Error, res.Device, res.BusID, res.Driver = parsed.Available, parsed.Error, parsed.Device, parsed.BusID, parsed.Driver
	for _, r := range parsed.Results {
		r.Timing = Summarize(r.Ms)
		res.Results = append(res.Results, r.Result)
	}
	if opt.Memtest {
		res.Results = append(res.Results, Result{Probe: ProbeMemtest, Unit: "words", Error: "the memory test runs in the cuda backend only (libcuda.so.1 and gpurent's own kernels)"})
	}
	return res
}
