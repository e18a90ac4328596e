//go:build unix

package supervise

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// fakeTrainer is the training command of the tests, run as a child of the
// test binary (FAKE_TRAINER=1). It resumes from GPURENT_RESUME_FROM,
// checking the checkpoint byte for byte; takes steps; every FAKE_EVERY steps
// writes a checkpoint of about a MB to a temporary name, sometimes slowly,
// and renames it into place; checkpoints at once on SIGUSR1; crashes at
// random with FAKE_CRASH probability per step, and on its first run right
// after the checkpoint of step FAKE_CRASH_AFTER; exits 0 at FAKE_STEPS.
// With FAKE_NAME every checkpoint has that one name.
// Each resume is logged to FAKE_LOG as "resume STEP" (or "corrupt"),
// once its SIGUSR1 handler is in place.
func fakeTrainer() {
	env := func(k string, def int) int {
		if v, err := strconv.Atoi(os.Getenv(k)); err == nil {
			return v
		}
		return def
	}
	dir := os.Getenv("GPURENT_CKPT_DIR")
	total, every, stepMS := env("FAKE_STEPS", 40), env("FAKE_EVERY", 5), env("FAKE_STEP_MS", 10)
	crash, _ := strconv.ParseFloat(os.Getenv("FAKE_CRASH"), 64)
	rng := rand.New(rand.NewPCG(uint64(env("FAKE_SEED", 1)), uint64(os.Getpid())))
	logf := func(format string, args ...any) {
		if p := os.Getenv("FAKE_LOG"); p != "" {
			f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err == nil {
				fmt.Fprintf(f, format+"\n", args...)
				f.Close()
			}
		}
	}
	step := 0
	if from := os.Getenv("GPURENT_RESUME_FROM"); from != "" {
		s, err := readCheckpoint(from)
		if err != nil {
			logf("corrupt %s: %v", from, err)
			os.Exit(99)
		}
		step = s
	}
	// The handler is in place before "resume" is logged: a test that
	// waits for the line may send a notice at once.
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	logf("resume %d", step)
	write := func() {
		name := filepath.Join(dir, fmt.Sprintf("ckpt-%06d.bin", step))
		if n := os.Getenv("FAKE_NAME"); n != "" { // one name saved over, as last.ckpt is
			name = filepath.Join(dir, n)
		}
		tmp := name + ".tmp"
		data := checkpointBytes(step, rng)
		f, err := os.Create(tmp)
		if err != nil {
			os.Exit(4)
		}
		if rng.IntN(4) == 0 { // slowly, in pieces: never complete while open
			for off := 0; off < len(data); off += len(data) / 4 {
				f.Write(data[off:min(off+len(data)/4, len(data))])
				time.Sleep(time.Duration(stepMS) * time.Millisecond)
				if rng.Float64() < crash {
					os.Exit(3) // dies mid-write: only a .tmp is left
				}
			}
		} else {
			f.Write(data)
		}
		f.Sync()
		f.Close()
		os.Rename(tmp, name)
	}
	for step < total {
		select {
		case <-usr1:
			write()
			logf("checkpoint-now %d", step)
		default:
		}
		time.Sleep(time.Duration(stepMS) * time.Millisecond)
		step++
		if step%every == 0 {
			write()
			if step == env("FAKE_CRASH_AFTER", -1) && os.Getenv("GPURENT_RESTART_COUNT") == "0" {
				os.Exit(3) // dies right after a checkpoint, on the first run
			}
		}
		if rng.Float64() < crash {
			os.Exit(3)
		}
	}
	write()
	os.Exit(0)
}

// checkpointBytes: "step N\n", a random body of 256 KiB to 1 MiB, and the
// SHA-256 of both as the last 64 bytes.
func checkpointBytes(step int, rng *rand.Rand) []byte {
	body := make([]byte, 256<<10+rng.IntN(768<<10))
	for i := range body {
		body[i] = byte(rng.Uint32())
	}
	head := []byte(fmt.Sprintf("step %d\n", step))
	sum := sha256.Sum256(append(head, body...))
	return append(append(head, body...), []byte(fmt.Sprintf("%x", sum))...)
}

// readCheckpoint checks a checkpoint and returns its step.
func readCheckpoint(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	if len(b) < 64 {
		return 0, fmt.Errorf("%d bytes", len(b))
	}
	data, sum := b[:len(b)-64], string(b[len(b)-64:])
	if fmt.Sprintf("%x", sha256.Sum256(data)) != sum {
		return 0, fmt.Errorf("checksum mismatch")
	}
	line, _, ok := bytes.Cut(data, []byte("\n"))
	if !ok {
		return 0, fmt.Errorf("no step line")
	}
	return strconv.Atoi(strings.TrimPrefix(string(line), "step "))
}
