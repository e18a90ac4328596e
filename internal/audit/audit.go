// Package audit looks at a rented machine from the tenant's side: who else
// is on it, what listens on the network, which secrets lie where others can
// read them, what an earlier tenant or the image left behind, and whether
// the disks are encrypted. Like package bench it gathers facts first and
// judges them in a pure function, so every judgement is tested against a
// fake root and a fake home, never the real ones.
package audit

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/mounts"
	"github.com/gpurent/gpurent/internal/probe"
)

// Env is what the audit looks at. System files (proc, etc, var, run, sys,
// tmp) are read under Root; Home, Cwd and DataDirs are real paths.
type Env struct {
	Root     string // "/" on the real machine
	Home     string
	Cwd      string
	UID      int
	Lookup   func(key string) (string, bool)
	Now      func() time.Time
	DataDirs []string // more directories to look for leftovers in
	// Since is when this tenancy began; zero means the start of PID 1
	// (the boot of a VM, the start of a container).
	Since time.Time
	// SSHD returns `sshd -T` output; nil or an error falls back to the
	// configuration files.
	SSHD func(ctx context.Context) ([]byte, error)
	// GPU gathers part 2's GPU facts; nil skips them.
	GPU func(ctx context.Context) probe.GPUFacts
	// Fetch asks the exposed ports what answers there (a notebook, a
	// dashboard); nil asks nothing.
	Fetch Fetch
	// Budget bounds the walk for leftovers, so the audit stays quick on a
	// disk with millions of files; what it did not reach it says.
	Budget time.Duration
}

// RealEnv is this process on this machine.
func RealEnv() Env {
	home, _ := os.UserHomeDir()
	cwd, _ := os.Getwd()
	return Env{
		Root: "/", Home: home, Cwd: cwd, UID: os.Getuid(), Lookup: os.LookupEnv, Now: time.Now,
		SSHD: realSSHD, Fetch: HTTPGet,
		GPU: func(ctx context.Context) probe.GPUFacts {
			return probe.GPU(ctx, probe.GPUOptions{Window: 200 * time.Millisecond})
		},
	}
}

// realSSHD runs `sshd -T`, which prints the effective settings; without
// root it usually fails for want of the host keys, and the caller reads
// the configuration files instead.
func realSSHD(ctx context.Context) ([]byte, error) {
	bin, err := exec.LookPath("sshd")
	if err != nil {
		for _, p := range []string{"/usr/sbin/sshd", "/sbin/sshd", "/usr/local/sbin/sshd"} {
			if _, e := os.Stat(p); e == nil {
				bin, err = p, nil
				break
			}
		}
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, bin, "-T").Output()
}

// Facts is everything the audit saw.
type Facts struct {
	CollectedAt time.Time `json:"collected_at"`
	User        string    `json:"user"`
	UID         int       `json:"uid"`
	Since       time.Time `json:"since"`
	SinceFrom   string    `json:"since_from"`

	Logins     []Login `json:"logins"`        // other users logged in now
	Recent     []Login `json:"recent_logins"` // other users' logins in the last week
	Processes  []Proc  `json:"processes"`     // other users' processes
	ProcHidden bool    `json:"proc_hidden"`   // /proc mounted with hidepid
	// TokenArgs are your processes with a token on their command line.
	TokenArgs []TokenArg `json:"token_args"`

	SSH  SSHFacts  `json:"ssh"`
	Keys []AuthKey `json:"authorized_keys"`

	Listeners []Listener `json:"listeners"`
	// Services are the notebooks and dashboards found on exposed ports.
	Services []Service `json:"services"`
	Secrets  []Secret  `json:"secrets"`
	// OpenDirs are your home, working directory and data directories
	// that every account on the machine can list and enter.
	OpenDirs []OpenDir `json:"open_dirs"`

	Leftovers   []Leftover `json:"leftovers"`
	ScanPartial string     `json:"scan_partial,omitempty"`

	Volumes []Volume `json:"volumes"`
	Swap    []Volume `json:"swap"`

	Docker []DockerSocket `json:"docker"`

	Sharing probe.SharingFacts `json:"sharing"`
	GPU     probe.GPUFacts     `json:"gpu"`

	Unseen []string `json:"unseen"` // what could not be seen, and why
}

// Gather collects the facts. It never fails: what it cannot read goes to
// Unseen, so the report says what it could not check.
func Gather(ctx context.Context, e Env) Facts {
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.Lookup == nil {
		e.Lookup = func(string) (string, bool) { return "", false }
	}
	if e.Budget <= 0 {
		e.Budget = 2500 * time.Millisecond
	}
	f := Facts{CollectedAt: e.Now().UTC(), UID: e.UID, Logins: []Login{}, Recent: []Login{}, Processes: []Proc{}, TokenArgs: []TokenArg{},
		Keys: []AuthKey{}, Listeners: []Listener{}, Services: []Service{}, Secrets: []Secret{}, OpenDirs: []OpenDir{}, Leftovers: []Leftover{},
		Volumes: []Volume{}, Swap: []Volume{}, Docker: []DockerSocket{}, Unseen: []string{}}
	users := readPasswd(e.Root)
	f.User = users.name(e.UID)
	f.Since, f.SinceFrom = e.Since.UTC(), "--since"
	if e.Since.IsZero() {
		if t, ok := pid1Start(e.Root); ok {
			f.Since, f.SinceFrom = t.UTC(), i18n.Key("start of PID 1 (this boot, or this container)")
		} else {
			f.SinceFrom = i18n.Key("unknown")
			f.Unseen = append(f.Unseen, "when this tenancy began (no /proc/1/stat): pass --since")
		}
	}
	var mu sync.Mutex
	unseen := func(s string) {
		mu.Lock()
		f.Unseen = append(f.Unseen, s)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the slow parts: the walk and NVML
		defer wg.Done()
		f.Leftovers, f.ScanPartial = leftovers(e, f.Since, users)
	}()
	go func() {
		defer wg.Done()
		if e.GPU != nil {
			f.GPU = e.GPU(ctx)
		} else {
			f.GPU = probe.GPUFacts{Error: "not probed", Devices: []probe.Device{}}
		}
	}()
	f.Logins, f.Recent = logins(e, f.User, unseen)
	f.Processes, f.TokenArgs, f.ProcHidden = processes(e, users, unseen)
	f.SSH = sshFacts(ctx, e)
	f.Keys = authorizedKeys(e.Home)
	f.Listeners = listeners(e, users, unseen)
	f.Services = services(ctx, e.Fetch, f.Listeners, func(pid int) webRoot { w, _ := webRootOf(e, pid); return w }, unseen)
	f.Secrets = secrets(e)
	f.OpenDirs = openDirs(e)
	tab := mounts.Read(e.Root)
	f.Volumes, f.Swap = volumes(e, tab, unseen)
	f.Docker = dockerSockets(e.Root)
	f.Sharing = probe.Sharing(probe.Environ{Lookup: e.Lookup, Root: e.Root})
	wg.Wait()
	if e.UID != 0 {
		f.Unseen = append(f.Unseen, "other users' sockets' processes and unreadable home directories (not root)")
	}
	return f
}

// dataRoots are where rented machines keep data: the common data mounts
// (AutoDL's /root/autodl-tmp, RunPod's /workspace, cloud VMs' /mnt and
// /data) and other users' homes.
func dataRoots() []string {
	return []string{"/data", "/root/autodl-tmp", "/workspace", "/mnt", "/home"}
}

func tempRoots() []string { return []string{"/tmp", "/var/tmp", "/dev/shm"} }

func (e Env) path(p string) string { return filepath.Join(e.Root, p) }
