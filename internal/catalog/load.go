package catalog

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/specs"
	"github.com/gpurent/gpurent/internal/suggest"
	"github.com/gpurent/gpurent/internal/userfile"
)

// defaultYAML is the embedded catalog, generated from the sourced research
// table by gencatalog (see its doc comment for the rules it applies).
//
//go:embed default.yaml
var defaultYAML []byte

// ErrCatalogs is what the user's catalogs as a whole get wrong, for the
// user to mend: too many of them, or supersedes that do not hold together
// once they are merged over the embedded catalog.
type ErrCatalogs struct{ Err error }

func (e ErrCatalogs) Error() string { return e.Err.Error() }
func (e ErrCatalogs) Unwrap() error { return e.Err }

// Default parses the embedded catalog.
func Default() (*Catalog, error) {
	c, err := Parse("embedded catalog", defaultYAML)
	if err != nil {
		return nil, i18n.Errorf("embedded catalog is invalid (a build defect): %w", err)
	}
	return c, nil
}

// DefaultYAML returns the embedded catalog as written, so users can start
// their own from it.
func DefaultYAML() []byte { return append([]byte(nil), defaultYAML...) }

// DefaultJSON is the embedded catalog as one JSON document, field for
// field what DefaultYAML says (comments aside): JSON is YAML too, so
// --catalog reads it back, and a script reads it without a YAML parser.
func DefaultJSON() ([]byte, error) {
	var v any
	if err := yaml.Unmarshal(defaultYAML, &v); err != nil {
		return nil, i18n.Errorf("embedded catalog is invalid (a build defect): %w", err)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, i18n.Errorf("embedded catalog as JSON: %w", err)
	}
	return append(b, '\n'), nil
}

// MaxFileSize caps a user catalog: the embedded one, 127 offers from 28
// providers, takes about 120 KiB, so 4 MiB is some 4,000 offers, and is
// decoded in about a second; a larger file is a mistake, and 60 MiB of
// one took 3 GB of memory.
const MaxFileSize = 4 << 20

// MaxFiles bounds the catalogs merged over the embedded one.
const MaxFiles = 16

// ReadFile parses one user catalog to be merged over base's rates. It
// reads a regular file of at most MaxFileSize bytes (userfile.Read): a
// FIFO or a device is refused, not waited on or read without end.
func ReadFile(path string, base Rates) (*Catalog, error) {
	data, err := userfile.Read(path, MaxFileSize)
	if err != nil {
		return nil, err // it names the file: userfile's sentence, or the open's *fs.PathError
	}
	return ParseOver(path, data, base)
}

// Load returns the embedded catalog with the user catalogs at paths merged
// over it in order.
func Load(paths []string) (*Catalog, error) {
	if len(paths) > MaxFiles {
		return nil, ErrCatalogs{i18n.Errorf("want at most %d catalog files, got %d", MaxFiles, len(paths))}
	}
	c, err := Default()
	if err != nil {
		return nil, err
	}
	for _, p := range paths {
		u, err := ReadFile(p, c.Rates)
		if err != nil {
			return nil, err
		}
		c = Merge(c, u)
	}
	if err := CheckReadings(c.Offers); err != nil {
		return nil, ErrCatalogs{err}
	}
	return c, nil
}

// WithGPU returns the offers whose GPU matches want (all when want is
// empty), or an error that names the models the offers have when none
// does: an unknown name is most often a typo.
func WithGPU(offers []Offer, want string) ([]Offer, error) {
	if err := checkName("GPU", want); err != nil {
		return nil, err
	}
	var out []Offer
	match := GPUMatcher(want)
	for i := range offers {
		if match(&offers[i]) {
			out = append(out, offers[i])
		}
	}
	if len(out) == 0 && len(offers) > 0 {
		var names []string
		for _, o := range offers {
			if !slices.Contains(names, o.GPU) {
				names = append(names, o.GPU)
			}
		}
		slices.Sort(names)
		return nil, i18n.Errorf("no offer has GPU %q%s; the catalog has: %s", want, suggest.DidYouMean(want, names), strings.Join(names, ", "))
	}
	return out, nil
}

// Variants are the offers of models that want does not match but that
// extend its last word with letters: "4090" is not the "RTX 4090D" (a
// cut-down card sold in China, cheaper), nor "A100" the "A100X", yet a
// person asking for one would want to hear of the other.
func Variants(offers []Offer, want string) []Offer {
	w := specs.Words(want)
	if len(w) == 0 {
		return nil
	}
	last := w[len(w)-1]
	var out []Offer
	for _, o := range offers {
		if MatchGPU(o.GPU, want) {
			continue
		}
		m := specs.Words(o.GPU)
		for i, word := range m {
			suffix, ok := strings.CutPrefix(word, last)
			if !ok || suffix == "" || strings.IndexFunc(suffix, func(r rune) bool { return !unicode.IsLetter(r) }) >= 0 {
				continue
			}
			cut := slices.Clone(m)
			cut[i] = last
			if MatchGPU(strings.Join(cut, " "), want) {
				out = append(out, o)
				break
			}
		}
	}
	return out
}

// ByID is the offer of that id (as quote and catalog ls print it, in any
// case), or an error naming the nearest id: bench --offer takes the id of
// the row a person rented from.
func ByID(offers []Offer, id string) (*Offer, error) {
	id = strings.TrimSpace(id)
	ids := make([]string, len(offers))
	for i := range offers {
		if strings.EqualFold(offers[i].ID, id) {
			return &offers[i], nil
		}
		ids[i] = offers[i].ID
	}
	return nil, i18n.Errorf("no offer has id %q%s; gpurent catalog ls lists them", id, suggest.DidYouMean(id, ids))
}

// OrderedGPU is the offer's GPU as an order names it, for bench to judge
// the card against: its model, and the memory the offer states where the
// model's name gives no size ("H100" stated at 80 GB is "H100 80GB", the
// SXM or PCIe card, not the 94 GB NVL).
func (o *Offer) OrderedGPU() string {
	v, ok := o.GPUMemoryGB.Value()
	if !ok || slices.ContainsFunc(specs.Words(o.GPU), isSize) {
		return o.GPU
	}
	return fmt.Sprintf("%s %sGB", o.GPU, strconv.FormatFloat(v, 'f', -1, 64))
}

// WithProvider returns the offers from any of the providers named in want
// (all when want is empty). A name matches a provider's whole name, the
// part before its parenthesis or the part inside it, in any case:
// "alibaba cloud", "阿里云" and "Alibaba Cloud (阿里云)" all name Alibaba
// Cloud (阿里云). A name that matches none of offers is an error naming the
// providers there are.
func WithProvider(offers []Offer, want []string) ([]Offer, error) {
	if len(want) == 0 {
		return offers, nil
	}
	for _, w := range want {
		if err := checkName("provider", w); err != nil {
			return nil, err
		}
	}
	matches := MatchProvider
	var names []string
	for _, o := range offers {
		if !slices.Contains(names, o.Provider) {
			names = append(names, o.Provider)
		}
	}
	slices.Sort(names)
	for _, w := range want {
		if !slices.ContainsFunc(names, func(p string) bool { return matches(p, w) }) {
			var short []string
			for _, n := range names {
				sh, _, _ := strings.Cut(n, " (")
				short = append(short, sh)
			}
			return nil, i18n.Errorf("no offer from %q%s; providers: %s", w, suggest.DidYouMean(strings.TrimSpace(w), short), strings.Join(names, ", "))
		}
	}
	var out []Offer
	for _, o := range offers {
		if slices.ContainsFunc(want, func(w string) bool { return matches(o.Provider, w) }) {
			out = append(out, o)
		}
	}
	return out, nil
}

// providerAliases are the names people use for providers besides the
// catalog's own (its whole name, the part before the parenthesis, the
// part inside it): short forms, the company, the product, the pinyin, by
// their letters alone (nameKey). Each names the catalog's provider.
var providerAliases = map[string]string{
	"vast": "Vast.ai", "vastai": "Vast.ai",
	"gcp": "Google Cloud", "google": "Google Cloud", "gce": "Google Cloud", "googlecloudplatform": "Google Cloud", "谷歌云": "Google Cloud",
	"aws": "AWS", "amazon": "AWS", "amazonwebservices": "AWS", "ec2": "AWS", "亚马逊云": "AWS",
	"lambdalabs": "Lambda", "lambdacloud": "Lambda", "lambdaai": "Lambda",
	"microsoft": "Azure", "microsoftazure": "Azure", "微软云": "Azure",
	"alibaba": "Alibaba Cloud (阿里云)", "aliyun": "Alibaba Cloud (阿里云)",
	"tencent": "Tencent Cloud (腾讯云)", "qcloud": "Tencent Cloud (腾讯云)", "tencentcloud": "Tencent Cloud (腾讯云)",
	"hengyuan": "GPUShare (恒源云)", "hengyuanyun": "GPUShare (恒源云)", "恒源": "GPUShare (恒源云)",
	"jarvis": "Jarvislabs", "jarvislabsai": "Jarvislabs",
	"ovh": "OVHcloud", "digitalocean": "Paperspace", "together": "Together AI (GPU clusters)", "togetherai": "Together AI (GPU clusters)",
	"datacrunch": "Verda (DataCrunch)", "compshare": "UCloud Compshare (优云智算)", "ucloud": "UCloud Compshare (优云智算)",
	"autodl": "AutoDL", "gongjiyun": "Gongji (共绩算力)", "matpool": "Matpool (矩池云)", "suanjiayun": "SuanJia (算家云)",
}

// nameKey is a name by its letters and digits alone, in lower case:
// "Vast.ai", "vast ai" and "VASTAI" are one name.
func nameKey(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// MatchProvider reports whether name names provider: its whole name, the
// part before its parenthesis or the part inside it, in any case and
// spacing, or a name people use for it (providerAliases).
func MatchProvider(provider, name string) bool {
	key := nameKey(name)
	if key == "" {
		return false
	}
	short, rest, paren := strings.Cut(provider, " (")
	local, _, _ := strings.Cut(rest, ")")
	if key == nameKey(provider) || key == nameKey(short) || (paren && local != "" && key == nameKey(local)) {
		return true
	}
	return providerAliases[key] == provider
}

// maxName bounds a name a person gives (--gpu, --provider): the longest in
// the catalog is under 40 bytes, and a megabyte of one would be compared
// with every name there and echoed in the error.
const maxName = 200

// checkName refuses a name no catalog holds: too long, or not UTF-8.
func checkName(what, s string) error {
	switch {
	case !utf8.ValidString(s):
		return i18n.Errorf("the %s's name is not valid UTF-8 text", what)
	case len(s) > maxName:
		return i18n.Errorf("want a %s's name, got %d bytes of text", what, len(s))
	}
	return nil
}

// GPUMatcher is WithGPU's test of one offer, built once for want: the
// words of the offer's model (MatchGPU), or the memory it states where the
// model's name leaves it out (memoryMatcher). Anything matching offers to
// a GPU someone named (a measured rate's, a user's) asks it, so that "A100
// 80GB" means the same everywhere.
func GPUMatcher(want string) func(o *Offer) bool {
	byMemory := memoryMatcher(want)
	return func(o *Offer) bool { return MatchGPU(o.GPU, want) || byMemory(o.GPU, o.GPUMemoryGB) }
}

// memoryMatcher matches a GPU asked for with its memory, as offers and the
// driver name cards ("H100 80GB", "H100 80GB HBM3"), to offers whose model
// name leaves the memory out ("H100", "GH200"): the model matches the rest
// of the words, and every datasheet row the offer may be has that memory
// size (and type, when asked). The rows an offer may be are its model's
// with the memory the offer states (gpu_memory_gb), or all its model's rows
// where it states none. So "H100 80GB" matches an "H100" stated at 80 GB,
// the PCIe or the SXM card, and "H100 80GB HBM3" does not, the PCIe card's
// being HBM2e; an "H100" of unknown memory may be the 94 GB NVL and matches
// neither. An offer whose stated memory no row of its model has (a P100,
// which the table lacks; a 4090 rebuilt with 48 GB) matches that size, by
// its word alone. A name a driver gives a card in other words ("GH200
// 480GB", named after the Grace CPU's memory) is read as the row it stands
// for. A want without a memory size is not matched.
func memoryMatcher(want string) func(model string, memoryGB Fee) bool {
	none := func(string, Fee) bool { return false }
	tab, err := specs.Load()
	if err != nil {
		return none
	}
	words := specs.Words(want)
	if g := tab.ByDriverName(want); g != nil {
		words = append(specs.Words(g.Model), g.MemoryWords()...)
	}
	var rest, size, kind []string
	for _, w := range words {
		switch {
		case isSize(w):
			if !slices.Contains(size, w) {
				size = append(size, w)
			}
		case strings.HasPrefix(w, "hbm") || strings.HasPrefix(w, "gddr"):
			if !slices.Contains(kind, w) {
				kind = append(kind, w)
			}
		default:
			rest = append(rest, w)
		}
	}
	if len(size) != 1 || len(rest) == 0 {
		return none
	}
	return func(model string, memoryGB Fee) bool {
		if !MatchGPU(model, strings.Join(rest, " ")) {
			return false
		}
		rows := modelRows(tab, model, memoryGB)
		if len(rows) == 0 {
			// No datasheet row of that memory (a P100, a 4090 rebuilt with
			// 48 GB): the size the offer states is the evidence, and it
			// says no memory type.
			v, ok := memoryGB.Value()
			return ok && len(kind) == 0 && strconv.FormatFloat(v, 'f', -1, 64)+"gb" == size[0]
		}
		for _, g := range rows {
			have := g.MemoryWords()
			if !slices.Contains(have, size[0]) || slices.ContainsFunc(kind, func(k string) bool { return !slices.Contains(have, k) }) {
				return false
			}
		}
		return true
	}
}

// isSize reports whether a word of a GPU's name (specs.Words) is a memory
// size, "80gb".
func isSize(w string) bool {
	n, ok := strings.CutSuffix(w, "gb")
	return ok && n != "" && strings.Trim(n, "0123456789") == ""
}

// modelRows are the datasheet rows an offer's model may be: those whose
// model name holds all its words ("H200": the SXM and the NVL), of the
// memory the offer states, when it states one.
func modelRows(tab *specs.Table, model string, memoryGB Fee) []*specs.GPU {
	var rows []*specs.GPU
	mw := specs.Words(model)
	stated, known := memoryGB.Value()
	for i := range tab.GPUs {
		g := &tab.GPUs[i]
		have := specs.Words(g.Model)
		if !slices.ContainsFunc(mw, func(w string) bool { return !slices.Contains(have, w) }) && (!known || g.MemoryGB == stated) {
			rows = append(rows, g)
		}
	}
	return rows
}

// MemoryGB is how much memory each of the offer's GPUs has: what the offer
// states, else the least and the most of the datasheet rows its model may
// be (lo < hi where they differ: an "H100" is 80 or 94 GB). Both are 0
// where neither says; unknown is not a size.
func MemoryGB(o *Offer, tab *specs.Table) (lo, hi float64) {
	if v, ok := o.GPUMemoryGB.Value(); ok {
		return v, v
	}
	for _, g := range modelRows(tab, o.GPU, Fee{}) {
		if g.MemoryGB <= 0 {
			return 0, 0
		}
		if lo == 0 || g.MemoryGB < lo {
			lo = g.MemoryGB
		}
		hi = max(hi, g.MemoryGB)
	}
	return lo, hi
}

// MatchGPU reports whether the offer's GPU model is the one asked for. The
// words of want (specs.Words: case, spacing and "GeForce" ignored) must
// appear in order in the model name: "H100" matches "H100 SXM" and "H100 PCIe", "RTX 4090" matches
// "GeForce RTX 4090" but not "RTX 4090D", and so does "rtx4090". An empty
// want matches every GPU.
func MatchGPU(model, want string) bool {
	w := specs.Words(want)
	if len(w) == 0 {
		return true
	}
	m := specs.Words(model)
	for i := 0; i+len(w) <= len(m); i++ {
		ok := true
		for j := range w {
			if m[i+j] != w[j] {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	// Written without its spaces ("rtx4090", "a100-80gb"): the same words
	// run together, still whole words ("rtx4090" is not "RTX 4090D").
	return specs.RunTogether(m, strings.Join(w, ""))
}

// Current splits offers into the newest readings and the older ones they
// supersede (Offer.Supersedes): two readings of one offer are one offer,
// and its older price would otherwise rank beside, or above, its price
// today. supersededBy maps each older reading's id to the newest one's.
func Current(offers []Offer) (current []Offer, supersededBy map[string]string) {
	supersededBy = map[string]string{}
	for _, o := range offers {
		for _, old := range o.Supersedes {
			if _, seen := supersededBy[old]; !seen {
				supersededBy[old] = o.ID
			}
		}
	}
	// A chain (C supersedes B, B supersedes A) names the newest for all.
	for old, by := range supersededBy {
		for range len(supersededBy) {
			next, ok := supersededBy[by]
			if !ok || next == old {
				break
			}
			by = next
		}
		supersededBy[old] = by
	}
	for _, o := range offers {
		if by, ok := supersededBy[o.ID]; !ok || by == o.ID {
			current = append(current, o)
		}
	}
	return current, supersededBy
}

// AmongGPU says, after a --provider error, which offers the provider list
// was drawn from: "" without a GPU.
func AmongGPU(gpu string) string {
	if gpu == "" {
		return ""
	}
	return fmt.Sprintf(" (among the offers with GPU %q)", gpu)
}
