package audit

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gpurent/gpurent/internal/userfile"
)

// SSHFacts are sshd's settings that decide who can log in with what.
type SSHFacts struct {
	// Source: "sshd -T" (effective settings), the configuration file read,
	// or "" when this machine has no sshd configuration.
	Source   string            `json:"source"`
	Settings map[string]string `json:"settings"`
	// Defaulted names the settings no file sets, taken from OpenSSH's
	// defaults.
	Defaulted []string `json:"defaulted,omitempty"`
	// Match: the files have Match blocks, which can override the global
	// settings for some users or addresses. Their conditions are not
	// evaluated (they depend on who connects from where); MatchBlocks
	// lists what each sets, so that one that opens passwords to some
	// users is judged, not hidden behind the global "no".
	Match       bool       `json:"match,omitempty"`
	MatchBlocks []SSHMatch `json:"match_blocks,omitempty"`
	Note        string     `json:"note,omitempty"`
}

// SSHMatch is one Match block of sshd's files and the judged settings it
// gives the connections its condition selects.
type SSHMatch struct {
	Condition string            `json:"condition"` // "User git", "Address 10.0.0.0/8"
	File      string            `json:"file"`
	Settings  map[string]string `json:"settings"`
}

// sshDefaults are OpenSSH's defaults for the settings judged: what the
// upstream sshd_config shows commented out ("options ... with their default
// value where possible, but leave them commented"): PasswordAuthentication
// yes, PermitEmptyPasswords no, PermitRootLogin prohibit-password,
// KbdInteractiveAuthentication yes.
func sshDefaults() map[string]string {
	return map[string]string{
		"passwordauthentication":       "yes",
		"permitemptypasswords":         "no",
		"permitrootlogin":              "prohibit-password",
		"kbdinteractiveauthentication": "yes",
		"usepam":                       "no",
	}
}

// sshAliases: older names sshd still accepts.
func sshAliases() map[string]string {
	return map[string]string{"challengeresponseauthentication": "kbdinteractiveauthentication"}
}

func sshFacts(ctx context.Context, e Env) SSHFacts {
	want := sshDefaults()
	s := SSHFacts{Settings: map[string]string{}}
	main := e.path("etc/ssh/sshd_config")
	_, statErr := os.Stat(main)
	// The files are read in any case: sshd -T prints the settings of a
	// connection that matches no Match block, so the blocks come from
	// the files.
	r := sshReader{e: e, set: map[string]string{}, seen: map[string]bool{}}
	if statErr == nil {
		r.read(main, 0, -1)
	}
	s.Match, s.MatchBlocks = len(r.matches) > 0, r.matches
	if e.SSHD != nil {
		if out, err := e.SSHD(ctx); err == nil && len(out) > 0 {
			s.Source = "sshd -T"
			for _, line := range strings.Split(string(out), "\n") {
				f := strings.Fields(line)
				if len(f) >= 2 {
					if _, ok := want[f[0]]; ok {
						s.Settings[f[0]] = strings.ToLower(f[1])
					}
				}
			}
			return s
		}
	}
	if statErr != nil {
		return s
	}
	s.Source = "/etc/ssh/sshd_config"
	s.Note = "sshd -T was not available (it needs root); settings read from the files"
	s.Settings = r.set
	for k, v := range want {
		if _, ok := s.Settings[k]; !ok {
			s.Settings[k] = v
			s.Defaulted = append(s.Defaulted, k)
		}
	}
	sort.Strings(s.Defaulted)
	return s
}

// sshReader follows sshd_config's rules: the first value obtained for a
// keyword wins, Include pulls files in (globs, relative to /etc/ssh) where
// it stands, and a Match line starts a conditional block that lasts to the
// next Match or the end of its file; an Include inside a block belongs to
// it.
type sshReader struct {
	e       Env
	set     map[string]string
	seen    map[string]bool
	matches []SSHMatch
}

// read reads one file; block is the index in matches of the Match block
// the file was included from, -1 outside any.
func (r *sshReader) read(path string, depth, block int) {
	if depth > 8 || r.seen[path] {
		return
	}
	r.seen[path] = true
	f, _, err := userfile.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	want := sshDefaults()
	sc := bufio.NewScanner(io.LimitReader(f, maxConfig))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		key, val := splitKV(line)
		key = strings.ToLower(key)
		if a, ok := sshAliases()[key]; ok {
			key = a
		}
		switch {
		case key == "match":
			shown, _ := filepath.Rel(r.e.path("/"), path)
			r.matches = append(r.matches, SSHMatch{Condition: val, File: "/" + shown, Settings: map[string]string{}})
			block = len(r.matches) - 1
		case key == "include":
			for _, pat := range strings.Fields(val) {
				if !filepath.IsAbs(pat) {
					pat = filepath.Join("/etc/ssh", pat)
				}
				files, _ := filepath.Glob(r.e.path(pat))
				sort.Strings(files)
				for _, inc := range files {
					r.read(inc, depth+1, block)
				}
			}
		default:
			if _, ok := want[key]; !ok {
				continue
			}
			set := r.set
			if block >= 0 {
				set = r.matches[block].Settings
			}
			if _, done := set[key]; !done {
				set[key] = strings.ToLower(strings.Trim(val, `"`))
			}
		}
	}
}

func splitKV(line string) (string, string) {
	i := strings.IndexAny(line, " \t=")
	if i < 0 {
		return line, ""
	}
	return line[:i], strings.TrimLeft(line[i:], " \t=")
}

// AuthKey is one line of authorized_keys: who can log in as this user.
type AuthKey struct {
	File        string   `json:"file"`
	Type        string   `json:"type"`
	Fingerprint string   `json:"fingerprint"` // as ssh-keygen -l prints it
	Comment     string   `json:"comment"`
	Options     []string `json:"options,omitempty"` // option names only
}

func authorizedKeys(home string) []AuthKey {
	out := []AuthKey{}
	for _, name := range []string{"authorized_keys", "authorized_keys2"} {
		path := filepath.Join(home, ".ssh", name)
		// The user's own file, which anything the user runs can replace:
		// read without blocking, a regular file, capped.
		b, err := userfile.Read(path, maxConfig)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if k, ok := parseAuthKey(strings.TrimSpace(line)); ok {
				k.File = path
				out = append(out, k)
			}
		}
	}
	return out
}

// parseAuthKey reads "[options] type base64 [comment]". The options may
// hold quoted spaces, so the key is found by its type.
func parseAuthKey(line string) (AuthKey, bool) {
	if line == "" || line[0] == '#' {
		return AuthKey{}, false
	}
	f := strings.Fields(line)
	for i := 0; i+1 < len(f); i++ {
		if !keyType(f[i]) {
			continue
		}
		blob, err := base64.StdEncoding.DecodeString(f[i+1])
		if err != nil {
			continue
		}
		sum := sha256.Sum256(blob)
		k := AuthKey{Type: f[i], Fingerprint: "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:]),
			Comment: strings.Join(f[i+2:], " ")}
		if i > 0 {
			for _, o := range strings.Split(strings.Join(f[:i], " "), ",") {
				name, _, _ := strings.Cut(strings.TrimSpace(o), "=")
				if optionName(name) {
					k.Options = append(k.Options, name)
				}
			}
		}
		return k, true
	}
	return AuthKey{}, false
}

func keyType(s string) bool {
	return strings.HasPrefix(s, "ssh-") || strings.HasPrefix(s, "ecdsa-sha2-") || strings.HasPrefix(s, "sk-")
}

// optionName: authorized_keys option names are letters and dashes; pieces
// of a quoted command that was split on its commas are not.
func optionName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && r != '-' {
			return false
		}
	}
	return true
}
