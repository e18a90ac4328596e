//go:build linux

package wipe

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/store"
	"github.com/gpurent/gpurent/internal/store/cloud"
)

// slowVerify is a store whose deep verify takes a while, and writes into
// the checkpoint directory while it does, as a training still running
// would: files appear during the backup check.
type slowVerify struct {
	*store.Store
	during func()
}

func (s slowVerify) Verify(ctx context.Context, run, id string, deep bool) ([]*store.Manifest, []store.Problem, error) {
	if s.during != nil {
		s.during()
	}
	return s.Store.Verify(ctx, run, id, deep)
}

// TestBackupCheckFreezesWhatItChecks: files written into a checkpoint
// directory while the backup check reads the store back were deleted
// unchecked on the commit before ("every file ... (4 files)", rc 0). Now
// the check refuses when the directory changed while it ran, and the
// removal itself leaves anything the check did not judge, named.
func TestBackupCheckFreezesWhatItChecks(t *testing.T) {
	ctx := context.Background()
	b := newBox(t)
	ck := filepath.Join(b.root, "work/ckpts")
	put(t, ck+"/checkpoint-100/model.bin", strings.Repeat("m", 4096), 0o644)
	old := time.Now().Add(-time.Hour)
	must(t, os.Chtimes(ck+"/checkpoint-100/model.bin", old, old))
	bk, _, err := cloud.Open(ctx, filepath.Join(b.base, "store"), cloud.OpenOptions{})
	must(t, err)
	defer bk.Close()
	st := store.New(bk, store.Options{Grace: -1})
	if _, err := st.Push(ctx, ck+"/checkpoint-100", "exp1"); err != nil {
		t.Fatal(err)
	}

	// During the check: a new checkpoint appears.
	during := slowVerify{Store: st, during: func() { put(t, ck+"/checkpoint-200/model.bin", "step 200", 0o644) }}
	if _, err := CheckBackup(ctx, during, "exp1", ck, nil); !errors.Is(err, ErrChangedSinceCheck) || !strings.Contains(err.Error(), "checkpoint-200/model.bin (new)") {
		t.Fatalf("a file written during the check: %v; want refused, named", err)
	}
	os.RemoveAll(ck + "/checkpoint-200")
	// ... or a checked one is rewritten in place, same size.
	during.during = func() {
		put(t, ck+"/checkpoint-100/model.bin", strings.Repeat("n", 4096), 0o644)
	}
	if _, err := CheckBackup(ctx, during, "exp1", ck, nil); !errors.Is(err, ErrChangedSinceCheck) || !strings.Contains(err.Error(), "model.bin (changed)") {
		t.Fatalf("a file rewritten during the check: %v; want refused, named", err)
	}
	put(t, ck+"/checkpoint-100/model.bin", strings.Repeat("m", 4096), 0o644)
	if _, err := st.Push(ctx, ck+"/checkpoint-100", "exp1"); err != nil {
		t.Fatal(err)
	}

	// After a clean check, a file that appears before the removal is
	// left in place; what was judged goes.
	backed, err := CheckBackup(ctx, st, "exp1", ck, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Make(ctx, b.env(), Options{Checkpoints: []string{ck}})
	must(t, err)
	put(t, ck+"/checkpoint-300/late.bin", "written after the check", 0o644)
	// gpurent's own files are not judged, and go as planned, rewritten
	// or not.
	put(t, ck+"/.gpurent-run.json", `{"run":"exp1","committed":{}}`, 0o644)
	r, err := Run(ctx, p, Exec{Frozen: FrozenFor([]Backed{backed})})
	must(t, err)
	if _, err := os.Stat(ck + "/checkpoint-300/late.bin"); err != nil {
		t.Errorf("a file written after the check was removed unchecked")
	}
	if _, err := os.Stat(ck + "/checkpoint-100/model.bin"); err == nil {
		t.Errorf("the checked file was not removed")
	}
	if _, err := os.Stat(ck + "/.gpurent-run.json"); err == nil {
		t.Errorf("gpurent's own state file was left")
	}
	if r.Failed == 0 {
		t.Errorf("the report does not count the file left in place: %+v", r)
	}
}
