package billing

import (
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/specs"
)

// Workloads a reference GPU's hours are scaled by: what sets a job's speed
// on a card, from the datasheet table.
const (
	// ByTraining is bound by dense BF16 tensor throughput.
	ByTraining = "training"
	// ByDecoding, inference token by token, is bound by memory bandwidth.
	ByDecoding = "inference"
)

// Work reads a task's hours as hours on a reference GPU and gives each
// offer the hours its own GPU needs for the same work: a slower card is
// rented for longer. An H20 has 148 dense BF16 TFLOPS to an H100 SXM's
// 989.5, so 100 h of H100 training are 669 h on it, whatever its hourly
// price says.
type Work struct {
	Reference string // the datasheet row the hours are on
	By        string // ByTraining or ByDecoding
	ref       float64
	tab       *specs.Table
	// measured, when set, holds the user's own figures by datasheet row
	// (NewMeasuredWork), which then rate the GPUs in place of the table.
	measured map[string]float64
}

// NewWork rates by the datasheet row reference names. A name that fits
// several rows ("H100": PCIe, SXM, NVL) takes the fastest, the card such
// hours are usually measured on; the note says which.
func NewWork(reference, by string) (*Work, error) {
	if by != ByTraining && by != ByDecoding {
		return nil, i18n.Errorf("want %s or %s, got %q", ByTraining, ByDecoding, by)
	}
	return newWork(reference, by, nil)
}

// NewMeasuredWork rates by the user's own measurements: speeds holds, by
// datasheet row, the median bench measured (BF16 GEMM TFLOPS for
// training, device-to-device copy GB/s for inference; bench.Speeds). Only
// GPUs measured are rated, the reference among them: a datasheet peak
// beside a measured figure would set one card's best case against
// another's real one (cuBLASLt reached 61% of an H200's peak).
func NewMeasuredWork(reference, by string, speeds map[string]float64) (*Work, error) {
	if by != ByTraining && by != ByDecoding {
		return nil, i18n.Errorf("want %s or %s, got %q", ByTraining, ByDecoding, by)
	}
	if len(speeds) == 0 {
		return nil, i18n.Errorf("no bench run in this machine's history measured a GPU's %s: run gpurent bench on the GPUs to compare (gpurent bench history lists the runs)", (&Work{By: by, measured: map[string]float64{}}).figure())
	}
	return newWork(reference, by, speeds)
}

func newWork(reference, by string, measured map[string]float64) (*Work, error) {
	tab, err := specs.Load()
	if err != nil {
		return nil, err
	}
	w := &Work{By: by, tab: tab, measured: measured}
	rows := w.rated(tab.Match(reference))
	if len(rows) == 0 && measured != nil {
		models := slices.Sorted(maps.Keys(measured))
		return nil, i18n.Errorf("%q: your bench history measured the %s of %s only", reference, w.figure(), strings.Join(models, ", "))
	}
	if len(rows) == 0 {
		return nil, i18n.Errorf("%q: no GPU of the datasheet table with a %s figure has that name (gpurent catalog ls lists the GPUs)", reference, w.figure())
	}
	best := rows[len(rows)-1]
	w.Reference, w.ref = best.Model, w.speed(best)
	return w, nil
}

// figure names what the speed is read from.
func (w *Work) figure() string {
	switch {
	case w.measured != nil && w.By == ByDecoding:
		return "device-to-device copy bandwidth"
	case w.measured != nil:
		return "BF16 GEMM throughput"
	case w.By == ByDecoding:
		return "memory bandwidth"
	}
	return "dense BF16 tensor TFLOPS"
}

// source names where the figures come from, for the notes.
func (w *Work) source() i18n.Text {
	if w.measured != nil {
		return i18n.Textf("the medians of your bench history")
	}
	return i18n.Textf("the datasheet table")
}

func (w *Work) speed(g *specs.GPU) float64 {
	switch {
	case w.measured != nil:
		return w.measured[g.Model]
	case w.By == ByDecoding:
		return g.MemoryBWGBs
	}
	return g.BF16TFLOPS
}

// rated keeps the rows with a known figure, slowest first.
func (w *Work) rated(rows []*specs.GPU) []*specs.GPU {
	rows = slices.DeleteFunc(slices.Clone(rows), func(g *specs.GPU) bool { return w.speed(g) <= 0 })
	slices.SortStableFunc(rows, func(a, b *specs.GPU) int {
		switch sa, sb := w.speed(a), w.speed(b); {
		case sa < sb:
			return -1
		case sa > sb:
			return 1
		}
		return 0
	})
	return rows
}

// Factor is how many hours offer o's GPU needs for one hour of work on
// the reference, and the row it was rated as. An offer's GPU that fits
// several rows is rated as the slowest of them: the bill is then an upper
// bound, never a cheap guess. ok is false when no row has the figure.
func (w *Work) Factor(o *catalog.Offer) (f float64, ratedAs string, ok bool) {
	rows := w.rated(w.tab.Match(o.GPU))
	if len(rows) == 0 {
		return 0, "", false
	}
	return w.ref / w.speed(rows[0]), rows[0].Model, true
}

// Note says what the hours mean.
func (w *Work) Note(hours float64) i18n.Text {
	return i18n.Textf("HOURS are what each GPU needs for the work of %s h on %s, by %s (%s): ranked by the cost of the work, not of an hour", trimFloat(hours), w.Reference, w.figure(), w.source())
}

// forWork is p for offer o under w: its hours scaled, and a span derived
// from the hours derived again. ok is false when o's GPU cannot be rated.
func forWork(p *Profile, o *catalog.Offer, w *Work) (*Profile, string, bool) {
	if w == nil {
		return p, "", true
	}
	f, rated, ok := w.Factor(o)
	if !ok {
		return nil, "", false
	}
	pp := *p
	pp.ComputeHours = math.Min(p.ComputeHours*f, maxHours)
	if p.spanDerived {
		pp.SpanDays = max(p.SpanDays, int(math.Ceil(pp.ComputeHours/24-1e-9)))
	}
	return &pp, rated, true
}

// workNotes add to notes what a ranking's hours mean: with w, lead's note
// (first) and the offers w could not rate (last), and the reference GPU's
// name; without, whether the GPUs ranked by the hour differ in speed.
func workNotes(offers []catalog.Offer, w *Work, unrated []string, notes []i18n.Text, lead func(*Work) i18n.Text) (string, []i18n.Text) {
	if w == nil {
		if n := mixedNote(offers); !n.IsZero() {
			notes = append(notes, n)
		}
		return "", notes
	}
	notes = append([]i18n.Text{lead(w)}, notes...)
	if n := unratedNote(w, unrated); !n.IsZero() {
		notes = append(notes, n)
	}
	return w.Reference, notes
}

// unratedNote names the offers left out of a ranking by work.
func unratedNote(w *Work, gpus []string) i18n.Text {
	if len(gpus) == 0 {
		return i18n.Text{}
	}
	slices.Sort(gpus)
	if w.measured != nil {
		return i18n.Textf("left out: offers of %s, whose %s your bench history has not measured", strings.Join(slices.Compact(gpus), ", "), w.figure())
	}
	return i18n.Textf("left out: offers of %s, whose %s the datasheet table does not give", strings.Join(slices.Compact(gpus), ", "), w.figure())
}

// mixedNote says, of a ranking by the hour over GPU models that differ in
// speed, that it compares hours, not work.
func mixedNote(offers []catalog.Offer) i18n.Text {
	tab, err := specs.Load()
	if err != nil {
		return i18n.Text{}
	}
	lo, hi := math.Inf(1), 0.0
	var slow, fast string
	for i := range offers {
		for _, g := range tab.Match(offers[i].GPU) {
			if s := g.BF16TFLOPS; s > 0 && s < lo {
				lo, slow = s, g.Model
			}
			if s := g.BF16TFLOPS; s > hi {
				hi, fast = s, g.Model
			}
		}
	}
	if hi <= 0 || lo <= 0 || hi < 1.5*lo {
		return i18n.Text{}
	}
	return i18n.Textf("these bills are for the same hours on every GPU, but the GPUs differ: %s needs about %.1fx the hours of %s for the same training (dense BF16): --reference GPU ranks by the cost of the work", slow, hi/lo, fast)
}
