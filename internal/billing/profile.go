// Package billing turns a task profile and an offer's fee schedule into the
// bill the user will really pay: compute with the provider's rounding,
// storage while running and while stopped, egress, boot fees and IP
// addresses, for each billing mode (on demand, subscription, spot). It also
// answers which mode to buy: break-even hours, spot risk by Monte Carlo, and
// the checkpoint interval that minimises lost work.
//
// Everything here is a pure function of a Profile and catalog data, so bills
// are tested with worked examples computed by hand.
package billing

import (
	"math"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/specs"
	"github.com/gpurent/gpurent/internal/units"
	"github.com/gpurent/gpurent/internal/userfile"
	"github.com/gpurent/gpurent/internal/yamlfile"
)

// Profile describes the task to be billed.
type Profile struct {
	GPU  string `yaml:"gpu"`  // which offers to consider; all when empty
	GPUs int    `yaml:"gpus"` // GPUs needed; instances = ceil(gpus / offer.gpus)
	// MinGPUMemoryGB is the least memory each GPU must have, in GB (0:
	// any): what the model, its optimizer state and a batch need.
	MinGPUMemoryGB float64     `yaml:"min_gpu_memory_gb"`
	ComputeHours   float64     `yaml:"compute_hours"` // hours the instance(s) run
	SpanDays       int         `yaml:"span_days"`     // calendar days the instance is kept
	Starts         int         `yaml:"starts"`        // times the instance is started
	DiskGB         float64     `yaml:"disk_gb"`       // data kept on each instance's disk
	EgressGB       float64     `yaml:"egress_gb"`     // data downloaded over the public network
	Interruptible  bool        `yaml:"interruptible"` // the job resumes from checkpoints, so spot is allowed
	Checkpoint     *Checkpoint `yaml:"checkpoint"`
	// OneMachine asks for all the GPUs in one instance: a job that splits
	// one model over them (tensor parallel) needs the machine's links, not
	// the network between machines.
	OneMachine bool `yaml:"one_machine"`
	// GPUsPerNode, when set, keeps the offers whose machines hold that
	// many GPUs: a job over several machines rents them whole.
	GPUsPerNode int `yaml:"gpus_per_node"`
	// SharedDisk says the instances of the job share one disk (a network
	// volume), billed once, not a disk_gb on each instance.
	SharedDisk bool `yaml:"shared_disk"`

	// spanDerived says Defaults set the span from the hours: it ends with
	// the last of them, so the rest of its last day is no stop.
	spanDerived bool
}

// Checkpoint is how the job saves and resumes.
type Checkpoint struct {
	Every   Duration `yaml:"every"`   // work between checkpoints
	Write   Duration `yaml:"write"`   // time to write one (until it is safe remotely)
	Restart Duration `yaml:"restart"` // time from an interruption to running again
	// SizeGB is what one checkpoint uploads to a store outside the
	// provider (gpurent run's --store): data transfer out, billed as
	// egress like a download, once every Every of compute.
	SizeGB float64 `yaml:"size_gb"`
}

// Uploads is how many checkpoints the task uploads, one every
// checkpoint.every of compute and the last at the end, and the GB they
// make; 0 without a checkpoint size.
func (p *Profile) Uploads() (n int, gb float64) {
	c := p.Checkpoint
	if c == nil || c.SizeGB <= 0 || c.Every <= 0 || p.ComputeHours <= 0 {
		return 0, 0
	}
	n = int(math.Ceil(p.ComputeHours/c.Every.Hours() - 1e-9))
	return n, float64(n) * c.SizeGB
}

// egressGB is all the task sends out: its downloads and its checkpoints.
func (p *Profile) egressGB() float64 {
	_, up := p.Uploads()
	return p.EgressGB + up
}

// Duration is a profile duration in Go syntax or days ("30m", "15d").
type Duration time.Duration

// UnmarshalYAML parses units.ParseDuration syntax.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return yamlfile.Invalid(n, "want a duration such as 30m or 15d")
	}
	v, err := units.ParseDuration(n.Value)
	if err != nil {
		return yamlfile.Invalid(n, "%v", err)
	}
	*d = Duration(v)
	return nil
}

// Hours is d in hours.
func (d Duration) Hours() float64 { return time.Duration(d).Hours() }

func (d Duration) String() string { return units.FormatDuration(time.Duration(d)) }

// Defaults fills what a profile may leave out: one GPU, one start, and a
// span just long enough to run the hours back to back. given reports the
// fields the user set (nil: none); those keep their value even when it is
// zero, so that "gpus: 0" or --starts 0 is refused by Validate instead of
// quietly becoming 1.
func (p *Profile) Defaults(given func(field string) bool) {
	if given == nil {
		given = func(string) bool { return false }
	}
	if p.GPUs == 0 && !given("gpus") {
		p.GPUs = 1
	}
	if p.Starts == 0 && !given("starts") {
		p.Starts = 1
	}
	if p.SpanDays == 0 && !given("span_days") && p.ComputeHours > 0 && p.ComputeHours < maxHours {
		p.SpanDays = max(1, int(math.Ceil(p.ComputeHours/24-1e-9)))
		p.spanDerived = true
	}
}

// Bounds on a profile, each well past any real task, so that a typo is
// an error naming its field rather than gigabytes of memory, an overflow
// or an answer in nonsense units.
const (
	// maxHours bounds compute_hours at a century: beyond it a number is
	// a typo, and the span derived from it would not fit in an int of
	// days.
	maxHours = 24 * 365 * 100
	// minHours is a second: a provider bills nothing shorter.
	minHours = 1.0 / 3600
	// maxDays bounds span_days at the same century: the subscription
	// cover walks the span day by day.
	maxDays = maxHours / 24
	// maxGPUs is more GPUs than the largest clusters hold (about 100,000
	// in 2026); a count beyond it is a typo, and instances × GPUs must
	// fit an int.
	maxGPUs = 1_000_000
	// maxGPUsPerNode is more than any machine holds (a rack of 72 is
	// sold as one).
	maxGPUsPerNode = 1024
	// maxGB bounds disk, egress and checkpoint sizes at an exabyte.
	maxGB = 1e9
	// maxText bounds the GPU name: the longest model name in the catalog
	// is under 40 bytes, and a megabyte of one is matched against every
	// offer and echoed in errors.
	maxText = 200
)

// checkMinMemory is the one rule for min_gpu_memory_gb: a size, 0 for any.
func checkMinMemory(gb float64) error {
	if math.IsNaN(gb) || math.IsInf(gb, 0) || gb < 0 {
		return i18n.Errorf("want a non-negative size in GB, got %v", gb)
	}
	if gb > 1e6 {
		return i18n.Errorf("want the GB one GPU holds (141 for an H200), got %v", gb)
	}
	return nil
}

// Validate reports every problem as a field path.
func (p *Profile) Validate() []yamlfile.Problem {
	var ps []yamlfile.Problem
	bad := func(field, format string, args ...any) { ps = append(ps, yamlfile.Problemf(field, format, args...)) }
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	hoursOK := finite(p.ComputeHours) && p.ComputeHours > 0 && p.ComputeHours < maxHours
	if hoursOK && p.ComputeHours < minHours {
		hoursOK = false
		bad("compute_hours", "want at least a second (%.6f h), got %v", minHours, p.ComputeHours)
	}
	switch {
	case p.ComputeHours >= maxHours && !math.IsInf(p.ComputeHours, 1):
		bad("compute_hours", "want fewer than %d hours (a century), got %v", maxHours, p.ComputeHours)
	case !hoursOK && !(p.ComputeHours > 0 && p.ComputeHours < minHours):
		bad("compute_hours", "want a positive number of hours, got %v", p.ComputeHours)
	case hoursOK && p.SpanDays >= 1 && p.SpanDays <= maxDays && p.ComputeHours > float64(p.SpanDays)*24:
		bad("compute_hours", "%v h do not fit in a span of %s (%d h)", p.ComputeHours, report.Count(p.SpanDays, "day"), p.SpanDays*24)
	}
	switch {
	case p.GPUs < 1:
		bad("gpus", "want at least 1 GPU, got %d", p.GPUs)
	case p.GPUs > maxGPUs:
		bad("gpus", "want at most %d GPUs, got %d", maxGPUs, p.GPUs)
	}
	switch {
	case p.GPUsPerNode < 0 || p.GPUsPerNode > maxGPUsPerNode:
		bad("gpus_per_node", "want 0 (any) to %d GPUs a machine, got %d", maxGPUsPerNode, p.GPUsPerNode)
	case p.GPUsPerNode > 0 && p.OneMachine:
		bad("gpus_per_node", "not with one_machine, which puts every GPU in one machine")
	case p.GPUsPerNode > 0 && p.GPUs%p.GPUsPerNode != 0:
		bad("gpus_per_node", "%d GPUs do not fill machines of %d: want a multiple", p.GPUs, p.GPUsPerNode)
	}
	// A span left out is derived from the hours: when those are wrong,
	// the one error to report is theirs.
	switch {
	case p.SpanDays < 1 && (p.SpanDays != 0 || hoursOK):
		bad("span_days", "want at least 1 day, got %d", p.SpanDays)
	case p.SpanDays > maxDays:
		bad("span_days", "want at most %d days (a century), got %d", maxDays, p.SpanDays)
	}
	switch {
	case !utf8.ValidString(p.GPU):
		bad("gpu", "not valid UTF-8 text: want a GPU model such as \"RTX 4090\"")
	case len(p.GPU) > maxText:
		bad("gpu", "want a GPU model such as \"RTX 4090\", got %d bytes of text", len(p.GPU))
	case p.GPU != "" && len(specs.Words(p.GPU)) == 0:
		// "-", ".*" or spaces: no word to match, so every offer would.
		bad("gpu", "want a GPU model such as \"RTX 4090\", got %q", p.GPU)
	}
	switch {
	case p.Starts < 1:
		bad("starts", "want at least 1 start, got %d", p.Starts)
	case hoursOK && float64(p.Starts) > p.ComputeHours*3600:
		// Each start's run is rounded up to the provider's increment: a
		// start of less than a second is a typo, and would be billed as
		// a minimum many times over.
		bad("starts", "%d starts do not fit in %v h of compute (each would run less than a second)", p.Starts, p.ComputeHours)
	}
	if err := checkMinMemory(p.MinGPUMemoryGB); err != nil {
		bad("min_gpu_memory_gb", "%v", err)
	}
	size := func(field string, v float64) {
		switch {
		case !finite(v) || v < 0:
			bad(field, "want a non-negative size, got %v", v)
		case v > maxGB:
			bad(field, "want at most %g GB (an exabyte), got %v", maxGB, v)
		}
	}
	size("disk_gb", p.DiskGB)
	size("egress_gb", p.EgressGB)
	if c := p.Checkpoint; c != nil {
		century := Duration(maxHours * time.Hour)
		switch {
		case c.Every < Duration(time.Second):
			bad("checkpoint.every", "want an interval of a second or more, such as 30m, got %v", c.Every)
		case c.Every > century:
			bad("checkpoint.every", "want at most a century, got %v", c.Every)
		}
		for _, d := range []struct {
			field string
			v     Duration
		}{{"checkpoint.write", c.Write}, {"checkpoint.restart", c.Restart}} {
			switch {
			case d.v < 0:
				bad(d.field, "want a non-negative time, got %v", d.v)
			case d.v > century:
				bad(d.field, "want at most a century, got %v", d.v)
			}
		}
		size("checkpoint.size_gb", c.SizeGB)
		if n, gb := p.Uploads(); hoursOK && c.Every > 0 && gb > maxGB {
			bad("checkpoint.size_gb", "%d uploads of %v GB make %.3g GB of egress, more than an exabyte: check --ckpt-size and --ckpt-every", n, c.SizeGB, gb)
		}
	}
	return ps
}

// DecodeProfile decodes a profile file strictly without completing or
// validating it, so that flags can override its fields first.
func DecodeProfile(file string, data []byte) (*Profile, *yamlfile.Index, error) {
	var p Profile
	ix, err := yamlfile.Decode(file, data, &p)
	if err != nil {
		return nil, nil, err
	}
	return &p, ix, nil
}

// ParseProfile decodes, completes and validates a profile file.
func ParseProfile(file string, data []byte) (*Profile, *yamlfile.Index, error) {
	p, ix, err := DecodeProfile(file, data)
	if err != nil {
		return nil, nil, err
	}
	p.Defaults(ix.Has)
	if err := ix.Place(file, p.Validate()); err != nil {
		return nil, nil, err
	}
	return p, ix, nil
}

// MaxProfileSize caps a profile file: a dozen fields take a few hundred
// bytes, so 1 MiB is no real profile's size.
const MaxProfileSize = 1 << 20

// ReadProfile reads and parses a profile file: a regular file of at most
// MaxProfileSize bytes (userfile.Read).
func ReadProfile(path string) (*Profile, *yamlfile.Index, error) {
	data, err := userfile.Read(path, MaxProfileSize)
	if err != nil {
		return nil, nil, i18n.Errorf("read profile: %w", err)
	}
	return ParseProfile(path, data)
}
