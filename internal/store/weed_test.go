package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"gocloud.dev/blob"
)

// The S3 tests run against a real SeaweedFS server on 127.0.0.1, started
// once per test binary (emulator.start) from the weed binary named by
// GPURENT_WEED (scripts/test.sh builds it from the Go module proxy and sets
// it).

// weed is SeaweedFS; weedQuery the s3 URL parameters that reach it, ""
// when it is not running.
var weed = &emulator{env: "GPURENT_WEED"}
var weedQuery string

func TestMain(m *testing.M) {
	if os.Getenv("GPURENT_STORE_CHILD") != "" {
		childMain()
	}
	if os.Getenv("GPURENT_STORE_PUSHER") != "" {
		pusherMain() // never returns: it is killed
	}
	code := m.Run()
	// SeaweedFS ignores SIGTERM for a long time (DESIGN.md): stop kills.
	for _, e := range []*emulator{weed, gcsEmu, azEmu} {
		e.stop()
	}
	os.Exit(code)
}

// freePort finds a loopback port that is free together with port+10000,
// which SeaweedFS takes for the matching gRPC service (so the port must
// also stay below 55536).
func freePort() int {
	for range 200 {
		p := 20000 + rand.IntN(30000)
		a, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		b, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+10000))
		a.Close()
		if err != nil {
			continue
		}
		b.Close()
		return p
	}
	return 0
}

// weedURL starts SeaweedFS once and returns the s3 URL parameters, or ""
// when no weed binary is available.
func weedURL(t *testing.T) string {
	emulatorsOnce.weed.Do(func() {
		weed.start(func(dir string, s3 int) []string {
			master, volume, filer := freePort(), freePort(), freePort()
			return []string{"server", "-dir=" + dir, "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-volume.max=2000",
				"-master.volumeSizeLimitMB=256", fmt.Sprintf("-master.port=%d", master), fmt.Sprintf("-volume.port=%d", volume),
				"-filer", fmt.Sprintf("-filer.port=%d", filer), "-s3", fmt.Sprintf("-s3.port=%d", s3)}
		}, func(addr string) bool { return answers("http://"+addr, 200) })
		if weed.addr != "" {
			weedQuery = "endpoint=http://" + weed.addr + "&region=us-east-1&use_path_style=true"
			// SeaweedFS without identities accepts any key; the SDK wants one.
			os.Setenv("AWS_ACCESS_KEY_ID", "gpurent-test")
			os.Setenv("AWS_SECRET_ACCESS_KEY", "gpurent-test")
		}
	})
	if weed.ready(t) == "" {
		return ""
	}
	return weedQuery
}

var bucketN struct {
	sync.Mutex
	n int
}

var emulatorsOnce struct{ weed, gcs, az sync.Once }

// uniqueName is a fresh bucket or container name, valid on every store.
func uniqueName() string {
	bucketN.Lock()
	defer bucketN.Unlock()
	bucketN.n++
	return fmt.Sprintf("t%d-%d", time.Now().UnixNano()%1e9, bucketN.n)
}

// newBucket creates a fresh bucket for one test through the S3 API.
func newBucket(t *testing.T) string {
	t.Helper()
	name := uniqueName()
	// SeaweedFS creates a bucket on PUT /bucket.
	req, _ := http.NewRequest(http.MethodPut, "http://"+weed.addr+"/"+name, nil)
	create(t, req, "bucket "+name)
	return name
}

// create sends a request that makes a bucket or container and fails the
// test unless the server answers 2xx.
func create(t *testing.T, req *http.Request, what string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("create %s: HTTP %d", what, resp.StatusCode)
	}
}

func TestS3Errors(t *testing.T) {
	q := weedURL(t)
	if q == "" {
		t.Skip("needs SeaweedFS (bash scripts/test.sh builds it)")
	}
	ctx := context.Background()
	// A missing bucket: a permanent error that says so.
	b, _, err := Open(ctx, "s3://no-such-bucket-here/x?"+q, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := New(&Retrying{Backend: b, Base: time.Millisecond}, Options{})
	_, err = s.Push(ctx, t.TempDir(), "r")
	if err == nil || !strings.Contains(err.Error(), "no-such-bucket-here") {
		t.Errorf("missing bucket: %v", err)
	}
	// An unreachable endpoint: retried, then a clear error.
	b, _, _ = Open(ctx, fmt.Sprintf("s3://x/y?endpoint=http://127.0.0.1:%d&region=us-east-1&use_path_style=true", freePort()), OpenOptions{})
	start := time.Now()
	_, err = New(&Retrying{Backend: b, Base: time.Millisecond, Attempts: 3}, Options{}).List(ctx, "r")
	if err == nil || !strings.Contains(err.Error(), "connect") {
		t.Errorf("unreachable: %v", err)
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("unreachable endpoint took %v", time.Since(start))
	}
	var _ = blob.ListOptions{}
}
