package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// strictS3 stands in front of SeaweedFS and answers as Alibaba Cloud OSS
// does, in public bug reports, to the AWS SDK's streaming checksums: 400
// InvalidArgument for an aws-chunked body, a STREAMING-* payload hash, a
// checksum trailer or a flexible-checksum header. Everything else passes
// through.
type strictS3 struct {
	mu       sync.Mutex
	refused  []string
	requests int
}

func (s *strictS3) why(r *http.Request) string {
	h := r.Header
	switch {
	case strings.Contains(h.Get("Content-Encoding"), "aws-chunked"):
		return "Content-Encoding: " + h.Get("Content-Encoding")
	case strings.HasPrefix(h.Get("X-Amz-Content-Sha256"), "STREAMING-"):
		return "x-amz-content-sha256: " + h.Get("X-Amz-Content-Sha256")
	case h.Get("X-Amz-Trailer") != "":
		return "x-amz-trailer: " + h.Get("X-Amz-Trailer")
	case h.Get("X-Amz-Sdk-Checksum-Algorithm") != "":
		return "x-amz-sdk-checksum-algorithm: " + h.Get("X-Amz-Sdk-Checksum-Algorithm")
	}
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), "x-amz-checksum-") {
			return k
		}
	}
	return ""
}

func (s *strictS3) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests++
		why := s.why(r)
		if why != "" {
			s.refused = append(s.refused, r.Method+" "+r.URL.Path+" ("+why+")")
		}
		s.mu.Unlock()
		if why != "" {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "<Error><Code>InvalidArgument</Code><Message>aws-chunked encoding is not supported with the specified x-amz-content-sha256 value.</Message></Error>")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// S3-compatible services that reject the SDK's streaming checksums (OSS)
// still take gpurent's checkpoints, single-part and multipart: the
// store asks for checksums only where S3 requires them. The same store with
// the SDK's default, when_supported, is refused, so the strict server is
// seen to catch what it stands for.
func TestS3WithoutStreamingChecksums(t *testing.T) {
	q := weedURL(t)
	if q == "" {
		t.Skip("needs SeaweedFS (bash scripts/test.sh builds it)")
	}
	target, _ := url.Parse("http://" + weed.addr)
	src := t.TempDir()
	big := make([]byte, 11<<20+5) // three 5 MiB parts
	rand.Read(big)
	if err := os.WriteFile(filepath.Join(src, "model.pt"), big, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "step.txt"), []byte("1200\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cr, _ := newCrypto(t)
	// Over https as well: there the SDK streams (aws-chunked, unsigned
	// payload with a trailer) where over http it hashes the body.
	for _, tc := range []struct {
		name, param string
		tls         bool
		refused     bool
	}{
		{"default", "", false, false},
		{"default_https", "", true, false},
		{"when_supported", "&request_checksum_calculation=when_supported", false, true},
		{"when_supported_https", "&request_checksum_calculation=when_supported", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			strict := &strictS3{}
			srv := httptest.NewUnstartedServer(strict.handler(httputil.NewSingleHostReverseProxy(target)))
			if tc.tls {
				srv.StartTLS()
				ca := filepath.Join(t.TempDir(), "ca.pem")
				if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Setenv("AWS_CA_BUNDLE", ca)
			} else {
				srv.Start()
			}
			defer srv.Close()
			raw := "s3://" + newBucket(t) + "/ckpt?endpoint=" + srv.URL + "&region=us-east-1&use_path_style=true" + tc.param
			b, _, err := Open(ctx, raw, OpenOptions{PartSize: 5 << 20, Concurrency: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			s := New(&Retrying{Backend: b, Attempts: 1}, Options{Crypto: cr})
			m, err := s.Push(ctx, src, "r")
			strict.mu.Lock()
			refused := append([]string(nil), strict.refused...)
			strict.mu.Unlock()
			if tc.refused {
				if err == nil || len(refused) == 0 {
					t.Fatalf("the SDK's streaming checksums were not refused (push error %v, %d requests): the strict server tests nothing", err, strict.requests)
				}
				t.Logf("refused as OSS would: %s", refused[0])
				return
			}
			if err != nil || len(refused) > 0 {
				t.Fatalf("push: %v; refused as OSS would: %v", err, refused)
			}
			dest := filepath.Join(t.TempDir(), "out")
			if _, err := s.Pull(ctx, "r", m.ID, dest); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(filepath.Join(dest, "model.pt"))
			if !bytes.Equal(got, big) {
				t.Fatal("pulled model.pt differs")
			}
			strict.mu.Lock()
			defer strict.mu.Unlock()
			if len(strict.refused) > 0 {
				t.Errorf("refused on pull: %v", strict.refused)
			}
		})
	}
}
