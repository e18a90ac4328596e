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
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
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

// A push killed mid-file leaves a multipart upload that S3 bills and no
// listing shows. Prune finds it under the run, leaves a young one alone
// (it may belong to a push still running) and aborts an old one; push's
// own clean-up does the same.
func TestIncompleteUploadsAborted(t *testing.T) {
	q := weedURL(t)
	if q == "" {
		t.Skip("needs SeaweedFS (bash scripts/test.sh builds it)")
	}
	ctx := context.Background()
	bucket := newBucket(t)
	b, _, err := Open(ctx, "s3://"+bucket+"/ckpt?"+q, OpenOptions{PartSize: 5 << 20, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	mp := s3Multipart(t, ctx, bucket, "ckpt", q)
	// What a killed push leaves: an upload begun, one part sent, never completed.
	begin := func(key string) {
		t.Helper()
		up, err := mp.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(mp.bucket), Key: aws.String(mp.full(key))})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mp.client.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(mp.bucket), Key: aws.String(mp.full(key)),
			UploadId: up.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader(make([]byte, 5<<20))}); err != nil {
			t.Fatal(err)
		}
	}
	killed := "runs/r/data/20261130T000000.000Z-deadbeef/000003"
	begin(killed)
	begin("runs/other/data/20261130T000000.000Z-cafef00d/000000") // another run's: not this prune's business
	src := filepath.Join(t.TempDir(), "step.txt")
	if err := os.WriteFile(src, []byte("1200\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cr, _ := newCrypto(t)
	if _, err := New(b, Options{Crypto: cr}).Push(ctx, src, "r"); err != nil { // grace 10 min: the young upload stays
		t.Fatal(err)
	}
	if ups, _ := b.(uploads).IncompleteUploads(ctx, "runs/", time.Time{}); len(ups) != 2 {
		t.Fatalf("after a push with the default grace, %d incomplete uploads, want both still there", len(ups))
	}
	s := New(&Retrying{Backend: b}, Options{Crypto: cr, Grace: -1})
	p, err := s.PlanPrune(ctx, "r", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Uploads) != 1 || p.Uploads[0].Key != killed || len(p.Checkpoints) != 0 {
		t.Fatalf("plan %+v, want the killed upload of run r only", p)
	}
	r, err := s.Prune(ctx, "r", 1)
	if err != nil || r.Uploads != 1 {
		t.Fatalf("prune %+v %v, want 1 upload aborted", r, err)
	}
	ups, _ := b.(uploads).IncompleteUploads(ctx, "runs/", time.Time{})
	if len(ups) != 1 || !strings.HasPrefix(ups[0].Key, "runs/other/") {
		t.Errorf("left %+v, want only the other run's upload", ups)
	}
	if list, _ := s.List(ctx, "r"); len(list) != 1 {
		t.Errorf("the committed checkpoint is gone: %d left", len(list))
	}
}

// Credentials allowed to push need not be allowed to list multipart
// uploads (s3:ListBucketMultipartUploads): push still works, and prune
// deletes what it can and says what it could not check.
func TestUploadsNotListable(t *testing.T) {
	q := weedURL(t)
	if q == "" {
		t.Skip("needs SeaweedFS (bash scripts/test.sh builds it)")
	}
	target, _ := url.Parse("http://" + weed.addr)
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.URL.Query()["uploads"]; ok && r.Method == http.MethodGet {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>")
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	ctx := context.Background()
	b, _, err := Open(ctx, "s3://"+newBucket(t)+"/ckpt?endpoint="+srv.URL+"&region=us-east-1&use_path_style=true", OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	src := filepath.Join(t.TempDir(), "step.txt")
	if err := os.WriteFile(src, []byte("1200\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cr, _ := newCrypto(t)
	s := New(&Retrying{Backend: b, Base: time.Millisecond}, Options{Crypto: cr, Grace: -1})
	for range 2 {
		if _, err := s.Push(ctx, src, "r"); err != nil {
			t.Fatalf("push with no right to list uploads: %v", err)
		}
	}
	r, err := s.Prune(ctx, "r", 1)
	if err != nil || len(r.Checkpoints) != 1 || r.UploadsErr == nil || !strings.Contains(r.UploadsErr.Error(), "AccessDenied") {
		t.Errorf("prune %+v %v: want one checkpoint deleted and the uploads' AccessDenied said", r, err)
	}
}

// testMultipart reaches a test bucket's S3 API for what the store never
// does itself: begin a multipart upload and leave it, as a killed push
// does.
type testMultipart struct {
	client         *s3.Client
	bucket, prefix string
}

func (m testMultipart) full(key string) string { return m.prefix + "/" + key }

func s3Multipart(t *testing.T, ctx context.Context, bucket, prefix, query string) testMultipart {
	t.Helper()
	bb, err := blob.OpenBucket(ctx, "s3://"+bucket+"?"+query)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bb.Close() })
	var c *s3.Client
	if !bb.As(&c) {
		t.Fatal("an s3:// bucket without an S3 client")
	}
	return testMultipart{client: c, bucket: bucket, prefix: prefix}
}
