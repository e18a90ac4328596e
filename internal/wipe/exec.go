//go:build unix

package wipe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
)

// Statuses of a report item.
const (
	Planned = "planned"
	Removed = "removed"
	Failed  = "failed"
	NotRun  = "not-run"
)

// Result is what happened to one plan item.
type Result struct {
	Item
	Status      string `json:"status"`
	Freed       int64  `json:"freed"`       // bytes of files removed (not counting those with other hard links)
	Left        int    `json:"left"`        // entries that could not be removed
	Overwritten int64  `json:"overwritten"` // bytes overwritten before unlinking
	// NotOverwritten counts files only unlinked because other hard links
	// share their data (see Item.Linked); not a failure.
	NotOverwritten int `json:"not_overwritten"`
	// Kept are the paths inside the item left in place, with the
	// directories leading to them: the plan's (Item.Keep) and file
	// systems found mounted since the plan.
	Kept  []string `json:"kept,omitempty"`
	Error string   `json:"error,omitempty"`
}

// Report is the record of a wipe, saved after every item.
type Report struct {
	Started  time.Time   `json:"started"`
	Finished time.Time   `json:"finished,omitzero"`
	DryRun   bool        `json:"dry_run"`
	Complete bool        `json:"complete"` // every item was attempted
	Freed    int64       `json:"freed"`
	Failed   int         `json:"failed"`
	Items    []Result    `json:"items"`
	Warnings []i18n.Text `json:"warnings"`
	// GPUs is what --gpu did to each GPU's free memory.
	GPUs []GPU `json:"gpus,omitempty"`
}

// Exec is how a plan is carried out.
type Exec struct {
	// Save is called with the report after every item and at the end.
	Save func(*Report) error
	// Docker runs the docker CLI for image items.
	Docker func(ctx context.Context, args ...string) ([]byte, error)
	// BeforeRemove, when set, is called with each path about to be
	// removed; an error fails that removal. Tests inject faults with it.
	BeforeRemove func(path string) error
	// Done, when set, is told of each item as it finishes, for a person
	// watching a long wipe.
	Done func(Result)
	// Frozen, when set, says whether path lies in a directory the backup
	// check judged (frozen) and, if so, whether it is a file the check
	// judged, unchanged (same): one that is not was never checked
	// against the store, and is left in place, named (FrozenFor).
	Frozen func(path string, ino uint64, size int64, mtime, ctime time.Time) (frozen, same bool)
	Now    func() time.Time
}

// DryRun is the report of a plan not carried out.
func DryRun(p *Plan, now time.Time) *Report {
	r := &Report{Started: now, Finished: now, DryRun: true, Items: []Result{}, Warnings: p.Warnings}
	for _, it := range p.Items {
		r.Items = append(r.Items, Result{Item: it, Status: Planned})
	}
	return r
}

// Run carries out the plan. A failing item does not stop the others; a
// cancelled context stops after the current file, and the report says
// which items were not run. The error is Save's, or the context's.
func Run(ctx context.Context, p *Plan, x Exec) (*Report, error) {
	if x.Now == nil {
		x.Now = time.Now
	}
	r := &Report{Started: x.Now().UTC(), Items: make([]Result, len(p.Items)), Warnings: p.Warnings}
	for i, it := range p.Items {
		r.Items[i] = Result{Item: it, Status: NotRun}
	}
	save := func() error {
		if x.Save == nil {
			return nil
		}
		return x.Save(r)
	}
	if err := save(); err != nil {
		return r, err
	}
	for i := range r.Items {
		res := &r.Items[i]
		if err := ctx.Err(); err != nil {
			r.Finished = x.Now().UTC()
			return r, errors.Join(err, save())
		}
		if res.Image != "" {
			x.docker(ctx, res)
		} else {
			x.remove(ctx, res)
		}
		r.Freed += res.Freed
		if res.Status == Failed {
			r.Failed++
		}
		if x.Done != nil {
			x.Done(*res)
		}
		if err := save(); err != nil {
			return r, err
		}
	}
	r.Complete = true
	r.Finished = x.Now().UTC()
	return r, save()
}

func (x Exec) docker(ctx context.Context, res *Result) {
	if x.Docker == nil {
		res.Status, res.Error = Failed, "no docker command"
		return
	}
	if out, err := x.Docker(ctx, "image", "rm", "--force", res.Image); err != nil {
		res.Status, res.Error = Failed, fmt.Sprintf("docker image rm: %v %s", err, firstLine(out))
		return
	}
	res.Status, res.Freed = Removed, res.Bytes
}

func firstLine(b []byte) string {
	s := string(b)
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}
