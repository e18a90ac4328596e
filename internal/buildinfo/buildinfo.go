// Package buildinfo says which gpurent this is: its version, the commit it
// was built from and the Go that built it, for --version and bug reports.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is v with the commit it was built from, where the build
// recorded one, the platform and whether this build reaches GPUs: a bug
// report then names the exact code, and a user the binary to copy.
func Version(v string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v + ", " + platform("")
	}
	var rev, modified, tags string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		case "-tags":
			tags = s.Value
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
	return v + ", " + info.GoVersion + ", " + platform(tags)
}

// platform is the OS and architecture, and the build's kind: whether it
// loads NVIDIA's libraries (Linux, not built with the nogpu tag).
func platform(tags string) string {
	kind := "GPU build"
	switch {
	case runtime.GOOS != "linux":
		kind = "no GPU access on " + runtime.GOOS
	case strings.Contains(","+tags+",", ",nogpu,"):
		kind = "no-GPU build (static, reaches no GPU)"
	}
	return runtime.GOOS + "/" + runtime.GOARCH + ", " + kind
}
