//go:build unix

package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/release"
	"github.com/gpurent/gpurent/internal/store"
)

// provider is a fake of one provider on 127.0.0.1: the environment a
// machine of it has, the --endpoint values that point gpurent at the
// fake, and the path of its stop (or deallocate) request.
type provider struct {
	name  string
	env   []string
	stop  string // "METHOD /path" of the stop request
	reads map[string]string
}

var providers = []provider{
	{name: "runpod", env: []string{"RUNPOD_POD_ID=pod7", "RUNPOD_API_KEY=rpa_TESTKEY0123456789"}, stop: "POST /pods/pod7/stop"},
	{name: "vast", env: []string{"CONTAINER_ID=4242", "CONTAINER_API_KEY=vast_TESTKEY0123456789", "VAST_CONTAINERLABEL=C.4242"}, stop: "PUT /instances/4242/"},
	{name: "aws", stop: "POST /", reads: map[string]string{
		"PUT /latest/api/token":                               "TOKEN",
		"GET /latest/meta-data/instance-id":                   "i-0123456789abcdef0",
		"GET /latest/meta-data/placement/region":              "eu-west-1",
		"GET /latest/meta-data/iam/security-credentials/":     "role",
		"GET /latest/meta-data/iam/security-credentials/role": `{"AccessKeyId":"ASIA1","SecretAccessKey":"S3CRETS3CRET","Token":"T0KEN"}`}},
	{name: "gcp", stop: "POST /projects/p/zones/z/instances/vm/stop", reads: map[string]string{
		"GET /computeMetadata/v1/instance/id":                             "77",
		"GET /computeMetadata/v1/instance/name":                           "vm",
		"GET /computeMetadata/v1/instance/zone":                           "projects/1/zones/z",
		"GET /computeMetadata/v1/project/project-id":                      "p",
		"GET /computeMetadata/v1/instance/service-accounts/default/token": `{"access_token":"ya29.T0KEN"}`}},
	{name: "azure", stop: "POST /subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/virtualMachines/vm/deallocate", reads: map[string]string{
		"GET /metadata/instance/compute":      `{"subscriptionId":"s","resourceGroupName":"g","name":"vm","vmId":"0f1e"}`,
		"GET /metadata/identity/oauth2/token": `{"access_token":"eyJ.T0KEN"}`}},
}

// fakeProvider serves p's metadata and API; at each request that is not a
// read it calls onCall, and records it.
func fakeProvider(t *testing.T, p provider, onCall func()) (args []string, calls func() []string) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Method + " " + r.URL.Path
		if body, ok := p.reads[key]; ok {
			w.Header().Set("Metadata-Flavor", "Google")
			io.WriteString(w, body)
			return
		}
		onCall()
		mu.Lock()
		got = append(got, key)
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, `{"success": true}`)
	}))
	t.Cleanup(srv.Close)
	gone := httptest.NewServer(http.NotFoundHandler())
	dead := gone.URL
	gone.Close()
	// Every endpoint on loopback: the fake's, or one nothing answers.
	for _, n := range release.EndpointNames() {
		u := dead
		if n == p.name || n == p.name+"-metadata" {
			u = srv.URL
		}
		args = append(args, "--endpoint", n+"="+u)
	}
	return args, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// deadEndpoints points every --endpoint at a loopback port nothing
// listens on.
func deadEndpoints(t *testing.T) []string {
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	var args []string
	for _, n := range release.EndpointNames() {
		args = append(args, "--endpoint", n+"="+gone.URL)
	}
	return args
}

// releaseDirs makes a checkpoint directory, the path of a store and a
// config directory holding a new identity, under base.
func releaseDirs(t *testing.T) (base, ck, st, cfg string) {
	base = t.TempDir()
	ck, st, cfg = filepath.Join(base, "ck"), filepath.Join(base, "store"), filepath.Join(base, "cfg")
	if _, err := store.Keygen(filepath.Join(cfg, "gpurent", "identity.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(ck, 0o755); err != nil {
		t.Fatal(err)
	}
	return base, ck, st, cfg
}

// cleanEnv is this process's environment without what would make it
// look like a rented machine.
func cleanEnv(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "RUNPOD_") || strings.HasPrefix(k, "CONTAINER_") || strings.HasPrefix(k, "VAST_") || strings.HasPrefix(k, "AWS_") || k == "LAMBDA_API_KEY" || strings.HasPrefix(k, "AutoDL") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, extra...)
}

// releaseTrainer saves step-1 to step-3 and exits with $CODE; with
// $MOVE_STORE, it moves the store away before the last one, so that the
// newest checkpoint cannot be committed.
const releaseTrainer = `for i in 1 2 3; do
  if [ $i = 3 ] && [ -n "$MOVE_STORE" ]; then mv "$MOVE_STORE" "$MOVE_STORE.away"; fi
  mkdir -p "$CK/.tmp-$i" && echo $i > "$CK/.tmp-$i/step" && mv "$CK/.tmp-$i" "$CK/step-$i"
  sleep 0.4
done
exit $CODE
`

// TestRunWhenDoneReleasesOnceTheWorkIsSafe: with --when-done stop, a run
// that exits 0 makes exactly one stop request to its provider (RunPod,
// Vast.ai, AWS, GCP, Azure's deallocate, each a fake on 127.0.0.1), and
// only once the store lists the newest checkpoint; a run that fails, or
// whose last upload fails, makes none; a destroy with the store lacking
// the newest checkpoint makes none either.
func TestRunWhenDoneReleasesOnceTheWorkIsSafe(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		for _, c := range []struct {
			name     string
			code     string
			move     bool
			whenDone []string
			wantRC   int
			calls    int
		}{
			{"exit 0", "0", false, []string{"--when-done", "stop"}, 0, 1},
			{"exit 1", "1", false, []string{"--when-done", "stop"}, 1, 0},
			{"upload failed", "0", true, []string{"--when-done", "stop"}, 74, 0},
			{"destroy, newest not stored", "0", true, []string{"--when-done", "destroy", "--when-done-on-failure"}, 74, 0},
		} {
			t.Run(p.name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				base, ck, st, cfg := releaseDirs(t)
				// At the stop request, the store must list step-3 already.
				var listed string
				endpoints, calls := fakeProvider(t, p, func() {
					var out, errb bytes.Buffer
					run(context.Background(), []string{"ckpt", "ls", "--store", st, "--run", "r", "--identity", filepath.Join(cfg, "gpurent", "identity.txt")}, &out, &errb)
					listed = out.String() + errb.String()
				})
				script := filepath.Join(base, "trainer.sh")
				os.WriteFile(script, []byte(releaseTrainer), 0o755)
				move := ""
				if c.move {
					move = st
				}
				args := append([]string{"run", "--ckpt-dir", ck, "--store", st, "--run", "r", "--glob", "step-*", "--max-restarts", "0",
					"--preemption", "none", "--no-status", "--poll", "200ms", "--quiet", "100ms"}, c.whenDone...)
				args = append(append(args, endpoints...), "--", "sh", script)
				cmd := exec.Command(os.Args[0], args...)
				cmd.Env = cleanEnv(append(p.env, "GPURENT_AS_MAIN=1", "XDG_CONFIG_HOME="+cfg, "XDG_STATE_HOME="+t.TempDir(), "GPURENT_NOTIFY=",
					"CK="+ck, "CODE="+c.code, "MOVE_STORE="+move)...)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				err := cmd.Run()
				rc := 0
				if ee, ok := err.(*exec.ExitError); ok {
					rc = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				got := calls()
				if rc != c.wantRC || len(got) != c.calls {
					t.Fatalf("exit %d, want %d; requests %q, want %d; stderr:\n%s", rc, c.wantRC, got, c.calls, stderr.String())
				}
				if c.calls == 1 && (got[0] != p.stop || !strings.Contains(listed, "step-3")) {
					t.Fatalf("request %q, want %q; the store listed at that moment:\n%s", got[0], p.stop, listed)
				}
				if strings.Contains(stderr.String(), "TESTKEY") || strings.Contains(stderr.String(), "T0KEN") || strings.Contains(stderr.String(), "S3CRET") {
					t.Fatalf("a credential in the output:\n%s", stderr.String())
				}
			})
		}
	}
}

// TestRunIdleStop: a command that prints nothing and writes no checkpoint
// is, after --idle-stop 5s, asked for one (SIGUSR1), which is committed,
// and the machine is stopped with one request, within 15 s of the start.
func TestRunIdleStop(t *testing.T) {
	t.Parallel()
	base, ck, st, cfg := releaseDirs(t)
	id := filepath.Join(cfg, "gpurent", "identity.txt")
	var listed string
	endpoints, calls := fakeProvider(t, providers[0], func() {
		var out, errb bytes.Buffer
		run(context.Background(), []string{"ckpt", "ls", "--store", st, "--run", "r", "--identity", id}, &out, &errb)
		listed = out.String()
	})
	trainer := `trap 'mkdir -p "$CK/.t" && echo 1 > "$CK/.t/step" && mv "$CK/.t" "$CK/step-1"' USR1
while :; do sleep 0.1; done`
	args := append([]string{"run", "--ckpt-dir", ck, "--store", st, "--run", "r", "--glob", "step-*", "--log", filepath.Join(base, "train.log"),
		"--idle-stop", "5s", "--preemption", "none", "--no-status", "--poll", "200ms", "--quiet", "100ms"}, endpoints...)
	cmd := exec.Command(os.Args[0], append(args, "--", "sh", "-c", trainer)...)
	cmd.Env = cleanEnv(append(providers[0].env, "GPURENT_AS_MAIN=1", "XDG_CONFIG_HOME="+cfg, "XDG_STATE_HOME="+t.TempDir(), "GPURENT_NOTIFY=", "CK="+ck)...)
	var stderr lockedBuffer
	cmd.Stderr, cmd.Stdout = &stderr, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("still running after 60 s:\n%s", stderr.String())
	}
	took := time.Since(start)
	ee, _ := err.(*exec.ExitError)
	got := calls()
	if ee == nil || ee.ExitCode() != 75 || len(got) != 1 || got[0] != providers[0].stop || !strings.Contains(listed, "step-1") {
		t.Fatalf("exit %v, requests %q, store at the request:\n%s\nstderr:\n%s", err, got, listed, stderr.String())
	}
	if took > 15*time.Second {
		t.Errorf("the stop request came %v after the start, want within 15 s", took)
	}
	// ckpt log says why the machine went away.
	code, out, _ := gpurent(t, "ckpt", "log", "--store", st, "--run", "r", "--identity", id)
	if code != 0 || !strings.Contains(out, "releasing RunPod pod pod7 (stop): the command was idle and is stopped") {
		t.Errorf("ckpt log (exit %d):\n%s", code, out)
	}
}

// TestReleaseCommand: release finds nothing on a plain machine and says
// what it looked for (exit 1); its dry run shows the exact request with
// the key masked and sends nothing; it refuses another machine's --id, a
// destroy while the store lacks a file of the checkpoint directory, and
// otherwise makes exactly one request.
func TestReleaseCommand(t *testing.T) {
	for _, k := range []string{"RUNPOD_POD_ID", "RUNPOD_API_KEY", "CONTAINER_ID", "CONTAINER_API_KEY", "VAST_CONTAINERLABEL", "LAMBDA_API_KEY", "AutoDLContainerUUID", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		t.Setenv(k, "")
	}
	base, ck, st, cfg := releaseDirs(t)
	id := filepath.Join(cfg, "gpurent", "identity.txt")
	endpoints, calls := fakeProvider(t, providers[0], func() {})

	code, _, stderr := gpurent(t, append([]string{"release", "--stop", "--yes"}, endpoints...)...)
	if code != 1 || !strings.Contains(stderr, "no provider found: looked for RunPod (RUNPOD_POD_ID)") || !strings.Contains(stderr, "Azure (IMDS at azure-metadata)") || len(calls()) != 0 {
		t.Fatalf("no provider: exit %d:\n%s", code, stderr)
	}
	t.Setenv("RUNPOD_POD_ID", "pod7")
	t.Setenv("RUNPOD_API_KEY", "rpa_TESTKEY0123456789")
	code, stdout, stderr := gpurent(t, append([]string{"release", "--stop", "--dry-run"}, endpoints...)...)
	if code != 0 || !strings.Contains(stdout, "this machine: RunPod pod pod7") || !regexpMatch(`POST http://127\.0\.0\.1:\d+/pods/pod7/stop\nAuthorization: Bearer rpa_\*\*\*\*`, stdout) ||
		strings.Contains(stdout+stderr, "TESTKEY") || !strings.Contains(stderr, "dry run: nothing was sent") || len(calls()) != 0 {
		t.Fatalf("dry run: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	if code, _, stderr = gpurent(t, append([]string{"release", "--stop", "--yes", "--id", "pod8"}, endpoints...)...); code != 1 || !strings.Contains(stderr, "not pod8") || len(calls()) != 0 {
		t.Fatalf("--id of another: exit %d:\n%s", code, stderr)
	}
	if code, _, stderr = gpurent(t, append([]string{"release", "--destroy", "--yes"}, endpoints...)...); code != 2 || !strings.Contains(stderr, "--nothing-to-keep") {
		t.Fatalf("destroy without a store: exit %d:\n%s", code, stderr)
	}

	// A run commits step-1 and step-2; a step-3 appears after it.
	script := filepath.Join(base, "trainer.sh")
	os.WriteFile(script, []byte(`for i in 1 2; do mkdir -p "$CK/.t$i" && echo $i > "$CK/.t$i/step" && mv "$CK/.t$i" "$CK/step-$i"; sleep 0.3; done`), 0o755)
	cmd := exec.Command(os.Args[0], "run", "--ckpt-dir", ck, "--store", st, "--run", "r", "--glob", "step-*", "--preemption", "none", "--no-status",
		"--poll", "200ms", "--quiet", "100ms", "--", "sh", script)
	cmd.Env = cleanEnv("GPURENT_AS_MAIN=1", "XDG_CONFIG_HOME="+cfg, "XDG_STATE_HOME="+t.TempDir(), "GPURENT_NOTIFY=", "CK="+ck)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	os.MkdirAll(filepath.Join(ck, "step-3"), 0o755)
	os.WriteFile(filepath.Join(ck, "step-3", "step"), []byte("3\n"), 0o644)
	safe := []string{"release", "--destroy", "--yes", "--store", st, "--run", "r", "--ckpt-dir", ck, "--identity", id}
	if code, _, stderr = gpurent(t, append(safe, endpoints...)...); code != 1 || !strings.Contains(stderr, "step-3") || !strings.Contains(stderr, "nothing was released") || len(calls()) != 0 {
		t.Fatalf("destroy, newest not stored: exit %d:\n%s", code, stderr)
	}
	os.RemoveAll(filepath.Join(ck, "step-3"))
	code, stdout, stderr = gpurent(t, append(safe, endpoints...)...)
	if got := calls(); code != 0 || len(got) != 1 || got[0] != "DELETE /pods/pod7" || !strings.Contains(stdout, "backup checked") {
		t.Fatalf("destroy: exit %d, requests %q:\n%s\n%s", code, got, stdout, stderr)
	}
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }
