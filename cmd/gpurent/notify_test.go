package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gpurent/gpurent/internal/notify"
)

// webhook is a JSON webhook on loopback (its path holds a token, as real
// ones do), the file naming it for --notify, and the events it has been
// sent since the last call.
func webhook(t *testing.T, dir string) (url, file string, events func() []notify.Event) {
	var mu sync.Mutex
	var got []notify.Event
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var e notify.Event
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/hook/T0KEN" || json.Unmarshal(b, &e) != nil {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		mu.Lock()
		got = append(got, e)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	url = srv.URL + "/hook/T0KEN"
	file = filepath.Join(dir, "hook.txt")
	if err := os.WriteFile(file, []byte(url+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GPURENT_NOTIFY", "")
	return url, file, func() []notify.Event {
		mu.Lock()
		defer mu.Unlock()
		out := got
		got = nil
		return out
	}
}

// TestRunNotifies: with --notify, the webhook hears the start and the end
// of a run, with its exit status, also when the run cannot start; the URL
// is refused on the command line and in plain HTTP to another machine,
// and never printed.
func TestRunNotifies(t *testing.T) {
	dir := t.TempDir()
	url, hookFile, events := webhook(t, dir)
	host, _ := os.Hostname()
	base := []string{"run", "--ckpt-dir", filepath.Join(dir, "ck"), "--preemption", "none", "--no-status", "--max-restarts", "0", "--notify", hookFile, "--"}
	for _, tc := range []struct {
		name  string
		cmd   []string
		code  int
		kinds []string
		end   string
	}{
		{"finished", []string{"true"}, 0, []string{"start", "end"}, "the command finished; no complete checkpoint was written"},
		{"failed", []string{"sh", "-c", "exit 4"}, 1, []string{"start", "end"}, "the command failed (exit status 4) and the 0 restarts allowed are used up"},
		{"cannot start", []string{"no-such-command-here"}, 2, []string{"end"}, `run: exec: "no-such-command-here": executable file not found in $PATH`},
	} {
		code, _, stderr := gpurent(t, append(append([]string(nil), base...), tc.cmd...)...)
		if code != tc.code || strings.Contains(stderr, "T0KEN") {
			t.Errorf("%s: exit %d, want %d; stderr:\n%s", tc.name, code, tc.code, stderr)
		}
		es := events()
		var kinds []string
		for _, e := range es {
			kinds = append(kinds, e.Kind)
		}
		if strings.Join(kinds, " ") != strings.Join(tc.kinds, " ") {
			t.Errorf("%s: events %v, want %v", tc.name, kinds, tc.kinds)
			continue
		}
		end := es[len(es)-1]
		if end.ExitCode == nil || *end.ExitCode != tc.code || end.Run != "default" || end.Host != host ||
			!strings.HasPrefix(end.Text, "gpurent run default on "+host+": "+tc.end) {
			t.Errorf("%s: end event %+v, want exit %d and %q", tc.name, end, tc.code, tc.end)
		}
	}
	empty := filepath.Join(dir, "empty.txt")
	os.WriteFile(empty, nil, 0o600)
	open := filepath.Join(dir, "open.txt")
	os.WriteFile(open, []byte(url+"\n"), 0o600)
	os.Chmod(open, 0o644)
	signed := filepath.Join(dir, "signed.txt")
	os.WriteFile(signed, []byte(url+"\nSECsigningsecret\n"), 0o600)
	three := filepath.Join(dir, "three.txt")
	os.WriteFile(three, []byte(url+"\nSECsigningsecret\nmore\n"), 0o600)
	for _, tc := range []struct {
		env    string
		flag   []string
		stderr string
	}{
		{"", []string{"--notify", url}, "--notify: give a file that holds the webhook URL, not the URL"},
		{"", []string{"--notify", empty}, "--notify " + empty + ": the file is empty; want the webhook URL"},
		{"", []string{"--notify", open}, "--notify " + open + " is readable by other users (mode -rw-r--r--): chmod 600 it"},
		{"", []string{"--notify", filepath.Join(dir, "missing.txt")}, "--notify: open " + filepath.Join(dir, "missing.txt")},
		{"", []string{"--notify", signed}, "--notify " + signed + ": a signing secret was given, but json webhooks are not signed (only DingTalk's and Feishu/Lark's are)"},
		{"", []string{"--notify", three}, "--notify " + three + ": want the webhook URL and, for a signed DingTalk or Feishu/Lark bot, its secret on the next line; found 3 lines"},
		{"http://10.11.12.13/hook/T0KEN", nil, "$GPURENT_NOTIFY: plain http to 10.11.12.13 would send the webhook's token unprotected: use https"},
	} {
		t.Setenv("GPURENT_NOTIFY", tc.env)
		args := append([]string{"run", "--ckpt-dir", filepath.Join(dir, "ck"), "--preemption", "none"}, tc.flag...)
		code, _, stderr := gpurent(t, append(args, "--", "true")...)
		if code != 2 || !strings.Contains(stderr, tc.stderr) || strings.Contains(stderr, "T0KEN") || strings.Contains(stderr, "signingsecret") {
			t.Errorf("%v (env %q): exit %d, stderr %q; want exit 2 and %q", tc.flag, tc.env, code, stderr, tc.stderr)
		}
	}
	if len(events()) != 0 {
		t.Error("a refused webhook was sent events")
	}
}

// With --log, a restart and a failed end carry the command's last lines,
// as a terminal shows them (no colour codes, a progress bar's last
// state), tokens taken out: the traceback that says why. Without --log
// there are none.
func TestRunNotifiesLastLines(t *testing.T) {
	dir := t.TempDir()
	_, hookFile, events := webhook(t, dir)
	t.Setenv("T", "hf_"+strings.Repeat("Z", 34)) // not a real token
	// One stream: the order of lines on two pipes is the scheduler's.
	script := `exec 2>&1; printf '\033[32mepoch 1\033[0m\n'; printf 'step 1/9\rstep 5/9\rstep 9/9\n'; echo 'Traceback (most recent call last):' >&2; echo 'RuntimeError: CUDA error: an illegal memory access was encountered' >&2; echo "using token $T" >&2; exit 1`
	for _, withLog := range []bool{true, false} {
		args := []string{"run", "--ckpt-dir", filepath.Join(dir, "ck"), "--preemption", "none", "--no-status",
			"--max-restarts", "1", "--notify", hookFile}
		if withLog {
			args = append(args, "--log", filepath.Join(dir, "train.log"))
		}
		stdout, _ := os.Create(filepath.Join(dir, "stdout"))
		stderr, _ := os.Create(filepath.Join(dir, "stderr"))
		code := run(context.Background(), append(args, "--", "sh", "-c", script), stdout, stderr)
		stdout.Close()
		stderr.Close()
		if code != 1 {
			errs, _ := os.ReadFile(filepath.Join(dir, "stderr"))
			t.Fatalf("log %v: exit %d\n%s", withLog, code, errs)
		}
		es := events()
		var kinds []string
		for _, e := range es {
			kinds = append(kinds, e.Kind)
			once := "epoch 1\nstep 9/9\nTraceback (most recent call last):\nRuntimeError: CUDA error: an illegal memory access was encountered\nusing token [a Hugging Face token]"
			want := ""
			switch {
			case !withLog || e.Kind == "start":
			case e.Kind == "restart":
				want = once
			case e.Kind == "end": // both starts' lines, the last 12
				want = once + "\n" + once
			}
			if e.Kind == "restart" && withLog != strings.Contains(e.Text, "; CUDA illegal memory access: ") {
				t.Errorf("log %v: restart text %q", withLog, e.Text)
			}
			if e.Output != want {
				t.Errorf("log %v: %s event's output %q, want %q", withLog, e.Kind, e.Output, want)
			}
		}
		if strings.Join(kinds, " ") != "start restart end" {
			t.Errorf("log %v: events %v", withLog, kinds)
		}
	}
}

// --notify-every: the webhook hears, at each interval, how the run stands
// and (with --log) its last lines, a progress bar's state among them.
func TestRunNotifiesProgress(t *testing.T) {
	dir := t.TempDir()
	_, hookFile, events := webhook(t, dir)
	script := `printf 'loading\n'; for i in 1 2 3 4 5 6; do printf '\rstep %d/9 loss 2.%d' $i $i; sleep 0.5; done; echo`
	stdout, _ := os.Create(filepath.Join(dir, "stdout"))
	stderr, _ := os.Create(filepath.Join(dir, "stderr"))
	code := run(context.Background(), []string{"run", "--ckpt-dir", filepath.Join(dir, "ck"), "--preemption", "none", "--no-status",
		"--notify", hookFile, "--notify-every", "1s", "--log", filepath.Join(dir, "train.log"), "--", "sh", "-c", script}, stdout, stderr)
	stdout.Close()
	stderr.Close()
	if code != 0 {
		b, _ := os.ReadFile(filepath.Join(dir, "stderr"))
		t.Fatalf("exit %d\n%s", code, b)
	}
	var progress []notify.Event
	for _, e := range events() {
		if e.Kind == "progress" {
			progress = append(progress, e)
		}
	}
	if len(progress) < 2 {
		t.Fatalf("%d progress events in 3 s at --notify-every 1s", len(progress))
	}
	bars := map[string]bool{}
	for _, e := range progress {
		if !strings.Contains(e.Text, ": training for ") || !strings.Contains(e.Text, "; 0 restarts; no checkpoint in the store yet") {
			t.Errorf("progress event %q", e.Text)
		}
		// (The first may come before the command printed, on a loaded
		// machine.)
		if strings.HasPrefix(e.Output, "loading\nstep ") && strings.Count(e.Output, "\n") == 1 {
			bars[e.Output] = true
		}
	}
	if len(bars) < 2 {
		t.Errorf("want the bar's state, moving, in the progress events: %+v", progress)
	}
}
