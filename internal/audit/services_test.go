package audit

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gpurent/gpurent/internal/bench"
)

// TestServices runs a notebook without a token, one with, TensorBoard, a
// Ray dashboard, a server that speaks no HTTP and a plain web server, all
// on 127.0.0.1, and lists them as bound to every address: each is told
// apart by its answers. A notebook on loopback alone is not asked.
func TestServices(t *testing.T) {
	serve := func(h http.HandlerFunc) int {
		s := httptest.NewServer(h)
		t.Cleanup(s.Close)
		return s.Listener.Addr().(*net.TCPAddr).Port
	}
	openNB := serve(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/kernels" {
			w.Write([]byte(`[{"id": "k1", "name": "python3"}]`))
			return
		}
		http.NotFound(w, r)
	})
	tokenNB := serve(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", "TornadoServer/6.4.1")
		http.Error(w, "Forbidden", http.StatusForbidden)
	})
	tb := serve(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/data/environment" {
			w.Write([]byte(`{"data_location": "/root/runs", "window_title": "", "version": "2.18.0"}`))
			return
		}
		http.NotFound(w, r)
	})
	ray := serve(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/version" {
			w.Write([]byte(`{"version": "4", "ray_version": "2.40.0", "ray_commit": "abc"}`))
			return
		}
		http.NotFound(w, r)
	})
	web := serve(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>hello</html>")) })
	var loopbackAsked atomic.Int32
	lo := serve(func(w http.ResponseWriter, r *http.Request) { loopbackAsked.Add(1); w.Write([]byte("[]")) })
	raw, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	go func() {
		for {
			c, err := raw.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n"))
			c.Close()
		}
	}()
	rawPort := raw.Addr().(*net.TCPAddr).Port

	var ls []Listener
	for _, p := range []int{openNB, tokenNB, tb, ray, web, rawPort} {
		ls = append(ls, Listener{Proto: "tcp", Addr: "0.0.0.0", Port: p})
	}
	ls = append(ls, Listener{Proto: "tcp", Addr: "127.0.0.1", Port: lo}, Listener{Proto: "udp", Addr: "0.0.0.0", Port: openNB})
	got := services(context.Background(), HTTPGet, ls, func(string) {})
	byPort := map[int]Service{}
	for _, s := range got {
		byPort[s.Port] = s
	}
	for p, want := range map[int]struct {
		kind string
		open bool
	}{openNB: {"jupyter", true}, tokenNB: {"jupyter", false}, tb: {"tensorboard", true}, ray: {"ray", true}} {
		if s, ok := byPort[p]; !ok || s.Kind != want.kind || s.Open != want.open {
			t.Errorf("port %d: %+v, want %s open=%v", p, s, want.kind, want.open)
		}
	}
	if len(got) != 4 {
		t.Errorf("found %d services, want 4: %+v", len(got), got)
	}
	if loopbackAsked.Load() != 0 {
		t.Error("a service on loopback alone was asked")
	}

	// The judgement: code for anyone fails, and TensorBoard is named too.
	c := checkByID(t, Judge(Facts{Services: got}), "net.services")
	if c.Status != bench.Fail || !strings.Contains(c.Evidence, "jupyter on port") || !strings.Contains(c.Evidence, "ray on port") ||
		!strings.Contains(c.Evidence, `readable by anyone: tensorboard on port`) || !strings.Contains(c.Evidence, `logdir "/root/runs"`) {
		t.Errorf("%+v", c)
	}
	var tbOnly, closed []Service
	for _, s := range got {
		switch {
		case s.Kind == "tensorboard":
			tbOnly = append(tbOnly, s)
		case !s.Open:
			closed = append(closed, s)
		}
	}
	if c := checkByID(t, Judge(Facts{Services: tbOnly}), "net.services"); c.Status != bench.Warn || c.Advice == "" {
		t.Errorf("TensorBoard alone: %+v", c)
	}
	if c := checkByID(t, Judge(Facts{Services: closed}), "net.services"); c.Status != bench.Pass || !strings.Contains(c.Evidence, "asks for credentials: jupyter") {
		t.Errorf("a notebook with a token: %+v", c)
	}
}
