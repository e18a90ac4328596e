package backend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"
)

// unreachable stays silent on what is not about reaching the server, and
// names the host that does not resolve (no lookup is made here).
func TestUnreachableWords(t *testing.T) {
	if why := unreachable(errors.New("AccessDenied")); why != "" {
		t.Errorf("AccessDenied: %q", why)
	}
	dns := &net.DNSError{Err: "no such host", Name: "minio.exmaple.com", IsNotFound: true}
	if why := unreachable(&net.OpError{Op: "dial", Net: "tcp", Err: dns}); why != "the host minio.exmaple.com does not resolve: check the endpoint's name (endpoint= in the store URL)" {
		t.Errorf("no such host: %q", why)
	}
	if why := unreachable(&net.DNSError{Err: "server misbehaving", Name: "x", IsTemporary: true}); why != "" {
		t.Errorf("a DNS server failing is not a name that does not resolve: %q", why)
	}
	// Brief leaves out the SDK's wrappers: the operation, then the cause.
	slow := &OpError{Op: "read", Key: "runs/r/data/x", Err: fmt.Errorf("operation error S3: GetObject, exceeded maximum number of attempts, 3: %w", errors.New("SlowDown: reduce your request rate"))}
	if b := Brief(slow); b != "read runs/r/data/x: SlowDown: reduce your request rate" {
		t.Errorf("Brief: %q", b)
	}
}

// TestRetryFor: with For, a store that answered and then went down for
// longer than the five tries would last (issue #58: a push gave up on an
// S3 outage of about 10 s) is tried until it answers again, and one that
// stays down is given up once For has passed, not sooner and not much
// later; a store that never answered (a wrong address), and any without
// For, get five tries.
func TestRetryFor(t *testing.T) {
	down := errors.New("connection refused")
	ok := func() error { return nil }
	tries := 0
	r := &Retrying{Base: time.Microsecond, For: time.Hour}
	r.Do(context.Background(), func() error { tries++; return down })
	if tries != 5 {
		t.Fatalf("never answered: %d tries, want 5", tries)
	}
	upAt := time.Now().Add(150 * time.Millisecond)
	tries = 0
	r = &Retrying{Base: time.Millisecond, For: time.Second}
	r.Do(context.Background(), ok)
	err := r.Do(context.Background(), func() error {
		tries++
		if time.Now().Before(upAt) {
			return down
		}
		return nil
	})
	if err != nil || tries < 6 {
		t.Fatalf("an outage shorter than For: %v after %d tries", err, tries)
	}
	start := time.Now()
	var lefts []int
	r = &Retrying{Base: time.Millisecond, For: 200 * time.Millisecond, Retried: func(_ error, _ time.Duration, left int) { lefts = append(lefts, left) }}
	r.Do(context.Background(), ok)
	err = r.Do(context.Background(), func() error { return down })
	if took := time.Since(start); !errors.Is(err, down) || took < 200*time.Millisecond || took > 2*time.Second || len(lefts) == 0 || lefts[0] != -1 {
		t.Fatalf("an outage longer than For: %v after %v, lefts %v", err, took, lefts)
	}
	tries = 0
	(&Retrying{Base: time.Microsecond}).Do(context.Background(), func() error { tries++; return down })
	if tries != 5 {
		t.Fatalf("without For: %d tries, want 5", tries)
	}
}

// TestTransientByWholeWords: a failure whose message holds a path with
// "503" or "EOF" inside other characters (a temporary directory's random
// name, as in a CI run of 2026-12-08 that retried a FIFO's refusal for
// 10 minutes) is not transient; an HTTP 503 and an unexpected EOF are.
func TestTransientByWholeWords(t *testing.T) {
	for msg, want := range map[string]bool{
		"/tmp/TestFIFOsAnswered0123ab544503556/store/x.json is a FIFO, not a regular file": false,
		"/tmp/xEOFy/x.json is a FIFO, not a regular file":                                  false,
		"api error SlowDown: Please reduce your request rate":                              true,
		"StatusCode: 503, RequestID: 1":                                                    true,
		"unexpected EOF":                                                                   true,
		"dial tcp 127.0.0.1:9: connect: connection refused":                                true,
	} {
		if got := Transient(errors.New(msg)); got != want {
			t.Errorf("Transient(%q) = %v, want %v", msg, got, want)
		}
	}
}
