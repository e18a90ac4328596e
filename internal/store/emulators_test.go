package store

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
)

// The gs:// and azblob:// tests run against fake-gcs-server and Azurite on
// 127.0.0.1, each started once per test binary from the program named by
// GPURENT_FAKE_GCS and GPURENT_AZURITE (scripts/test.sh builds the first
// from the Go module proxy and installs the second from npm). Neither is
// the cloud itself: they speak its API, which is what gpurent's code and
// gocloud's drivers see.

// azuriteAccount and azuriteKey are Azurite's fixed development account
// and key, published in its documentation; they open nothing but a local
// emulator.
const (
	azuriteAccount = "devstoreaccount1"
	azuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// emulator is one server process (an emulator, or SeaweedFS) started on
// first use.
type emulator struct {
	env  string // names the program
	addr string // host:port once it answers
	why  string // why it is not there
	cmd  *exec.Cmd
	dir  string
}

var gcsEmu = &emulator{env: "GPURENT_FAKE_GCS"}
var azEmu = &emulator{env: "GPURENT_AZURITE"}

// start runs the program with args(dir, port) until up(addr) says it
// answers, at most 60 s, and tries twice more, on fresh ports and a fresh
// directory, when it does not: a port freePort found free can be taken
// before the server binds it. Called under the caller's sync.Once.
func (e *emulator) start(args func(dir string, port int) []string, up func(addr string) bool) {
	bin := os.Getenv(e.env)
	if bin == "" {
		e.why = e.env + " is not set: run the tests with bash scripts/test.sh, which provides the server"
		return
	}
	var whys []string
	for attempt := 1; attempt <= 3; attempt++ {
		if e.try(bin, args, up) {
			return
		}
		whys = append(whys, fmt.Sprintf("attempt %d: %s", attempt, e.why))
		e.stop()
		os.RemoveAll(e.dir)
		e.cmd, e.dir = nil, ""
	}
	e.why = strings.Join(whys, "; ")
}

// try is one start: true once the server answers.
func (e *emulator) try(bin string, args func(dir string, port int) []string, up func(addr string) bool) bool {
	dir, err := os.MkdirTemp("", "gpurent-emu-")
	if err != nil {
		e.why = err.Error()
		return false
	}
	e.dir = dir
	port := freePort()
	cmd := exec.Command(bin, args(dir, port)...)
	cmd.SysProcAttr = serverAttr()
	log, _ := os.Create(dir + "/server.log")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		e.why = "start " + bin + ": " + err.Error()
		return false
	}
	e.cmd = cmd
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if up(addr) {
			e.addr = addr
			return true
		}
	}
	b, _ := os.ReadFile(dir + "/server.log")
	e.why = bin + " did not answer on " + addr + " within 60 s: " + string(b[max(0, len(b)-500):])
	return false
}

// ready reports the address, failing the test when the emulator was
// provided but did not start, and logging why it is absent otherwise.
func (e *emulator) ready(t *testing.T) string {
	if e.addr == "" && os.Getenv(e.env) != "" {
		t.Fatalf("%s: %s", e.env, e.why)
	}
	if e.addr == "" {
		t.Logf("not tested: %s", e.why)
	}
	return e.addr
}

func (e *emulator) stop() {
	if e.cmd != nil && e.cmd.Process != nil {
		killGroup(e.cmd.Process)
		e.cmd.Wait()
		os.RemoveAll(e.dir)
	}
}

func answers(url string, codes ...int) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	for _, c := range codes {
		if resp.StatusCode == c {
			return true
		}
	}
	return false
}

// gcsAddr starts fake-gcs-server once (gocloud's gcsblob talks to it when
// STORAGE_EMULATOR_HOST names it).
func gcsAddr(t *testing.T) string {
	emulatorsOnce.gcs.Do(func() {
		gcsEmu.start(func(dir string, port int) []string {
			url := fmt.Sprintf("http://127.0.0.1:%d", port)
			return []string{"-scheme", "http", "-host", "127.0.0.1", "-port", fmt.Sprint(port), "-backend", "filesystem",
				"-filesystem-root", dir + "/data", "-external-url", url, "-public-host", fmt.Sprintf("127.0.0.1:%d", port), "-log-level", "error"}
		}, func(addr string) bool { return answers("http://"+addr+"/storage/v1/b", 200) })
		if gcsEmu.addr != "" {
			os.Setenv("STORAGE_EMULATOR_HOST", gcsEmu.addr)
		}
	})
	return gcsEmu.ready(t)
}

// azuriteAddr starts Azurite's blob service once.
func azuriteAddr(t *testing.T) string {
	emulatorsOnce.az.Do(func() {
		azEmu.start(func(dir string, port int) []string {
			return []string{"--blobHost", "127.0.0.1", "--blobPort", fmt.Sprint(port), "--location", dir, "--skipApiVersionCheck", "--silent"}
		}, func(addr string) bool { return answers("http://"+addr+"/"+azuriteAccount+"?comp=list", 403, 200) })
		if azEmu.addr != "" {
			os.Setenv("AZURE_STORAGE_ACCOUNT", azuriteAccount)
			os.Setenv("AZURE_STORAGE_KEY", azuriteKey)
		}
	})
	return azEmu.ready(t)
}

// newGCSBucket creates a bucket through the JSON API.
func newGCSBucket(t *testing.T, addr string) string {
	t.Helper()
	name := uniqueName()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/storage/v1/b?project=gpurent-test",
		bytes.NewReader([]byte(`{"name": "`+name+`"}`)))
	req.Header.Set("Content-Type", "application/json")
	create(t, req, "GCS bucket "+name)
	return name
}

// newContainer creates an Azure container with the SDK, signed with the
// emulator's account key.
func newContainer(t *testing.T, addr string) string {
	t.Helper()
	name := uniqueName()
	cred, err := azblob.NewSharedKeyCredential(azuriteAccount, azuriteKey)
	if err != nil {
		t.Fatal(err)
	}
	client, err := azblob.NewClientWithSharedKeyCredential("http://"+addr+"/"+azuriteAccount, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CreateContainer(context.Background(), name, nil); err != nil {
		t.Fatalf("create container %s: %v", name, err)
	}
	return name
}
