package backend

import (
	"errors"
	"fmt"
	"net"
	"testing"
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
