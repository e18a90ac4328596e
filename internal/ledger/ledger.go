// Package ledger keeps what a run has cost across gpurent run's sessions
// on one machine, so that --budget is the run's and not each session's.
// Without it, gpurent started again (by systemd's Restart=always, after a
// reboot, by hand) would have a whole budget anew, and a restart loop
// would spend it again and again.
//
// The ledger is a small JSON file in the checkpoint directory, beside the
// run's state: it lives where the run lives and is gone when the run's
// directory is. What the run cost on other machines is not in it.
package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/gpurent/gpurent/internal/atomicfile"
)

// File is the ledger's name in the checkpoint directory. It begins with
// ".gpurent": the checkpoint watcher never takes it for a checkpoint.
const File = ".gpurent-budget.json"

const version = 1

// Entry is the file's contents: what the run has cost here in all.
type Entry struct {
	Version  int    `json:"version"`
	Run      string `json:"run"`
	Currency string `json:"currency"`
	// Spent is what the machine cost while gpurent ran the run, every
	// session's time at its --price, this session's so far included.
	Spent float64 `json:"spent"`
	// Sessions counts the gpurent run invocations that recorded a cost.
	Sessions int       `json:"sessions"`
	Since    time.Time `json:"since"` // the first session's start
	Updated  time.Time `json:"updated"`
}

// Ledger is a run's ledger as this session found it, and what it adds.
type Ledger struct {
	path   string
	before Entry // as Open read it: the earlier sessions
}

// Open reads dir's ledger for run, for a session that started at started
// and counts in currency. No file, or the file of another run (the
// directory was reused, as the run's state is), is an empty ledger.
//
// A file that cannot be read, or that counts in another currency, is an
// error rather than an empty ledger: what was spent would be lost, or
// converted at a rate nobody chose, and the budget overspent.
func Open(dir, run, currency string, started time.Time) (*Ledger, error) {
	l := &Ledger{path: filepath.Join(dir, File),
		before: Entry{Version: version, Run: run, Currency: currency, Since: started}}
	b, err := os.ReadFile(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, fmt.Errorf("budget ledger: %w", err)
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil || e.Version < 1 || math.IsNaN(e.Spent) || math.IsInf(e.Spent, 0) || e.Spent < 0 {
		why := "not a ledger gpurent wrote"
		if err != nil {
			why = err.Error()
		}
		return nil, fmt.Errorf("budget ledger %s is damaged (%s): what run %s has cost here is unknown; remove the file to count its budget from zero", l.path, why, run)
	}
	if e.Version > version {
		return nil, fmt.Errorf("budget ledger %s was written by a newer gpurent (version %d): run that one, or remove the file to count the budget from zero", l.path, e.Version)
	}
	if e.Run != run {
		return l, nil
	}
	if e.Currency != currency {
		return nil, fmt.Errorf("budget ledger %s counts run %s's cost in %s (%.2f %s so far), and --price is in %s: give --price and --budget in %s, or remove the file to count the budget from zero",
			l.path, run, e.Currency, e.Spent, e.Currency, currency, e.Currency)
	}
	l.before = e
	return l, nil
}

// Before is what the earlier sessions recorded: Spent, Sessions and Since
// (this session's start when there were none).
func (l *Ledger) Before() Entry { return l.before }

// Path is the ledger file's path, to name it in messages.
func (l *Ledger) Path() string { return l.path }

// Record writes the run's cost so far: the earlier sessions' and cost,
// what this session has cost by now. Written atomically, it is what a
// gpurent started after a crash or a power cut finds.
func (l *Ledger) Record(cost float64, now time.Time) error {
	e := l.before
	e.Spent += max(cost, 0)
	e.Sessions++
	e.Updated = now.UTC()
	e.Since = e.Since.UTC()
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(l.path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("budget ledger: %w", err)
	}
	return nil
}
