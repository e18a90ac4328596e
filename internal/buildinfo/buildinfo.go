// Package buildinfo says which gpurent this is: its version, the commit it
// was built from and the Go that built it, for --version and bug reports.
package buildinfo

import "runtime/debug"

// Version is v with the commit it was built from, where
// the build recorded one: a bug report then names the exact code.
func Version(v string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		v += " (" + rev
		if modified == "true" {
			v += ", modified"
		}
		v += ")"
	}
	return v + ", " + info.GoVersion
}
