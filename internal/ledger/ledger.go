// Package ledger keeps what a run has cost across gpurent run's sessions
// (each --price times the time it ran): ckpt runs sums it, and --budget is
// the run's, not each session's. Without it,
// gpurent started again (by systemd's Restart=always, after a reboot, by
// hand, on a new machine after a preemption) would have a whole budget
// anew, and a restart loop would spend it again and again.
//
// Each session (one gpurent run invocation) has an id and records what it
// has cost so far. The sessions live in a small JSON file in the
// checkpoint directory, beside the run's state, and with a store each
// session also keeps a record of its own there (Record, Merge), so that
// the budget follows the run to another machine. A session known from
// both counts once, with the larger amount: a record is only ever
// rewritten upwards.
package ledger

import (
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/gpurent/gpurent/internal/atomicfile"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/userfile"
)

// File is the ledger's name in the checkpoint directory. It begins with
// ".gpurent": the checkpoint watcher never takes it for a checkpoint.
const File = ".gpurent-budget.json"

const version = 1

// maxLedger caps the budget ledger: a line or two a session.
const maxLedger = 16 << 20

// Session is what one gpurent run invocation has cost: the machine's time
// while gpurent ran, at its --price.
type Session struct {
	ID      string    `json:"id"`
	Host    string    `json:"host,omitempty"`
	Spent   float64   `json:"spent"`
	Started time.Time `json:"started"`
	Updated time.Time `json:"updated"`
}

// file is the ledger file, and each session's record in a store: a
// record holds its one session.
type file struct {
	Version  int       `json:"version"`
	Run      string    `json:"run"`
	Currency string    `json:"currency"`
	Sessions []Session `json:"sessions"`
}

// Ledger is a run's earlier sessions as this session found them, and this
// session.
type Ledger struct {
	path     string
	run      string
	currency string
	earlier  []Session // by id, oldest first
	self     Session
}

// Summary is what earlier sessions spent.
type Summary struct {
	Spent    float64
	Sessions int
	Since    time.Time // the first one's start; this session's without any
	// Elsewhere counts the sessions on other hosts than this one, known
	// from the store.
	Elsewhere int
}

// Open reads dir's ledger for run, for a session id on host that started
// at started and counts in currency. No file, or the file of another run
// (the directory was reused, as the run's state is), is an empty ledger.
//
// A file that cannot be read, or that counts in another currency, is an
// error rather than an empty ledger: what was spent would be lost, or
// converted at a rate nobody chose, and the budget overspent.
func Open(dir, run, currency, id, host string, started time.Time) (*Ledger, error) {
	l := &Ledger{path: filepath.Join(dir, File), run: run, currency: currency,
		self: Session{ID: id, Host: host, Started: started.UTC()}}
	b, err := userfile.Read(l.path, maxLedger)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, i18n.Errorf("budget ledger: %w", err)
	}
	f, err := l.decode(b, l.path, "remove the file")
	if err != nil {
		return nil, err
	}
	if f.Run == run {
		if err := l.sameCurrency(f, l.path, "remove the file"); err != nil {
			return nil, err
		}
		l.merge(f.Sessions)
	}
	return l, nil
}

// decode reads a ledger file or a store's record; where names it, reset
// says how to count from zero instead.
func (l *Ledger) decode(b []byte, where, reset string) (*file, error) {
	var f file
	err := json.Unmarshal(b, &f)
	if err == nil && f.Version < 1 {
		err = i18n.Errorf("not a ledger gpurent wrote")
	}
	for _, s := range f.Sessions {
		if err == nil && (s.ID == "" || math.IsNaN(s.Spent) || math.IsInf(s.Spent, 0) || s.Spent < 0) {
			err = i18n.Errorf("session %q: not an amount spent", s.ID)
		}
	}
	if err != nil {
		return nil, i18n.Errorf("budget ledger %s is damaged (%v): what run %s has cost is unknown; %s to count its budget from zero", where, err, l.run, reset)
	}
	if f.Version > version {
		return nil, i18n.Errorf("budget ledger %s was written by a newer gpurent (version %d): run that one, or %s to count the budget from zero", where, f.Version, reset)
	}
	return &f, nil
}

// sameCurrency refuses f, run's ledger or record read from where, when it
// counts in another currency than this session.
func (l *Ledger) sameCurrency(f *file, where, reset string) error {
	if f.Currency == l.currency {
		return nil
	}
	var spent float64
	for _, s := range f.Sessions {
		spent += s.Spent
	}
	return i18n.Errorf("budget ledger %s counts run %s's cost in %s (%.2f %s so far), and --price is in %s: give --price and --budget in %s, or %s to count the budget from zero",
		where, l.run, f.Currency, spent, f.Currency, l.currency, f.Currency, reset)
}

// Merge adds the sessions of run's records in a store (Record's), each
// named by where it was read, for reset: how to remove them. A session
// already known counts once, with the larger amount.
//
// One record that cannot be counted is an error, and none is merged.
func (l *Ledger) Merge(records map[string][]byte, reset string) error {
	var all []Session
	for _, where := range slices.Sorted(maps.Keys(records)) { // the same error first each time
		f, err := l.decode(records[where], where, reset)
		if err != nil {
			return err
		}
		if f.Run != l.run {
			return i18n.Errorf("budget record %s is run %s's, not %s's", where, f.Run, l.run)
		}
		if err := l.sameCurrency(f, where, reset); err != nil {
			return err
		}
		all = append(all, f.Sessions...)
	}
	l.merge(all)
	return nil
}

func (l *Ledger) merge(sessions []Session) {
	for _, s := range sessions {
		if s.ID == l.self.ID {
			continue
		}
		i := slices.IndexFunc(l.earlier, func(e Session) bool { return e.ID == s.ID })
		switch {
		case i < 0:
			l.earlier = append(l.earlier, s)
		case s.Spent > l.earlier[i].Spent:
			l.earlier[i] = s
		}
	}
	slices.SortFunc(l.earlier, func(a, b Session) int { return a.Started.Compare(b.Started) })
}

// Before is what the earlier sessions spent.
func (l *Ledger) Before() Summary {
	sum := Summary{Sessions: len(l.earlier), Since: l.self.Started}
	for _, s := range l.earlier {
		sum.Spent += s.Spent
		if s.Host != l.self.Host {
			sum.Elsewhere++
		}
	}
	if len(l.earlier) > 0 {
		sum.Since = l.earlier[0].Started
	}
	return sum
}

// Path is the ledger file's path, to name it in messages.
func (l *Ledger) Path() string { return l.path }

// Record notes what this session has cost by now and writes the ledger
// file: atomically, so that it is what a gpurent started after a crash or
// a power cut finds. It returns this session's record for a store, also
// when the file could not be written.
func (l *Ledger) Record(cost float64, now time.Time) (record []byte, err error) {
	l.self.Spent = max(l.self.Spent, cost) // a clock gone back takes nothing back
	l.self.Updated = now.UTC()
	record, err = json.MarshalIndent(file{Version: version, Run: l.run, Currency: l.currency, Sessions: []Session{l.self}}, "", "  ")
	if err != nil {
		return nil, err
	}
	all := append(slices.Clip(l.earlier), l.self)
	b, err := json.MarshalIndent(file{Version: version, Run: l.run, Currency: l.currency, Sessions: all}, "", "  ")
	if err == nil {
		err = atomicfile.Write(l.path, append(b, '\n'), 0o600)
	}
	if err != nil {
		return record, i18n.Errorf("budget ledger: %w", err)
	}
	return record, nil
}

// Session is this session's id.
func (l *Ledger) Session() string { return l.self.ID }

// Costs is what run's records in a store (Record's, by key) say the run
// has cost, by currency: each session once, with its largest amount. A
// run priced in two currencies (moved from a provider billing in CNY to
// one in USD) has two sums; they are not converted.
func Costs(records map[string][]byte, run string) (map[string]float64, error) {
	best := map[string]map[string]float64{} // currency, session: spent
	for _, key := range slices.Sorted(maps.Keys(records)) {
		f, err := (&Ledger{run: run}).decode(records[key], key, "delete it")
		if err != nil {
			return nil, err
		}
		if f.Run != run {
			return nil, i18n.Errorf("budget record %s is run %s's, not %s's", key, f.Run, run)
		}
		if best[f.Currency] == nil {
			best[f.Currency] = map[string]float64{}
		}
		for _, s := range f.Sessions {
			best[f.Currency][s.ID] = max(best[f.Currency][s.ID], s.Spent)
		}
	}
	out := map[string]float64{}
	for cur, sessions := range best {
		for _, v := range sessions {
			out[cur] += v
		}
	}
	return out, nil
}
