// Package task is the job quote and plan price: a profile file and the
// flags over it, read into a billing.Profile and the offers that can run
// it, with each problem reported at the flag or the file's line that
// caused it.
package task

import (
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/billing"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/money"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/units"
	"github.com/gpurent/gpurent/internal/usage"
	"github.com/gpurent/gpurent/internal/userfile"
	"github.com/gpurent/gpurent/internal/yamlfile"
	"github.com/spf13/pflag"
)

// Flags are the profile's fields as flags; a flag overrides the file.
type Flags struct {
	profile       string
	gpu           string
	gpus          int
	minMemory     float64
	hours         float64
	days          int
	starts        int
	disk, egress  float64
	interruptible bool
	oneMachine    bool
	perNode       int
	sharedDisk    bool
	every         string
	write         string
	restart       string
	ckptSize      string
	Currency      string
	interruptions float64
	providers     []string
	history       bool // also price the older readings of offers
	reference     string
	workload      string
	measured      bool
	// readMeasured reads the user's own bench figures by datasheet row
	// (BF16 GEMM TFLOPS, copy GB/s), for --measured.
	readMeasured func() (tflops, gbs map[string]float64, err error)
	// SolveHours: the hours are what is looked for (quote --budget), so
	// none may be given; SpanGiven says whether Load found a span given,
	// which then bounds them (otherwise the span follows the hours).
	SolveHours bool
	SpanGiven  bool
}

// WithProvider keeps the offers (those of the GPU asked for) of
// --provider, if given. A name that names no provider in the whole
// catalog (all) is an error listing them; a provider that has none of
// these offers is a note, and an error only when no provider named has
// any: asked for RunPod and AutoDL, a GPU only one of them rents is still
// an answer.
func (t *Flags) WithProvider(all, offers []catalog.Offer) ([]catalog.Offer, []i18n.Text, error) {
	if len(t.providers) == 0 {
		return offers, nil, nil
	}
	if _, err := catalog.WithProvider(all, t.providers); err != nil {
		return nil, nil, usage.Errorf("--provider: %v", err)
	}
	var out []catalog.Offer
	var lacking []string
	for _, w := range t.providers {
		got, err := catalog.WithProvider(offers, []string{w})
		if err != nil {
			lacking = append(lacking, strings.TrimSpace(w))
			continue
		}
		for _, o := range got {
			if !slices.ContainsFunc(out, func(x catalog.Offer) bool { return x.ID == o.ID }) {
				out = append(out, o)
			}
		}
	}
	if len(out) == 0 {
		_, err := catalog.WithProvider(offers, t.providers)
		return nil, nil, usage.Errorf("--provider: %v%s", err, catalog.AmongGPU(t.gpu))
	}
	var notes []i18n.Text
	if len(lacking) > 0 {
		what := i18n.Textf("the task")
		if t.gpu != "" {
			what = i18n.Textf("GPU %q", t.gpu)
		}
		notes = append(notes, i18n.Textf("--provider %s: no offer for %s in the catalog; priced from the other providers named", strings.Join(lacking, ", "), what))
	}
	return out, notes, nil
}

// Variants are the offers of models --gpu does not match but extends (the
// RTX 4090D beside "4090"), kept to --min-gpu-memory and --provider, for
// quote's note when one is cheaper; none without --gpu.
func (t *Flags) Variants(p *billing.Profile, offers []catalog.Offer) []catalog.Offer {
	if p.GPU == "" {
		return nil
	}
	out, _ := billing.WithMemory(p, catalog.Variants(offers, p.GPU))
	if len(t.providers) > 0 {
		out, _ = catalog.WithProvider(out, t.providers)
	}
	return out
}

// Current keeps the newest reading of each offer, or with --history all
// of them, and says which newer reading supersedes each older one.
func (t *Flags) Current(offers []catalog.Offer) ([]catalog.Offer, map[string]string) {
	cur, by := catalog.Current(offers)
	if t.history {
		return offers, by
	}
	return cur, by
}

// flagOf names the flag behind each profile field, for error messages.
var flagOf = map[string]string{
	"gpu": "--gpu", "gpus": "--gpus", "min_gpu_memory_gb": "--min-gpu-memory", "compute_hours": "--hours", "span_days": "--days", "starts": "--starts",
	"disk_gb": "--disk", "egress_gb": "--egress", "interruptible": "--interruptible",
	"checkpoint.every": "--ckpt-every", "checkpoint.write": "--ckpt-write", "checkpoint.restart": "--ckpt-restart",
	"checkpoint.size_gb": "--ckpt-size", "one_machine": "--one-machine", "gpus_per_node": "--gpus-per-node", "shared_disk": "--shared-disk",
}

// Register adds the flags to fs; measured reads the bench history for
// --measured.
func (t *Flags) Register(fs *pflag.FlagSet, measured func() (tflops, gbs map[string]float64, err error)) {
	t.readMeasured = measured
	fs.StringVar(&t.profile, "profile", "", "task profile YAML (flags override its fields)")
	fs.StringVar(&t.gpu, "gpu", "", `GPU model, e.g. "RTX 4090", "H100" (all offers when empty)`)
	fs.IntVar(&t.gpus, "gpus", 1, "GPUs needed; instances = ceil(gpus / GPUs per offer)")
	fs.Float64Var(&t.minMemory, "min-gpu-memory", 0, "GB of memory each GPU needs at least: offers with less are left out (0: any)")
	fs.Var((*hoursValue)(&t.hours), "hours", "compute hours the instance(s) run: 300, or a duration such as 300h, 90m or 12d")
	fs.IntVar(&t.days, "days", 0, "calendar days the instance is kept, stopped in between (default: hours/24 rounded up)")
	fs.IntVar(&t.starts, "starts", 1, "times the instance is started")
	fs.Float64Var(&t.disk, "disk", 0, "GB of data kept on each instance's disk")
	fs.Float64Var(&t.egress, "egress", 0, "GB downloaded out of the instance over the public network")
	fs.BoolVar(&t.interruptible, "interruptible", false, "the job resumes from checkpoints, so spot is allowed")
	fs.BoolVar(&t.oneMachine, "one-machine", false, "all of --gpus in one instance: leave out offers that would split them over machines")
	fs.IntVar(&t.perNode, "gpus-per-node", 0, "only offers whose machines hold this many GPUs, rented whole (--gpus 64 --gpus-per-node 8: eight 8-GPU machines), with the interconnect each promises")
	fs.BoolVar(&t.sharedDisk, "shared-disk", false, "the instances share one disk of --disk GB (a network volume), billed once rather than on each instance")
	fs.StringVar(&t.every, "ckpt-every", "", "work between checkpoints, such as 30m (without it, spot is priced as a job that restarts from the beginning)")
	fs.StringVar(&t.write, "ckpt-write", "", "time to write one checkpoint until it is safe remotely, such as 1m (0 when not given)")
	fs.StringVar(&t.restart, "ckpt-restart", "", "time from an interruption to running again, such as 5m (0 when not given)")
	fs.StringVar(&t.ckptSize, "ckpt-size", "", "what one checkpoint uploads to a store outside the provider, such as 20GB (a bare number is GB, as in ckpt speed), billed as egress once per --ckpt-every")
	fs.StringVar(&t.Currency, "currency", "USD", "currency of every amount, converted with the catalog's rates")
	fs.StringArrayVar(&t.providers, "provider", nil, `only this provider's offers, e.g. "RunPod", "alibaba cloud" (repeatable)`)
	fs.Float64Var(&t.interruptions, "interruptions-per-day", 0, "spot interruptions a day, for every offer (else the offer's own, or its provider's published frequency)")
	fs.BoolVar(&t.history, "history", false, "also price older readings of an offer that a newer one supersedes, marked as history")
	fs.StringVar(&t.reference, "reference", "", `read --hours as hours on this GPU ("H100"), and price each offer for the hours its own GPU needs for the same work, ranked by the cost of the work (with --budget, by the work it buys)`)
	fs.BoolVar(&t.measured, "measured", false, "with --reference: rate each GPU by what your own bench runs on this machine measured (gpurent bench history: the medians of BF16 GEMM for training, copy bandwidth for inference), not by its datasheet; offers of GPUs never benched are left out")
	fs.StringVar(&t.workload, "workload", billing.ByTraining, "what sets the speed with --reference: training (dense BF16 tensor throughput) or inference (memory bandwidth, token by token)")
}

// Load reads the profile, applies the flags fs holds (those set
// override the file) and validates, then picks cat's offers for the task.
// cat keeps the current readings only (all with --history).
func (t *Flags) Load(fs *pflag.FlagSet, cat *catalog.Catalog) (*billing.Profile, []catalog.Offer, billing.Options, error) {
	var opt billing.Options
	cat.Offers, opt.SupersededBy = t.Current(cat.Offers)
	p := &billing.Profile{}
	var ix *yamlfile.Index
	if t.profile != "" {
		data, err := userfile.Read(t.profile, maxProfileSize)
		if err != nil {
			return nil, nil, opt, usage.Errorf("--profile: %w", err)
		}
		if p, ix, err = billing.DecodeProfile(t.profile, data); err != nil {
			return nil, nil, opt, err
		}
	}
	set := func(name string) bool { return fs.Changed(name) }
	fromFlag := map[string]bool{}
	mark := func(field string) { fromFlag[field] = true }
	// override applies a flag the user gave and remembers that the field
	// came from it, so a problem with it is reported at the flag.
	override := func(flag, field string, apply func()) {
		if set(flag) {
			apply()
			mark(field)
		}
	}
	override("gpu", "gpu", func() { p.GPU = t.gpu })
	override("gpus", "gpus", func() { p.GPUs = t.gpus })
	override("min-gpu-memory", "min_gpu_memory_gb", func() { p.MinGPUMemoryGB = t.minMemory })
	override("hours", "compute_hours", func() { p.ComputeHours = t.hours })
	override("days", "span_days", func() { p.SpanDays = t.days })
	override("starts", "starts", func() { p.Starts = t.starts })
	override("disk", "disk_gb", func() { p.DiskGB = t.disk })
	override("egress", "egress_gb", func() { p.EgressGB = t.egress })
	override("interruptible", "interruptible", func() { p.Interruptible = t.interruptible })
	override("one-machine", "one_machine", func() { p.OneMachine = t.oneMachine })
	override("gpus-per-node", "gpus_per_node", func() { p.GPUsPerNode = t.perNode })
	override("shared-disk", "shared_disk", func() { p.SharedDisk = t.sharedDisk })
	for _, c := range []struct {
		flag, field string
		v           string
		dst         func(*billing.Checkpoint) *billing.Duration
	}{
		{"ckpt-every", "checkpoint.every", t.every, func(c *billing.Checkpoint) *billing.Duration { return &c.Every }},
		{"ckpt-write", "checkpoint.write", t.write, func(c *billing.Checkpoint) *billing.Duration { return &c.Write }},
		{"ckpt-restart", "checkpoint.restart", t.restart, func(c *billing.Checkpoint) *billing.Duration { return &c.Restart }},
	} {
		if !set(c.flag) {
			continue
		}
		d, err := units.ParseDuration(c.v)
		if err != nil {
			return nil, nil, opt, usage.Errorf("--%s: %v", c.flag, err)
		}
		if p.Checkpoint == nil {
			p.Checkpoint = &billing.Checkpoint{}
		}
		*c.dst(p.Checkpoint) = billing.Duration(d)
		mark(c.field)
	}
	if set("ckpt-size") {
		if p.Checkpoint == nil {
			p.Checkpoint = &billing.Checkpoint{}
		}
		size, err := units.ParseSize(t.ckptSize, 1e9)
		if err != nil {
			return nil, nil, opt, usage.Errorf("--ckpt-size: want a size such as 20GB (a bare number is GB), got %s", report.Quote(t.ckptSize))
		}
		p.Checkpoint.SizeGB = size / 1e9
		mark("checkpoint.size_gb")
	}
	// Settings without an interval; one given as 0 is Validate's to name.
	if p.Checkpoint != nil && p.Checkpoint.Every == 0 && !set("ckpt-every") && (ix == nil || !ix.Has("checkpoint.every")) {
		return nil, nil, opt, usage.Errorf("checkpoint settings need --ckpt-every (or checkpoint.every in the profile)")
	}
	hoursGiven := set("hours") || (ix != nil && ix.Has("compute_hours"))
	given := func(field string) bool { return fromFlag[field] || (ix != nil && ix.Has(field)) }
	switch {
	case t.SolveHours && hoursGiven:
		return nil, nil, opt, usage.Errorf("--hours: not with --budget, which finds the hours each plan gives within it (leave out compute_hours too)")
	case t.SolveHours:
		// A stand-in for the checks, enough for each start to run a
		// second; the search sets the hours.
		p.ComputeHours = max(1, float64(p.Starts)/3600)
	case !hoursGiven:
		return nil, nil, opt, usage.Errorf("--hours: required (or compute_hours in --profile)")
	}
	t.SpanGiven = given("span_days")
	opt.SpanGiven = t.SpanGiven
	p.Defaults(given)
	if err := placeProblems(t.profile, ix, fromFlag, p.Validate()); err != nil {
		return nil, nil, opt, err
	}
	offers, err := billing.Offers(p, cat.Offers)
	if err != nil {
		path := "gpu"
		if _, gerr := catalog.WithGPU(cat.Offers, p.GPU); gerr == nil && p.OneMachine {
			path = "one_machine" // the GPU is rented, not that many in one machine
		} else if gerr == nil && p.GPUsPerNode > 0 {
			path = "gpus_per_node"
		}
		return nil, nil, opt, placeProblems(t.profile, ix, fromFlag, []yamlfile.Problem{{Path: path, Msg: i18n.Textf("%v", err)}})
	}
	if offers, err = billing.WithMemory(p, offers); err != nil {
		return nil, nil, opt, placeProblems(t.profile, ix, fromFlag, []yamlfile.Problem{{Path: "min_gpu_memory_gb", Msg: i18n.Textf("%v", err)}})
	}
	if offers, opt.Notes, err = t.WithProvider(cat.Offers, offers); err != nil {
		return nil, nil, opt, err
	}
	opt.Estimates = billing.NewEstimates(cat.Offers, cat.Rates)
	if cat.Refreshed > 0 {
		opt.Notes = append(opt.Notes, i18n.Textf("%s of the catalog come from gpurent catalog refresh, each with its fetch date (--offline leaves them out)", i18n.Plural(cat.Refreshed, "%d offer", "%d offers")))
	}
	t.Currency = money.CurrencyCode(t.Currency) // "cny", "RMB" and "元" are CNY
	flag := "--currency"
	if t.SolveHours && !set("currency") {
		flag = "--budget" // the currency is the budget's
	}
	if !catalog.IsCurrency(t.Currency) {
		return nil, nil, opt, usage.Errorf("%s: want a currency code like USD or CNY, got %q", flag, t.Currency)
	}
	if _, err := cat.Rates.Convert(1, "USD", t.Currency); err != nil {
		return nil, nil, opt, usage.Errorf("%s: %v", flag, err)
	}
	opt.Currency = t.Currency
	if set("interruptions-per-day") {
		v := t.interruptions
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1440 {
			return nil, nil, opt, usage.Errorf("--interruptions-per-day: want 0 to 1440 (one a minute), got %v", v)
		}
		opt.InterruptionsPerDay = &v
	}
	if opt.Today, err = Today(os.LookupEnv, time.Now); err != nil {
		return nil, nil, opt, err
	}
	if set("workload") && t.reference == "" {
		return nil, nil, opt, usage.Errorf("--workload: it says how --reference rates the GPUs; give --reference GPU too")
	}
	if t.measured && t.reference == "" {
		return nil, nil, opt, usage.Errorf("--measured: it says how --reference rates the GPUs; give --reference GPU too")
	}
	if t.reference != "" {
		if opt.Work, err = t.work(); err != nil {
			flag := "--reference"
			if set("workload") && t.workload != billing.ByTraining && t.workload != billing.ByDecoding {
				flag = "--workload"
			} else if t.measured {
				flag = "--measured"
			}
			return nil, nil, opt, usage.Errorf("%s: %w", flag, err)
		}
	}
	return p, offers, opt, nil
}

// work rates the GPUs for --reference: by the datasheet, or with
// --measured by the user's bench history.
func (t *Flags) work() (*billing.Work, error) {
	if !t.measured {
		return billing.NewWork(t.reference, t.workload)
	}
	tflops, gbs, err := t.readMeasured()
	if err != nil {
		return nil, err
	}
	if t.workload == billing.ByDecoding {
		return billing.NewMeasuredWork(t.reference, t.workload, gbs)
	}
	return billing.NewMeasuredWork(t.reference, t.workload, tflops)
}

// hoursValue is --hours: a number of hours, or a duration with its unit
// (300h, 90m, 12d), as --deadline and the other durations take them.
type hoursValue float64

func (h *hoursValue) String() string { return strconv.FormatFloat(float64(*h), 'f', -1, 64) }
func (h *hoursValue) Type() string   { return "hours" }

func (h *hoursValue) Set(s string) error {
	if v, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
		*h = hoursValue(v)
		return nil
	}
	d, err := units.ParseDuration(s)
	if err != nil {
		return i18n.Errorf("--hours: want hours such as 300, or a duration such as 300h, 90m or 12d, got %q", s)
	}
	*h = hoursValue(d.Hours())
	return nil
}

// Today is the day the prices' ages are judged on: SOURCE_DATE_EPOCH's when
// it is set (the reproducible-builds convention: the same quote, word for
// word, on any later day), the clock's otherwise. UTC midnight.
func Today(lookup func(string) (string, bool), now func() time.Time) (time.Time, error) {
	t := now()
	if v, ok := lookup("SOURCE_DATE_EPOCH"); ok && v != "" { // set but empty is unset, as build tools read it
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil || secs < 0 || secs > 253402300799 { // the last second of 9999
			return time.Time{}, usage.Errorf("SOURCE_DATE_EPOCH: want seconds since 1970-01-01 UTC, got %q", v)
		}
		t = time.Unix(secs, 0)
	}
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC), nil
}

// placeProblems reports problems at the flag that set the field, or at the
// profile file's line.
func placeProblems(file string, ix *yamlfile.Index, fromFlag map[string]bool, ps []yamlfile.Problem) error {
	if len(ps) == 0 {
		return nil
	}
	var fileProblems []yamlfile.Problem
	var msgs []i18n.Text
	for _, pr := range ps {
		if fromFlag[pr.Path] || ix == nil {
			name := flagOf[pr.Path]
			if name == "" {
				name = pr.Path
			}
			msgs = append(msgs, i18n.Textf("%s: %s", name, pr.Msg))
			continue
		}
		fileProblems = append(fileProblems, pr)
	}
	if len(fileProblems) > 0 {
		err := ix.Place(file, fileProblems)
		if len(msgs) == 0 {
			return err
		}
		msgs = append(msgs, i18n.Textf("%v", err))
	}
	return usage.Wrap(i18n.Errorf("%s", i18n.Join(msgs, "\n")))
}

// maxProfileSize caps --profile: a few dozen settings take a few KiB, so
// 1 MiB is no real file's size.
const maxProfileSize = 1 << 20
