package layers

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const mod = "github.com/gpurent/gpurent/internal/"

// features import none of each other, directly or through another
// package (issue #57: wipe reached into supervise for a file name, and
// audit into bench for the sharing checks, linking the CUDA loader).
var features = []string{"audit", "bench", "wipe", "supervise", "release"}

// costPackages price a task from the catalog: they run on a laptop
// before any machine is rented, so they link no GPU loader and no
// cloud SDK.
var costPackages = []string{"catalog", "catalog/refresh", "billing", "money", "ledger", "usage", "task", "suggest"}

// gpuCode is what loads or drives a GPU at run time.
var gpuCode = []string{mod + "dl", mod + "compute", mod + "probe", mod + "gpuwipe", mod + "gpuwatch", "github.com/ebitengine/purego"}

// cloudSDKs are the clouds' client libraries and the blob layer above
// them.
var cloudSDKs = []string{"github.com/aws/aws-sdk-go-v2", "cloud.google.com/", "github.com/Azure/azure-sdk-for-go", "gocloud.dev/", "google.golang.org/grpc"}

// deps lists every internal package's transitive imports, by package.
func deps(t *testing.T) map[string][]string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command on PATH to list the imports with: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", "../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		m[strings.TrimPrefix(f[0], mod)] = f[1:]
	}
	return m
}

func banned(dep string, list []string) bool {
	for _, b := range list {
		if dep == b || strings.HasPrefix(dep, b+"/") || (strings.HasSuffix(b, "/") && strings.HasPrefix(dep, b)) {
			return true
		}
	}
	return false
}

func TestFeaturesImportNoOtherFeature(t *testing.T) {
	all := deps(t)
	for _, f := range features {
		ds, ok := all[f]
		if !ok {
			t.Fatalf("no package internal/%s", f)
		}
		for _, d := range ds {
			for _, g := range features {
				if g != f && d == mod+g {
					t.Errorf("internal/%s imports internal/%s: wire them together in cmd or runner, or move what both need to a package of its own", f, g)
				}
			}
		}
	}
}

func TestCostPackagesLinkNoGPUOrCloudCode(t *testing.T) {
	all := deps(t)
	for _, p := range costPackages {
		ds, ok := all[p]
		if !ok {
			t.Fatalf("no package internal/%s", p)
		}
		for _, d := range ds {
			if banned(d, gpuCode) || banned(d, cloudSDKs) {
				t.Errorf("internal/%s links %s", p, d)
			}
		}
	}
}

// Audit and wipe read GPU facts through probe at most: they link no
// code that runs work on a GPU (bench's kernels, gpuwipe's memory fill,
// gpuwatch's sampling), which cmd wires in where a command needs it.
func TestAuditAndWipeRunNoGPUWork(t *testing.T) {
	all := deps(t)
	for _, p := range []string{"audit", "wipe"} {
		for _, d := range all[p] {
			if d == mod+"bench" || d == mod+"gpuwipe" || d == mod+"gpuwatch" {
				t.Errorf("internal/%s links %s", p, d)
			}
		}
	}
}

// The store's repository (manifests, leases, pull) and what only reads
// its records (wipe) link no cloud SDK: internal/store/cloud opens the
// clouds, and only what opens a store imports it (issue #57: wipe linked
// 883 packages through the store).
func TestRepositoryLinksNoCloudSDK(t *testing.T) {
	all := deps(t)
	for _, p := range []string{"store", "store/backend", "wipe", "supervise"} {
		ds, ok := all[p]
		if !ok {
			t.Fatalf("no package internal/%s", p)
		}
		for _, d := range ds {
			if banned(d, cloudSDKs) || d == mod+"store/cloud" {
				t.Errorf("internal/%s links %s", p, d)
			}
		}
	}
}

// cmd/gpurent is wiring: flags, a call into internal/, rendering. It
// grew back past 3,500 lines once (issue #57) as logic crept in; what
// decides anything belongs in a package of its domain.
func TestCmdStaysWiring(t *testing.T) {
	const most = 3500
	files, err := filepath.Glob("../../cmd/gpurent/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cmd/gpurent sources: %v", err)
	}
	lines := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(b, []byte("\n"))
	}
	t.Logf("cmd/gpurent: %d lines of non-test Go", lines)
	if lines > most {
		t.Errorf("cmd/gpurent has %d lines of non-test Go, over %d: move what decides anything to internal/", lines, most)
	}
}

// TestCmdStartsNoGoroutine: cmd/gpurent starts no goroutine and shares no
// memory between goroutines of its own (no go statement, no sync): what
// runs side by side lives in internal/, raced in its own tests, so that
// cmd's tests, which run gpurent whole, could run without the race
// detector and lose nothing of cmd's.
func TestCmdStartsNoGoroutine(t *testing.T) {
	files, err := filepath.Glob("../../cmd/gpurent/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cmd/gpurent sources: %v", err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			if p := strings.Trim(im.Path.Value, `"`); p == "sync" || p == "sync/atomic" {
				t.Errorf("%s imports %s: what runs side by side belongs in internal/, where its tests run with -race", fset.Position(im.Pos()), p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				t.Errorf("%s: a go statement in cmd: move it to internal/, where its tests run with -race", fset.Position(g.Pos()))
			}
			return true
		})
	}
}
