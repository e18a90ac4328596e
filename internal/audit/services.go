package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Service is a web service on a port other machines can reach that
// answered gpurent's requests as a notebook or dashboard does: what it is,
// and whether it answers without credentials.
type Service struct {
	Port     int    `json:"port"`
	Addr     string `json:"addr"`
	Kind     string `json:"kind"` // jupyter, tensorboard, ray
	Open     bool   `json:"open"` // answers without a token or password
	Evidence string `json:"evidence"`
}

// Fetch makes one GET request to addr (host:port) for path and returns the
// status, the Server header and the start of the body.
type Fetch func(ctx context.Context, addr, path string) (status int, server string, body []byte, err error)

// HTTPGet is Fetch over plain HTTP: no proxy (a rented box's HTTP_PROXY
// must not see requests for its own ports), no redirects followed (a
// login page is an answer), at most 64 KiB read.
func HTTPGet(ctx context.Context, addr, path string) (int, string, []byte, error) {
	client := &http.Client{
		Transport:     &http.Transport{Proxy: nil, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
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
	// judge says whether the answer is this kind of service, and if so
	// whether it answered without credentials and what shows it.
	judge func(status int, server string, body []byte) (known, open bool, evidence string)
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
//     any command it is sent.
func serviceProbes() []serviceProbe {
	return []serviceProbe{
		{"jupyter", "/api/kernels", func(status int, server string, body []byte) (bool, bool, string) {
			body = bytes.TrimSpace(body)
			switch {
			case status == http.StatusOK && bytes.HasPrefix(body, []byte("[")) && json.Valid(body):
				return true, true, "GET /api/kernels answered 200 with the kernel list, without a token"
			case strings.HasPrefix(server, "TornadoServer") && (status == http.StatusForbidden || status == http.StatusFound || status == http.StatusUnauthorized):
				return true, false, fmt.Sprintf("GET /api/kernels answered %d without a token", status)
			}
			return false, false, ""
		}},
		{"tensorboard", "/data/environment", func(status int, _ string, body []byte) (bool, bool, string) {
			if loc, ok := jsonField(status, body, "data_location"); ok {
				return true, true, fmt.Sprintf("GET /data/environment answered its logdir %q", loc)
			}
			return false, false, ""
		}},
		{"ray", "/api/version", func(status int, _ string, body []byte) (bool, bool, string) {
			if rv, ok := jsonField(status, body, "ray_version"); ok {
				return true, true, fmt.Sprintf("GET /api/version answered ray_version %s, without a token", rv)
			}
			return false, false, ""
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
// most a second each, all ports at once. Ports that do not speak HTTP
// answer nothing and are left out.
func services(ctx context.Context, fetch Fetch, ls []Listener, unseen func(string)) []Service {
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
			for _, p := range serviceProbes() {
				c, cancel := context.WithTimeout(ctx, time.Second)
				status, server, body, err := fetch(c, tg.addr, p.path)
				cancel()
				if err != nil {
					return // not HTTP, or not answering: nothing more to ask
				}
				if known, open, ev := p.judge(status, server, body); known {
					found[i] = &Service{Port: tg.l.Port, Addr: tg.l.Addr, Kind: p.kind, Open: open, Evidence: ev}
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
