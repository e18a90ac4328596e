package runlog

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// benchBytes is what the command prints in each iteration: far more than
// a training run prints in a day, so that the copying shows.
const benchBytes = 64 << 20

// BenchmarkOutput: a command printing 64 MiB (base64 of random bytes), its
// output kept in a log file. Without a terminal: not kept (the floor),
// through tee (the peer: `CMD | tee train.log`), through gpurent's Output
// over pipes. On a terminal: written to it directly (the floor), through
// script(1) (the peer), through gpurent's pseudo-terminal. Each writes the
// log to the same disk.
func BenchmarkOutput(b *testing.B) {
	print := "head -c " + strconv.Itoa(benchBytes*3/4) + " /dev/urandom | base64"
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devnull.Close()
	run := func(b *testing.B, cmd *exec.Cmd) {
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("direct", func(b *testing.B) {
		b.SetBytes(benchBytes)
		for b.Loop() {
			cmd := exec.Command("sh", "-c", print)
			cmd.Stdout = devnull
			run(b, cmd)
		}
	})
	b.Run("tee", func(b *testing.B) {
		log := filepath.Join(b.TempDir(), "train.log")
		b.SetBytes(benchBytes)
		for b.Loop() {
			cmd := exec.Command("sh", "-c", print+" | tee -a "+log)
			cmd.Stdout = devnull
			run(b, cmd)
		}
	})
	output := func(b *testing.B, stdout *os.File) {
		log := filepath.Join(b.TempDir(), "train.log")
		b.SetBytes(benchBytes)
		for b.Loop() {
			o, err := Open(Options{Path: log, Stdout: stdout, Stderr: devnull})
			if err != nil {
				b.Fatal(err)
			}
			cmd := exec.Command("sh", "-c", print)
			cmd.Stdout, cmd.Stderr = o.Stdout, o.Stderr
			run(b, cmd)
			o.Close(time.Minute)
		}
	}
	b.Run("gpurent-pipes", func(b *testing.B) { output(b, devnull) })
	// On a terminal the command's output goes to one: the user's, itself
	// a pseudo-terminal (sshd's, tmux's), played here by one whose other
	// end is drained. Without --log the command writes to it directly.
	terminal := func(b *testing.B) *os.File {
		if runtime.GOOS != "linux" {
			b.Skip("pseudo-terminals are made on Linux only")
		}
		master, tty, err := openPTY()
		if err != nil {
			b.Skip(err)
		}
		b.Cleanup(func() { tty.Close(); master.Close() })
		// gpurent's stdout is a blocking descriptor, as a terminal
		// handed to a process is: Fd makes this one so.
		tty.Fd()
		go func() {
			buf := make([]byte, 64<<10)
			for {
				if _, err := master.Read(buf); err != nil {
					return
				}
			}
		}()
		return tty
	}
	b.Run("direct-tty", func(b *testing.B) {
		tty := terminal(b)
		b.SetBytes(benchBytes)
		for b.Loop() {
			cmd := exec.Command("sh", "-c", print)
			cmd.Stdout = tty
			run(b, cmd)
		}
	})
	// The peer on a terminal: script(1) keeping the log (-f: flushed as
	// it goes), between the command and the terminal as gpurent is.
	b.Run("script", func(b *testing.B) {
		if _, err := exec.LookPath("script"); err != nil {
			b.Skip("no script(1) here")
		}
		tty := terminal(b)
		log := filepath.Join(b.TempDir(), "train.log")
		b.SetBytes(benchBytes)
		for b.Loop() {
			cmd := exec.Command("script", "-qfec", print, log)
			cmd.Stdin, cmd.Stdout = tty, tty
			run(b, cmd)
		}
	})
	b.Run("gpurent-pty", func(b *testing.B) { output(b, terminal(b)) })
}
