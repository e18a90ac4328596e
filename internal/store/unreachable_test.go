package store

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// A store whose server cannot be reached at all says why first, in words,
// before the SDK's chain of wrappers: the endpoint's port refuses, its
// certificate is not trusted, or it speaks plain HTTP. All on loopback.
func TestUnreachableStoreSaysWhy(t *testing.T) {
	home := t.TempDir()
	for k, v := range map[string]string{"AWS_EC2_METADATA_DISABLED": "true", "HOME": home,
		"AWS_CONFIG_FILE": filepath.Join(home, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(home, "credentials"),
		"AWS_REGION": "us-east-1", "AWS_PROFILE": "", "AWS_ACCESS_KEY_ID": "gpurent-test", "AWS_SECRET_ACCESS_KEY": "gpurent-test",
		"AWS_SESSION_TOKEN": "", "SSL_CERT_FILE": ""} {
		t.Setenv(k, v)
	}
	// A port that was just listened on and closed refuses connections.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	tlsSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes fail by design
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	plainSrv := httptest.NewServer(http.NotFoundHandler())
	defer plainSrv.Close()
	for _, c := range []struct{ name, endpoint, want string }{
		{"refused", "http://" + closed, "nothing answers at " + closed + " (connection refused): check the endpoint's host and port"},
		{"untrusted certificate", tlsSrv.URL, "the server's TLS certificate is signed by an authority this machine does not trust"},
		{"plain http as https", "https://" + strings.TrimPrefix(plainSrv.URL, "http://"), "the endpoint speaks plain HTTP: write it as http://"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, _, err := Open(context.Background(), "s3://b/x?use_path_style=true&endpoint="+c.endpoint, OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			_, err = b.List(context.Background(), "runs/")
			var se *OpError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), "list runs/ in ") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("List: %v\nwant a OpError saying %q", err, c.want)
			}
		})
	}
}
