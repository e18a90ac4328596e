package audit

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
)

// Service is a web service on a port other machines can reach that
// answered gpurent's requests as a notebook or dashboard does: what it is,
// and whether it answers without credentials.
type Service struct {
	Port     int    `json:"port"`
	Addr     string `json:"addr"`
	Kind     string `json:"kind"` // jupyter, tensorboard, ray
	Open     bool   `json:"open"` // answers without a token or password
	URL      string `json:"url"`  // where it answered: scheme, address asked, base path
	Evidence string `json:"evidence"`
}

// Fetch makes one GET request to base (http://host:port or
// https://host:port) for path and returns the status, the Server header and
// the start of the body.
type Fetch func(ctx context.Context, base, path string) (status int, server string, body []byte, err error)

// HTTPGet is Fetch over HTTP or HTTPS: no proxy (a rented box's HTTP_PROXY
// must not see requests for its own ports), no redirects followed (a
// login page is an answer), at most 64 KiB read. The certificate is not
// checked: the request asks this machine's own port what it serves and
// sends nothing secret, and a notebook's certificate is self-signed more
// often than not.
func HTTPGet(ctx context.Context, base, path string) (int, string, []byte, error) {
	client := &http.Client{
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true,
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return 0, "", nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, resp.Header.Get("Server"), body, nil
}

// serviceProbe recognizes one kind of service by a read-only request.
type serviceProbe struct {
	kind, path string
	// judge says whether the answer to the request asked ("GET /api/kernels",
	// with the base path and scheme it went to) is this kind of service,
	// and if so whether it answered without credentials and what shows it.
	judge func(asked string, status int, server string, body []byte) (known, open bool, evidence string)
	// then, when set, is a second path asked once the kind is known, and
	// decide reads whether its answer lets anyone in.
	then   string
	decide func(asked string, status int) (open bool, evidence string)
}

// serviceProbes are the notebooks and dashboards that run code or show
// training data for whoever reaches them:
//   - Jupyter (Notebook 4.3+, Jupyter Server): GET /api/kernels lists the
//     kernels with 200 when no token or password is set, and answers 403
//     (a redirect to the login page on old Notebook releases) when one is
//     (jupyter/notebook#5492, jupyter-server/jupyter_server#1468 show the
//     403s of requests without a token);
//   - TensorBoard: GET /data/environment answers its logdir as JSON
//     (tensorboard/plugins/core/core_plugin.py); TensorBoard has no login;
//   - Ray's dashboard: GET /api/version answers ray_version as JSON
//     (dashboard/modules/job/job_head.py), and its Jobs API beside it runs
//     any command it is sent;
//   - code-server (VS Code in a browser, with a terminal): GET /healthz
//     answers {"status", "lastHeartbeat"} with or without a password
//     (src/node/routes/health.ts); /login is its login page under
//     --auth password and a redirect to / under --auth none
//     (src/node/routes/index.ts).
func serviceProbes() []serviceProbe {
	return []serviceProbe{
		{kind: "jupyter", path: "api/kernels", judge: func(asked string, status int, server string, body []byte) (bool, bool, string) {
			body = bytes.TrimSpace(body)
			switch {
			case status == http.StatusOK && bytes.HasPrefix(body, []byte("[")) && json.Valid(body):
				return true, true, asked + " answered 200 with the kernel list, without a token"
			case strings.HasPrefix(server, "TornadoServer") && (status == http.StatusForbidden || status == http.StatusFound || status == http.StatusUnauthorized):
				return true, false, fmt.Sprintf("%s answered %d without a token", asked, status)
			}
			return false, false, ""
		}},
		{kind: "tensorboard", path: "data/environment", judge: func(asked string, status int, _ string, body []byte) (bool, bool, string) {
			if loc, ok := jsonField(status, body, "data_location"); ok {
				return true, true, fmt.Sprintf("%s answered its logdir %q", asked, loc)
			}
			return false, false, ""
		}},
		{kind: "ray", path: "api/version", judge: func(asked string, status int, _ string, body []byte) (bool, bool, string) {
			if rv, ok := jsonField(status, body, "ray_version"); ok {
				return true, true, fmt.Sprintf("%s answered ray_version %s, without a token", asked, rv)
			}
			return false, false, ""
		}},
		{kind: "code-server", path: "healthz", then: "login",
			judge: func(asked string, status int, _ string, body []byte) (bool, bool, string) {
				var v map[string]any
				if status != http.StatusOK || json.Unmarshal(body, &v) != nil {
					return false, false, ""
				}
				_, beat := v["lastHeartbeat"]
				if st, ok := v["status"].(string); ok && beat {
					return true, false, fmt.Sprintf("%s answered its heartbeat (%s)", asked, st)
				}
				return false, false, ""
			},
			decide: func(asked string, status int) (bool, string) {
				switch {
				case status == http.StatusOK:
					return false, asked + " answered 200: a login page"
				case status >= 300 && status < 400:
					return true, fmt.Sprintf("%s answered %d, a redirect past the login: --auth none", asked, status)
				}
				return false, fmt.Sprintf("%s answered %d", asked, status)
			}},
	}
}

// jsonField is the string field key of a 200 answer that is a JSON object.
func jsonField(status int, body []byte, key string) (string, bool) {
	var v map[string]any
	if status != http.StatusOK || json.Unmarshal(body, &v) != nil {
		return "", false
	}
	s, ok := v[key].(string)
	return s, ok
}

// dialAddr is where this machine reaches a listener: its own address, or
// loopback for one bound to every address.
func dialAddr(l Listener) string {
	a, err := netip.ParseAddr(l.Addr)
	if err != nil {
		return ""
	}
	a = a.Unmap()
	switch {
	case a.IsUnspecified() && a.Is4():
		a = netip.MustParseAddr("127.0.0.1")
	case a.IsUnspecified():
		a = netip.IPv6Loopback()
	}
	return net.JoinHostPort(a.String(), strconv.Itoa(l.Port))
}

// maxServicePorts bounds the ports asked, so that a machine with hundreds
// of listeners still audits in seconds.
const maxServicePorts = 32

// services asks each TCP port that other machines can reach, except
// sshd's, what it is: a few read-only GET requests from this machine, at
// most a second each, all ports at once, under the base path its process
// serves from (rootOf, by PID; asked only for the ports asked). A port that answers plain HTTP with an
// error is asked again over HTTPS (a notebook with a certificate drops
// plain requests). Ports that do not speak HTTP answer nothing and are
// left out.
func services(ctx context.Context, fetch Fetch, ls []Listener, rootOf func(pid int) webRoot, unseen func(string)) []Service {
	out := []Service{}
	if fetch == nil {
		return out
	}
	seen := map[string]bool{}
	type target struct {
		l    Listener
		addr string
	}
	var targets []target
	for _, l := range ls {
		addr := dialAddr(l)
		if !strings.HasPrefix(l.Proto, "tcp") || l.Loopback() || l.Process == "sshd" || l.Port == 22 || addr == "" || seen[addr] {
			continue
		}
		seen[addr] = true
		targets = append(targets, target{l, addr})
	}
	if len(targets) > maxServicePorts {
		unseen(fmt.Sprintf("what answers on %d of the exposed ports (only the first %d were asked)", len(targets)-maxServicePorts, maxServicePorts))
		targets = targets[:maxServicePorts]
	}
	found := make([]*Service, len(targets))
	var wg sync.WaitGroup
	for i, tg := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var root webRoot
			if rootOf != nil {
				root = rootOf(tg.l.PID)
			}
			prefix := root.path()
			schemes := []string{"http", "https"}
			if root.tls {
				schemes = []string{"https"}
			}
			for n, p := range serviceProbes() {
				var status int
				var server, base string
				var body []byte
				err := i18n.Errorf("not asked")
				for _, scheme := range schemes {
					base = scheme + "://" + tg.addr
					c, cancel := context.WithTimeout(ctx, time.Second)
					status, server, body, err = fetch(c, base, prefix+p.path)
					cancel()
					if n == 0 && scheme == "http" && len(schemes) > 1 && (err != nil || plainToTLS(status, body)) {
						continue // perhaps HTTPS
					}
					schemes = []string{scheme} // the rest go where this answered
					break
				}
				if err != nil {
					return // not HTTP, or not answering: nothing more to ask
				}
				asked := "GET " + prefix + p.path
				if strings.HasPrefix(base, "https:") {
					asked += " over HTTPS"
				}
				if known, open, ev := p.judge(asked, status, server, body); known {
					if p.then != "" {
						c, cancel := context.WithTimeout(ctx, time.Second)
						status, _, _, err := fetch(c, base, prefix+p.then)
						cancel()
						if err != nil {
							ev += fmt.Sprintf("; GET %s%s did not answer, so whether it asks for a password is unknown", prefix, p.then)
						} else {
							o, more := p.decide(strings.Replace(asked, p.path, p.then, 1), status)
							open, ev = o, ev+"; "+more
						}
					}
					found[i] = &Service{Port: tg.l.Port, Addr: tg.l.Addr, Kind: p.kind, Open: open, URL: base + prefix, Evidence: ev}
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, s := range found {
		if s != nil {
			out = append(out, *s)
		}
	}
	return out
}

// plainToTLS: the answer of a server that wants HTTPS to a plain request
// (nginx: "The plain HTTP request was sent to HTTPS port"; Go: "Client
// sent an HTTP request to an HTTPS server").
func plainToTLS(status int, body []byte) bool {
	return status == http.StatusBadRequest && bytes.Contains(bytes.ToUpper(body), []byte("HTTPS"))
}

// webRoot is where a listening process serves its web application: the
// base path its URLs start with, and whether it speaks HTTPS. A Jupyter
// with a base_url answers 404 at /api/kernels, and one with a certificate
// drops plain HTTP, so both would pass unseen.
type webRoot struct {
	prefix string // "" or "/x/"
	tls    bool
}

// path is the base path, "/" at least, with a slash at each end.
func (w webRoot) path() string {
	p := strings.Trim(w.prefix, "/")
	if p == "" {
		return "/"
	}
	return "/" + p + "/"
}

// webRootOf says where process pid serves: from the runtime file Jupyter
// writes for `jupyter server list` (jpserver-PID.json; nbserver-PID.json
// for Notebook 6), whose base_url and secure are what the server runs with
// whatever configured them, else from its command line
// (--ServerApp.base_url, --NotebookApp.base_url, --certfile, TensorBoard's
// --path_prefix). Another account's process is unreadable without root:
// false, and the defaults.
func webRootOf(e Env, pid int) (webRoot, bool) {
	if pid <= 0 {
		return webRoot{}, false
	}
	proc := e.path(filepath.Join("proc", strconv.Itoa(pid)))
	if w, ok := jupyterRuntime(e, proc, pid); ok {
		return w, true
	}
	b, err := os.ReadFile(filepath.Join(proc, "cmdline"))
	if err != nil {
		return webRoot{}, false
	}
	return cmdlineRoot(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")), true
}

// jupyterRuntime reads the runtime file of the Jupyter server pid, in the
// runtime directory its environment names (jupyter_core's order:
// $JUPYTER_RUNTIME_DIR, $JUPYTER_DATA_DIR/runtime,
// $XDG_DATA_HOME/jupyter/runtime, ~/.local/share/jupyter/runtime).
func jupyterRuntime(e Env, proc string, pid int) (webRoot, bool) {
	b, err := os.ReadFile(filepath.Join(proc, "environ"))
	if err != nil {
		return webRoot{}, false
	}
	env := map[string]string{}
	for _, kv := range strings.Split(string(b), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	var dirs []string
	if d := env["JUPYTER_RUNTIME_DIR"]; d != "" {
		dirs = append(dirs, d)
	}
	if d := env["JUPYTER_DATA_DIR"]; d != "" {
		dirs = append(dirs, filepath.Join(d, "runtime"))
	}
	if d := env["XDG_DATA_HOME"]; d != "" {
		dirs = append(dirs, filepath.Join(d, "jupyter", "runtime"))
	}
	if d := env["HOME"]; d != "" {
		dirs = append(dirs, filepath.Join(d, ".local", "share", "jupyter", "runtime"))
	}
	for _, d := range dirs {
		for _, name := range []string{"jpserver-%d.json", "nbserver-%d.json"} {
			b, err := os.ReadFile(e.path(filepath.Join(d, fmt.Sprintf(name, pid))))
			if err != nil {
				continue
			}
			var info struct {
				BaseURL string `json:"base_url"`
				Secure  bool   `json:"secure"`
				PID     int    `json:"pid"`
			}
			if json.Unmarshal(b, &info) == nil && info.PID == pid {
				return webRoot{prefix: info.BaseURL, tls: info.Secure}, true
			}
		}
	}
	return webRoot{}, false
}

// cmdlineRoot reads the base path and certificate flags of a command line,
// as --flag=value or --flag value.
func cmdlineRoot(args []string) webRoot {
	var w webRoot
	for i, a := range args {
		flag, val, eq := strings.Cut(a, "=")
		if !eq && i+1 < len(args) {
			val = args[i+1]
		}
		switch flag {
		case "--ServerApp.base_url", "--NotebookApp.base_url", "--path_prefix", "--path-prefix":
			w.prefix = val
		case "--certfile", "--ServerApp.certfile", "--NotebookApp.certfile":
			w.tls = val != ""
		}
	}
	return w
}
