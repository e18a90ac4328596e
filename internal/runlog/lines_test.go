package runlog

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// A progress bar redrawn ten times a second (tqdm writes "\r" before each
// state) keeps one state per redrawEvery in the log, and its last at the
// line's end; the lines around it are whole.
func TestLinesProgressBar(t *testing.T) {
	var l lines
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var log bytes.Buffer
	log.Write(l.add([]byte("epoch 1\n"), t0))
	for i := range 250 { // 25 s
		log.Write(l.add([]byte(fmt.Sprintf("\r%3d%%|bar| %d/250", i*100/250, i)), t0.Add(time.Duration(i)*100*time.Millisecond)))
	}
	log.Write(l.add([]byte("\r100%|bar| 250/250\n"), t0.Add(25*time.Second)))
	log.Write(l.add([]byte("saved checkpoint-250\n"), t0.Add(26*time.Second)))
	want := "epoch 1\n\r" + " 39%|bar| 99/250\r" + " 79%|bar| 199/250\r" + "100%|bar| 250/250\nsaved checkpoint-250\n"
	// The first "\r" ends an empty state, written at once; then a state
	// each time 10 s have passed since the last one written.
	if got := log.String(); got != want {
		t.Errorf("log\n got %q\nwant %q", got, want)
	}
}

// Without "\r" the log is the output, however it is cut into chunks; a
// line's end that comes in the next chunk still ends it.
func TestLinesPlainOutputUnchanged(t *testing.T) {
	text := []byte("Traceback (most recent call last):\n  File \"train.py\", line 3\nRuntimeError: boom\nno newline at the end")
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 1))
		var l lines
		var log bytes.Buffer
		now := time.Now()
		for rest := text; len(rest) > 0; {
			n := 1 + r.IntN(len(rest))
			log.Write(l.add(rest[:n], now))
			rest = rest[n:]
		}
		log.Write(l.flush(now, false))
		if log.String() != string(text) {
			t.Fatalf("seed %d: %q", seed, log.String())
		}
	}
	var l lines
	got := string(l.add([]byte("a\r\nb\rc\r"), time.Now())) + string(l.add([]byte("\n"), time.Now()))
	if got != "a\nb\rc\n" {
		// "\r\n" is "\n"; "b" was the first state (written), "c" the last.
		t.Errorf("line ends: %q", got)
	}
}

// flush writes what is held; with brk it ends a line that is partly in
// the log, so that gpurent's own line starts on a line of its own.
func TestLinesFlush(t *testing.T) {
	var l lines
	now := time.Now()
	var log bytes.Buffer
	log.Write(l.add([]byte("\rstep 1\rstep 2\rste"), now))
	log.Write(l.flush(now, false))
	log.Write(l.add([]byte("p 3"), now.Add(time.Second)))
	if got := log.String(); got != "\rstep 2\rste" {
		t.Errorf("flushed %q", got)
	}
	log.Write(l.flush(now.Add(2*time.Second), true))
	if got := log.String(); got != "\rstep 2\rstep 3\n" {
		t.Errorf("broken %q", got)
	}
	if b := l.flush(now, true); len(b) != 0 {
		t.Errorf("nothing held, yet %q", b)
	}
	// A state in the log, then nothing: brk still ends the line.
	var m lines
	out := string(m.add([]byte("x\r"), now)) + string(m.flush(now, true))
	if out != "x\r\n" {
		t.Errorf("%q", out)
	}
}

// How much of a day's tqdm bar reaches the log.
func TestLinesDayOfProgressBar(t *testing.T) {
	var l lines
	t0 := time.Now()
	raw, kept := 0, 0
	for i := range 24 * 3600 * 10 {
		b := []byte("\r" + strings.Repeat("#", 40) + fmt.Sprintf(" %d/864000 [1:00:00<2:00:00, 10.00it/s]", i))
		raw += len(b)
		kept += len(l.add(b, t0.Add(time.Duration(i)*100*time.Millisecond)))
	}
	if raw < 50<<20 || kept > raw/90 {
		t.Errorf("a day of one bar: %d bytes printed, %d kept", raw, kept)
	}
	t.Logf("a day of one bar redrawn 10 times a second: %d bytes printed, %d kept", raw, kept)
}

// FuzzLines cuts any output into chunks at any times: what reaches the log
// must show every line's final state, as the output did on a terminal,
// however the chunks fell and however fast the command redrew its lines.
func FuzzLines(f *testing.F) {
	f.Add([]byte("epoch 1\n 10%\r 20%\r100%\ndone\n"), []byte{3, 1, 7}, uint16(30))
	f.Add([]byte("a\r\nb\r\r\nc\rd"), []byte{1, 1, 1, 1}, uint16(0))
	f.Add([]byte("x\r"), []byte{1}, uint16(11))
	f.Fuzz(func(t *testing.T, out, cuts []byte, stepS uint16) {
		l := &lines{}
		now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
		var log []byte
		rest := out
		for i := 0; len(rest) > 0; i++ {
			n := len(rest)
			if i < len(cuts) {
				n = min(n, int(cuts[i])+1)
			}
			// add may return part of its chunk: copy before the chunk changes.
			log = append(log, l.add(append([]byte(nil), rest[:n]...), now)...)
			rest = rest[n:]
			now = now.Add(time.Duration(stepS) * time.Second / 4)
		}
		log = append(log, l.flush(now, true)...)
		if got, want := finalStates(log), finalStates(out); !slices.Equal(got, want) {
			t.Fatalf("output %q in chunks %v: log %q shows %q, the terminal %q", out, cuts, log, got, want)
		}
	})
}

// finalStates is what each line of output ends showing, for a stream whose
// lines redraw themselves with "\r": the last non-empty state of each line.
// A last line left unfinished counts as a line; empty lines at the end
// show nothing either way and do not count.
func finalStates(b []byte) []string {
	s := strings.ReplaceAll(string(b), "\r\n", "\n")
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	var out []string
	for _, line := range strings.Split(s, "\n") {
		last := ""
		for _, st := range strings.Split(line, "\r") {
			if st != "" {
				last = st
			}
		}
		out = append(out, last)
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// A line without a newline is not held whole: past lineMax what is held
// goes to the log and memory stays bounded (issue #36: a 400 MB line took
// 1.9 GiB). The bytes all reach the log, in order.
func TestLinesLongLineIsBounded(t *testing.T) {
	var l lines
	now := time.Now()
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	var logged int
	for i := 0; i < 64; i++ { // 4 MiB, no newline
		logged += len(l.add(chunk, now))
		if len(l.pend) > lineMax || cap(l.pend) > 2*lineMax+len(chunk) {
			t.Fatalf("after %d KiB, %d bytes held (cap %d)", (i+1)*64, len(l.pend), cap(l.pend))
		}
	}
	logged += len(l.flush(now, true))
	if want := 64*len(chunk) + 1; logged != want {
		t.Errorf("logged %d bytes, want %d (every byte and the closing newline)", logged, want)
	}
	// Redrawn with "\r", the same.
	var r lines
	for i := 0; i < 64; i++ {
		r.add(append(chunk, '\r'), now)
		if len(r.state) > lineMax+len(chunk)+1 || len(r.pend) > lineMax {
			t.Fatalf("redrawn line held %d + %d bytes", len(r.state), len(r.pend))
		}
	}
}
