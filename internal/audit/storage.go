package audit

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/mounts"
)

// Volume is the file system under one path that matters to the tenant.
type Volume struct {
	Path      string `json:"path"`
	Mount     string `json:"mount"`
	FSType    string `json:"fstype"`
	Source    string `json:"source"`
	Encrypted *bool  `json:"encrypted"` // nil: cannot tell from here
	Via       string `json:"via,omitempty"`
	Network   bool   `json:"network,omitempty"`
	Overlay   bool   `json:"overlay,omitempty"`
	Memory    bool   `json:"memory,omitempty"`
}

func volumeOf(tab mounts.Table, path string) (Volume, bool) {
	m, ok := tab.Find(path)
	if !ok {
		return Volume{}, false
	}
	v := Volume{Path: path, Mount: m.Point, FSType: m.FSType, Source: m.Source,
		Network: m.Network(), Overlay: m.Overlay(), Memory: m.Memory()}
	if enc, via, ok := tab.Encryption(m); ok {
		v.Encrypted, v.Via = &enc, via
	}
	return v, true
}

// volumes: the root, the home, the working directory and the data
// directories that exist; one entry per mount. Swap from /proc/swaps.
func volumes(e Env, tab mounts.Table, unseen func(string)) (vols, swap []Volume) {
	vols, swap = []Volume{}, []Volume{}
	paths := []string{e.path("/"), e.Home, e.Cwd}
	for _, p := range dataRoots() {
		paths = append(paths, e.path(p))
	}
	paths = append(paths, e.DataDirs...)
	seen := map[string]bool{}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			continue
		}
		v, ok := volumeOf(tab, p)
		if !ok || seen[v.Mount] {
			continue
		}
		seen[v.Mount] = true
		vols = append(vols, v)
	}
	b, err := os.ReadFile(e.path("proc/swaps"))
	if err != nil {
		unseen(i18n.Key("swap: no /proc/swaps"))
		return vols, swap
	}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		dev := f[0]
		var v Volume
		switch {
		case strings.HasPrefix(dev, "/dev/zram"):
			v = Volume{Path: dev, Source: dev, FSType: "swap", Memory: true}
		case f[1] == "file":
			v, _ = volumeOf(tab, e.path(dev))
			v.Path = dev
		default:
			v = Volume{Path: dev, Source: dev, FSType: "swap"}
			if enc, via, ok := tab.Encryption(mounts.Mount{Source: dev, FSType: "swap"}); ok {
				v.Encrypted, v.Via = &enc, via
			}
		}
		swap = append(swap, v)
	}
	return vols, swap
}

// DockerSocket is a Docker daemon socket and whether this user can talk
// to it: whoever can is root on the host and can read every container's
// files.
type DockerSocket struct {
	Path      string `json:"path"`
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
}

func dockerSockets(root string) []DockerSocket {
	out := []DockerSocket{}
	seen := map[string]bool{}
	for _, p := range []string{"var/run/docker.sock", "run/docker.sock"} {
		path := filepath.Join(root, p)
		st, err := os.Stat(path)
		if err != nil || st.Mode()&os.ModeSocket == 0 {
			continue
		}
		if real, err := filepath.EvalSymlinks(path); err == nil {
			if seen[real] {
				continue
			}
			seen[real] = true
		}
		s := DockerSocket{Path: "/" + p}
		c, err := net.DialTimeout("unix", path, 300*time.Millisecond)
		if err == nil {
			c.Close()
			s.Reachable = true
		} else {
			s.Error = err.Error()
		}
		out = append(out, s)
	}
	return out
}
