package render

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/store"
	"github.com/gpurent/gpurent/internal/units"
)

// when is the time of a checkpoint, as ls and runs show it.
const when = "2006-01-02 15:04:05"

// Checkpoints is ckpt ls's table: the run's committed checkpoints, and
// where it has none, hint (the store's runs).
//
// unauth are the ids no key here authenticates (store.Unauthenticated),
// marked in the ID column and said once below; with checked false,
// nothing could be told, and that is said instead.
func Checkpoints(w io.Writer, tr *i18n.Printer, run string, ms []*store.Manifest, hint i18n.Text, unauth map[string]bool, checked bool) error {
	// ENTRIES, not FILES: the count holds the directories, the
	// checkpoint's own among them, as push and pull say. NAME is what was
	// pushed (checkpoint-5000, last.ckpt): the ids alone do not say which
	// step each one holds.
	tab := report.NewTab(tr.T("ID"), tr.T("NAME"), tr.T("CREATED"), tr.T("ENTRIES"), tr.T("SIZE"), tr.T("ENCRYPTED"), tr.T("HOST"))
	for _, m := range ms {
		id := m.ID
		if unauth[m.ID] {
			id += " !"
		}
		tab.Row(id, orDash(report.Safe(m.Name)), m.Created.Local().Format(when), fmt.Sprint(m.Files), report.Bytes(m.Bytes), fmt.Sprint(m.Encrypted), report.Safe(m.Host))
	}
	if err := tab.Write(w); err != nil {
		return err
	}
	tr.Fprintf(w, "\n%s in run %s\n", Count(tr, len(ms), "checkpoint"), run)
	switch {
	case len(unauth) > 0:
		tr.Fprintf(w, "!: %s not signed by a key here: planted by someone with write access, or written with another identity; pull, run and prune pass over them\n", Count(tr, len(unauth), "checkpoint"))
	case !checked && len(ms) > 0:
		tr.Fprintf(w, "whether each is the owner's (not planted) is not checked: no identity or auth key here (--identity FILE, --auth-key FILE), or --allow-unauthenticated\n")
	}
	if len(ms) == 0 {
		fmt.Fprintln(w, tr.Text(hint))
	}
	return nil
}

// Verified is ckpt verify's text: each problem, then how many checkpoints
// were checked and how deep.
func Verified(w io.Writer, tr *i18n.Printer, probs []store.Problem, checked int, deep bool) {
	for _, p := range probs {
		if p.ID == "" {
			fmt.Fprintln(w, report.Safe(tr.Text(p.Msg)))
			continue
		}
		tr.Fprintf(w, "%s %s: %s\n", p.ID, report.Safe(p.Path), report.Safe(tr.Text(p.Msg)))
	}
	kind := tr.T("objects present with their sizes")
	if deep {
		kind = tr.T("every byte decrypted and hashed")
	}
	tr.Fprintf(w, "%s checked (%s): %s\n", Count(tr, checked, "checkpoint"), kind, Count(tr, len(probs), "problem"))
}

// PrunePlanned is ckpt prune --dry-run's text: what would be deleted of
// run, keeping its newest keep, and the log sessions named.
func PrunePlanned(w io.Writer, tr *i18n.Printer, run string, keep int, p *store.PrunePlan, logs []string) {
	for _, m := range p.Checkpoints {
		tr.Fprintf(w, "would delete %s  %s  %s\n", m.ID, report.Safe(m.Name), report.Bytes(m.Bytes))
	}
	for _, l := range logs {
		tr.Fprintf(w, "would delete log session %s\n", l)
	}
	tr.Fprintf(w, "dry run: would keep the newest %d of run %s, delete %s%s and remove %s%s; nothing was deleted\n",
		keep, run, Count(tr, len(p.Checkpoints), "checkpoint"), logsText(tr, logs), Count(tr, len(p.Leftovers), "leftover object"), uploadsText(tr, len(p.Uploads), false))
}

// Pruned is ckpt prune's text: what was deleted of run.
func Pruned(w io.Writer, tr *i18n.Printer, run string, keep int, r *store.Pruned, logs []string) {
	for _, d := range r.Checkpoints {
		tr.Fprintf(w, "deleted %s\n", d)
	}
	for _, l := range logs {
		tr.Fprintf(w, "deleted log session %s\n", l)
	}
	tr.Fprintf(w, "kept the newest %d of run %s; deleted %s%s; removed %s%s\n", keep, run,
		Count(tr, len(r.Checkpoints), "checkpoint"), logsText(tr, logs), Count(tr, r.Leftovers, "leftover object"), uploadsText(tr, r.Uploads, true))
}

// logsText is ", N log sessions" for a prune's summary, "" for none.
func logsText(tr *i18n.Printer, sessions []string) string {
	if len(sessions) == 0 {
		return ""
	}
	return tr.Tf(", %s", Count(tr, len(sessions), "log session"))
}

// uploadsText names incomplete multipart uploads in a prune's summary, and
// nothing when there are none: only S3 stores have them.
func uploadsText(tr *i18n.Printer, n int, aborted bool) string {
	if n == 0 {
		return ""
	}
	if aborted {
		return tr.Tf("; aborted %s (a killed push's parts, billed by S3 and shown by no listing)", Count(tr, n, "incomplete upload"))
	}
	return tr.Tf("; abort %s (a killed push's parts, billed by S3 and shown by no listing)", Count(tr, n, "incomplete upload"))
}

// RunRow is a run as ckpt runs lists it: the store's listing and, where
// its sessions recorded one, what its machines cost.
type RunRow struct {
	store.RunInfo
	Cost map[string]float64 `json:"cost,omitempty"` // by currency
}

// Runs is ckpt runs's table: the store's runs, with the bytes they hold in
// all, which the store bills by the month.
func Runs(w io.Writer, tr *i18n.Printer, storeName string, rows []RunRow) error {
	tab := report.NewTab(tr.T("RUN"), tr.T("CHECKPOINTS"), tr.T("NEWEST"), tr.T("NAME"), tr.T("CREATED"), tr.T("LOGS"), tr.T("STORED"), tr.T("COST"))
	var total int64
	costs := false
	for _, r := range rows {
		newest, created := "-", "-"
		if r.Newest != "" {
			newest, created = r.Newest, r.NewestCreated.Local().Format(when)
		}
		cost := "-"
		if len(r.Cost) > 0 {
			cost, costs = costText(r.Cost), true
		} else if r.SpendSessions > 0 {
			cost = "?"
		}
		tab.Row(r.Run, fmt.Sprint(r.Checkpoints), newest, orDash(report.Safe(r.NewestName)), created, fmt.Sprint(r.LogSessions), report.Bytes(r.StoredBytes), cost)
		total += r.StoredBytes
	}
	if err := tab.Write(w); err != nil {
		return err
	}
	// The sum is the line to read before forgetting an old run there.
	tr.Fprintf(w, "\n%s in %s, %s stored\n", Count(tr, len(rows), "run"), storeName, report.Bytes(total))
	if costs {
		fmt.Fprintln(w, tr.T("COST: each gpurent run session's --price times the time it ran, as the sessions recorded; storage, egress and the hours without gpurent are not in it"))
	}
	return nil
}

// costText is "12.40 USD", or "12.40 USD + 86.00 CNY" for a run priced in
// two currencies.
func costText(cost map[string]float64) string {
	curs := slices.Sorted(maps.Keys(cost))
	parts := make([]string, len(curs))
	for i, c := range curs {
		parts[i] = fmt.Sprintf("%.2f %s", cost[c], c)
	}
	return strings.Join(parts, " + ")
}

// SpeedReport is ckpt speed's result; rates are MB/s of checkpoint bytes
// (10^6), as disks and links are sold.
type SpeedReport struct {
	Store         string  `json:"store"`
	Bytes         int64   `json:"bytes"`
	Files         int     `json:"files"`
	Encrypted     bool    `json:"encrypted"`
	UploadS       float64 `json:"upload_s"`
	UploadMBs     float64 `json:"upload_mb_s"`
	DownloadS     float64 `json:"download_s"`
	DownloadMBs   float64 `json:"download_mb_s"`
	CkptBytes     int64   `json:"ckpt_bytes,omitempty"`
	CkptUploadS   float64 `json:"ckpt_upload_s,omitempty"`
	CkptDownloadS float64 `json:"ckpt_download_s,omitempty"`
}

// Speed is ckpt speed's text: the rates measured and, with a checkpoint
// size, what one takes each way.
func Speed(w io.Writer, tr *i18n.Printer, r SpeedReport, bwlimit string) {
	enc := tr.T("encrypted with a key made for the test")
	if !r.Encrypted {
		enc = tr.T("plaintext")
	}
	tr.Fprintf(w, "store     %s\n", r.Store)
	tr.Fprintf(w, "test      %s in %s, %s\n", report.Bytes(r.Bytes), Count(tr, r.Files, "file"), enc)
	capped := ""
	if bwlimit != "" {
		capped = tr.Tf(" (capped by --bwlimit %s)", bwlimit)
	}
	tr.Fprintf(w, "upload    %6.1f s  %8.1f MB/s%s\n", r.UploadS, r.UploadMBs, capped)
	tr.Fprintf(w, "download  %6.1f s  %8.1f MB/s  (decrypted, checked and written to disk, as a pull is)\n", r.DownloadS, r.DownloadMBs)
	if r.CkptBytes > 0 {
		tr.Fprintf(w, "\na %s GB checkpoint at these rates: upload %s, download %s\n", strconv.FormatFloat(float64(r.CkptBytes)/1e9, 'f', -1, 64), roundTime(r.CkptUploadS), roundTime(r.CkptDownloadS))
		tr.Fprintf(w, "(gpurent plan and quote: --ckpt-write is at least the upload, and --ckpt-restart on a new machine includes the download)\n")
	}
	tr.Fprintf(w, "\none test, scaled linearly: the rates move with the time of day and the provider's load\n")
}

// roundTime is seconds as a duration a person reads: "2m44s", "1h5m".
func roundTime(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d >= time.Hour:
		d = d.Round(time.Minute)
	case d >= time.Second:
		d = d.Round(time.Second)
	default:
		d = d.Round(time.Millisecond)
	}
	return units.FormatDuration(d)
}

// LogSessions is ckpt log --list's table: each session of a run's shipped
// log, and the segments missing from the store.
func LogSessions(w io.Writer, tr *i18n.Printer, sessions []store.LogSession) error {
	tab := report.NewTab(tr.T("SESSION"), tr.T("HOST"), tr.T("STARTED"), tr.T("LAST SHIPPED"), tr.T("SEGMENTS"), tr.T("STORED"))
	for _, ls := range sessions {
		last := "-"
		if !ls.Updated.IsZero() {
			last = ls.Updated.Local().Format(when)
		}
		tab.Row(ls.Session, ls.Host, ls.Started.Local().Format(when), last,
			fmt.Sprint(ls.Segments), report.Bytes(ls.StoredBytes))
	}
	if err := tab.Write(w); err != nil {
		return err
	}
	for _, ls := range sessions {
		if ls.Missing > 0 {
			tr.Fprintf(w, "session %s: segment %d is missing from the store; the log reads to the segment before it\n", ls.Session, ls.Missing)
		}
	}
	return nil
}
