package probe

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
)

// TorchInstall is a PyTorch found on disk. It is read from the
// torch/version.py that PyTorch's build writes, without starting Python:
// importing torch takes seconds, and a broken install is what bench should
// report rather than trip over.
type TorchInstall struct {
	Path    string `json:"path"`           // the version.py read
	Version string `json:"version"`        // "2.7.0+cu128"
	CUDA    string `json:"cuda,omitempty"` // "12.8"; empty for a CPU-only or ROCm build
	HIP     string `json:"hip,omitempty"`  // the ROCm version of a ROCm build
}

// torchPrefixes are the Python installs rented machines ship: the active
// virtualenv and conda environment, conda's usual homes and their
// environments (AutoDL's images keep conda in /root/miniconda3, PyTorch's
// Docker images in /opt/conda), pyenv's versions, the user's pip --user
// directory and the system's Pythons.
func torchPrefixes(root, home string, lookup func(string) (string, bool)) []string {
	var out []string
	for _, k := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if v, ok := lookup(k); ok && v != "" {
			out = append(out, v)
		}
	}
	// Directories whose subdirectories are prefixes: conda's environments,
	// pyenv's versions.
	var parents []string
	conda := []string{"/opt/conda", "/root/miniconda3", "/root/anaconda3"}
	if home != "" {
		conda = append(conda, filepath.Join(home, "miniconda3"), filepath.Join(home, "anaconda3"), filepath.Join(home, "miniforge3"))
		out = append(out, filepath.Join(home, ".local"))
		parents = append(parents, filepath.Join(home, ".pyenv", "versions"))
	}
	for _, c := range conda {
		out = append(out, c)
		parents = append(parents, filepath.Join(c, "envs"))
	}
	for _, p := range parents {
		subs, _ := filepath.Glob(filepath.Join(root, p, "*"))
		for _, e := range subs {
			if rel, err := filepath.Rel(root, e); err == nil {
				out = append(out, "/"+rel)
			}
		}
	}
	return append(out, "/usr/local", "/usr")
}

var (
	torchVersionRe = regexp.MustCompile(`(?m)^__version__\s*=\s*'([^']+)'`)
	torchCUDARe    = regexp.MustCompile(`(?m)^cuda(?:\s*:\s*Optional\[str\])?\s*=\s*'([0-9][0-9.]*)'`)
	torchHIPRe     = regexp.MustCompile(`(?m)^hip(?:\s*:\s*Optional\[str\])?\s*=\s*'([^']+)'`)
)

// Torch lists the PyTorch installs under root's Python prefixes, each
// once however many paths lead to it.
func Torch(root, home string, lookup func(string) (string, bool)) []TorchInstall {
	var out []TorchInstall
	var seen []string
	for _, prefix := range torchPrefixes(root, home, lookup) {
		var files []string
		for _, pattern := range []string{"lib/python3*/site-packages/torch/version.py", "lib/python3*/dist-packages/torch/version.py", "lib/python3/dist-packages/torch/version.py"} {
			m, _ := filepath.Glob(filepath.Join(root, prefix, pattern))
			files = append(files, m...)
		}
		for _, f := range files {
			real, err := filepath.EvalSymlinks(f)
			if err != nil || slices.Contains(seen, real) {
				continue
			}
			seen = append(seen, real)
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			rel, err := filepath.Rel(root, f)
			if err != nil {
				continue
			}
			t := TorchInstall{Path: "/" + rel}
			if m := torchVersionRe.FindSubmatch(b); m != nil {
				t.Version = string(m[1])
			}
			if m := torchCUDARe.FindSubmatch(b); m != nil {
				t.CUDA = string(m[1])
			}
			if m := torchHIPRe.FindSubmatch(b); m != nil {
				t.HIP = string(m[1])
			}
			if t.Version != "" {
				out = append(out, t)
			}
		}
	}
	return out
}
