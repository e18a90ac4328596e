package audit

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gpurent/gpurent/internal/check"
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
	codeServer := func(auth bool) http.HandlerFunc { // code-server's routes, as src/node/routes/index.ts mounts them
		return func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.URL.Path == "/healthz":
				w.Write([]byte(`{"status":"alive","lastHeartbeat":1764561600000}`))
			case r.URL.Path == "/login" && auth:
				w.Write([]byte("<html>password</html>"))
			case r.URL.Path == "/login":
				http.Redirect(w, r, "/", http.StatusFound)
			case auth:
				http.Redirect(w, r, "./login", http.StatusFound)
			default:
				w.Write([]byte("<html>workbench</html>"))
			}
		}
	}
	openCS, lockedCS := serve(codeServer(false)), serve(codeServer(true))
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
	for _, p := range []int{openNB, tokenNB, tb, ray, openCS, lockedCS, web, rawPort} {
		ls = append(ls, Listener{Proto: "tcp", Addr: "0.0.0.0", Port: p})
	}
	ls = append(ls, Listener{Proto: "tcp", Addr: "127.0.0.1", Port: lo}, Listener{Proto: "udp", Addr: "0.0.0.0", Port: openNB})
	got := services(context.Background(), HTTPGet, ls, nil, func(string) {})
	byPort := map[int]Service{}
	for _, s := range got {
		byPort[s.Port] = s
	}
	for p, want := range map[int]struct {
		kind string
		open bool
	}{openNB: {"jupyter", true}, tokenNB: {"jupyter", false}, tb: {"tensorboard", true}, ray: {"ray", true},
		openCS: {"code-server", true}, lockedCS: {"code-server", false}} {
		if s, ok := byPort[p]; !ok || s.Kind != want.kind || s.Open != want.open {
			t.Errorf("port %d: %+v, want %s open=%v", p, s, want.kind, want.open)
		}
	}
	if len(got) != 6 {
		t.Errorf("found %d services, want 6: %+v", len(got), got)
	}
	if ev := byPort[openCS].Evidence; ev != "GET /healthz answered its heartbeat (alive); GET /login answered 302, a redirect past the login: --auth none" {
		t.Errorf("code-server without a password: %q", ev)
	}
	if loopbackAsked.Load() != 0 {
		t.Error("a service on loopback alone was asked")
	}

	// The judgement: code for anyone fails, and TensorBoard is named too.
	c := checkByID(t, Judge(Facts{Services: got}), "net.services")
	if c.Status != check.Fail || !strings.Contains(c.Evidence.String(), "jupyter on port") || !strings.Contains(c.Evidence.String(), "ray on port") ||
		!strings.Contains(c.Evidence.String(), `readable by anyone: tensorboard on port`) || !strings.Contains(c.Evidence.String(), `logdir "/root/runs"`) {
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
	if c := checkByID(t, Judge(Facts{Services: tbOnly}), "net.services"); c.Status != check.Warn || c.Advice.String() == "" {
		t.Errorf("TensorBoard alone: %+v", c)
	}
	if c := checkByID(t, Judge(Facts{Services: closed}), "net.services"); c.Status != check.Pass || !strings.Contains(c.Evidence.String(), "asks for credentials: jupyter") {
		t.Errorf("a notebook with a token: %+v", c)
	}
}

// handshakeFirst accepts only connections that complete a TLS handshake
// and drops the rest, as Tornado does with a plain request to a notebook
// that has a certificate.
type handshakeFirst struct {
	net.Listener
	cfg *tls.Config
}

func (l handshakeFirst) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		tc := tls.Server(c, l.cfg)
		if tc.Handshake() != nil {
			c.Close()
			continue
		}
		return tc, nil
	}
}

// TestServicesWhereTheyServe: notebooks over HTTPS (one answering plain
// HTTP with 400, one dropping it) and under a base_url are found, asked
// where their process says they serve.
func TestServicesWhereTheyServe(t *testing.T) {
	kernels := func(path string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == path {
				w.Write([]byte(`[]`))
				return
			}
			http.NotFound(w, r)
		}
	}
	port := func(s *httptest.Server) int { return s.Listener.Addr().(*net.TCPAddr).Port }
	tlsNB := httptest.NewTLSServer(kernels("/api/kernels")) // plain HTTP gets a 400
	t.Cleanup(tlsNB.Close)
	raw, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dropper := &http.Server{Handler: kernels("/api/kernels")}
	go dropper.Serve(handshakeFirst{raw, tlsNB.TLS})
	t.Cleanup(func() { dropper.Close() })
	dropPort := raw.Addr().(*net.TCPAddr).Port
	based := httptest.NewServer(kernels("/nb/api/kernels"))
	t.Cleanup(based.Close)
	basedTLS := httptest.NewTLSServer(kernels("/lab/x/api/kernels"))
	t.Cleanup(basedTLS.Close)

	ls := []Listener{
		{Proto: "tcp", Addr: "0.0.0.0", Port: port(tlsNB)},
		{Proto: "tcp", Addr: "0.0.0.0", Port: dropPort},
		{Proto: "tcp", Addr: "0.0.0.0", Port: port(based), PID: 4242},
		{Proto: "tcp", Addr: "0.0.0.0", Port: port(basedTLS), PID: 4243},
	}
	roots := map[int]webRoot{4242: {prefix: "/nb"}, 4243: {prefix: "lab/x/", tls: true}}
	rootOf := func(pid int) webRoot { return roots[pid] }
	got := services(context.Background(), HTTPGet, ls, rootOf, func(string) {})
	byPort := map[int]Service{}
	for _, s := range got {
		byPort[s.Port] = s
	}
	for p, want := range map[int]string{
		port(tlsNB):    "https://127.0.0.1:%d/",
		dropPort:       "https://127.0.0.1:%d/",
		port(based):    "http://127.0.0.1:%d/nb/",
		port(basedTLS): "https://127.0.0.1:%d/lab/x/",
	} {
		s, ok := byPort[p]
		if want = fmt.Sprintf(want, p); !ok || s.Kind != "jupyter" || !s.Open || s.URL != want {
			t.Errorf("port %d: %+v, want an open jupyter at %s", p, s, want)
		}
	}
	if s := byPort[port(basedTLS)]; s.Evidence != "GET /lab/x/api/kernels over HTTPS answered 200 with the kernel list, without a token" {
		t.Errorf("evidence %q", s.Evidence)
	}
	// Without the roots, the notebooks under a base path are not seen.
	if got := services(context.Background(), HTTPGet, ls[2:], nil, func(string) {}); len(got) != 0 {
		t.Errorf("found without their base paths: %+v", got)
	}
}

// TestWebRoots reads where processes serve from a fake /proc and home:
// Jupyter's runtime file (found through the process's environment) over
// its command line, and command-line flags in both forms.
func TestWebRoots(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "proc/4242/environ"), "PATH=/usr/bin\x00HOME=/home/ann\x00", 0o600)
	write(t, filepath.Join(root, "proc/4242/cmdline"), "jupyter-lab\x00--ServerApp.base_url=/wrong/\x00", 0o644)
	write(t, filepath.Join(root, "home/ann/.local/share/jupyter/runtime/jpserver-4242.json"),
		`{"base_url": "/user/ann/", "secure": true, "pid": 4242, "port": 8888, "token": ""}`, 0o600)
	write(t, filepath.Join(root, "proc/4243/environ"), "JUPYTER_RUNTIME_DIR=/run/jr\x00HOME=/root\x00", 0o600)
	write(t, filepath.Join(root, "run/jr/nbserver-4243.json"), `{"base_url": "/", "secure": false, "pid": 4243}`, 0o600)
	write(t, filepath.Join(root, "proc/4244/cmdline"), "python3\x00-m\x00tensorboard.main\x00--logdir\x00runs\x00--path_prefix\x00/tb\x00", 0o644)
	write(t, filepath.Join(root, "proc/4245/cmdline"), "jupyter-notebook\x00--NotebookApp.base_url=/nb/\x00--certfile=/c.pem\x00", 0o644)
	write(t, filepath.Join(root, "proc/4246/environ"), "HOME=/home/bob\x00", 0o600) // a runtime file of another pid
	write(t, filepath.Join(root, "home/bob/.local/share/jupyter/runtime/jpserver-4246.json"), `{"base_url": "/stale/", "pid": 999}`, 0o600)
	var ls []Listener
	for _, pid := range []int{4242, 4243, 4244, 4245, 4246, 0} {
		ls = append(ls, Listener{Proto: "tcp", Addr: "0.0.0.0", Port: 8000 + pid%100, PID: pid})
	}
	got := map[int]webRoot{}
	for _, l := range ls {
		if w, ok := webRootOf(Env{Root: root}, l.PID); ok {
			got[l.PID] = w
		}
	}
	want := map[int]webRoot{4242: {"/user/ann/", true}, 4243: {"/", false}, 4244: {"/tb", false}, 4245: {"/nb/", true}}
	for pid, w := range want {
		if got[pid] != w {
			t.Errorf("pid %d: %+v, want %+v", pid, got[pid], w)
		}
	}
	if w := got[4246]; w.prefix != "" || w.tls {
		t.Errorf("a runtime file naming another pid was used: %+v", w)
	}
	if _, ok := got[0]; ok {
		t.Error("a listener without a process got a root")
	}
	if p := (webRoot{prefix: "tb"}).path(); p != "/tb/" {
		t.Errorf("path %q", p)
	}
}
