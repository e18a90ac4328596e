// Package specs is the datasheet table of the GPUs people rent: per-precision
// dense peaks, memory size and bandwidth, PCIe link, TDP and SM count, one
// source per row, and the PCI device ids that identify a card independently
// of the name its driver reports. bench judges a delivered card against its
// own row, and an order ("A100 80GB SXM") against the rows it accepts.
//
// gpu_specs.csv is the sourced research table as gathered (tensor figures
// dense, 2:4 sparsity halved, see NOTES.md); it is embedded verbatim so the
// binary and the evidence cannot drift apart.
package specs

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"strconv"
	"strings"
	"unicode"

	"github.com/gpurent/gpurent/internal/i18n"
)

//go:embed gpu_specs.csv
var specsCSV []byte

// AsOf dates the table: its sources were read between these snapshots
// (NOTES.md: ml-engineering 2026-08-22, gpu-specs 2025-04-30, ROCm 2025-03-21).
const AsOf = "2025-03-21 to 2026-08-22"

// GPU is one datasheet row. A zero figure is unknown (blank in the table:
// not found in the sources, or not supported); never judge against it.
type GPU struct {
	Model             string   `json:"model"`
	Variant           string   `json:"variant"`
	MemoryGB          float64  `json:"memory_gb"` // the vendor's label ("80GB"), about GiB
	MemoryType        string   `json:"memory_type"`
	MemoryBWGBs       float64  `json:"memory_bw_gbs"`
	FP32TFLOPS        float64  `json:"fp32_tflops"`
	TF32TFLOPS        float64  `json:"tf32_tflops"`
	BF16TFLOPS        float64  `json:"bf16_tflops"`
	FP16TFLOPS        float64  `json:"fp16_tflops"` // with FP32 accumulate
	FP8TFLOPS         float64  `json:"fp8_tflops"`
	INT8TOPS          float64  `json:"int8_tops"`
	SMs               int      `json:"sms"`
	BoostMHz          int      `json:"boost_mhz"`
	TDPW              float64  `json:"tdp_w"`
	PCIeGen           int      `json:"pcie_gen"`
	PCIeLanes         int      `json:"pcie_lanes"`
	NVLinkGBs         float64  `json:"nvlink_gbs"` // bidirectional per GPU
	ComputeCapability string   `json:"compute_capability"`
	Source            string   `json:"source"`
	PCIIDs            []uint16 `json:"pci_ids,omitempty"`
}

// MemoryWords are the words a card's memory is named by, as in "H100 80GB
// HBM3": its size ("80gb") and type ("hbm3"), each when known.
func (g *GPU) MemoryWords() []string {
	var out []string
	if g.MemoryGB > 0 {
		out = append(out, strconv.FormatFloat(g.MemoryGB, 'f', -1, 64)+"gb")
	}
	return append(out, Words(g.MemoryType)...)
}

// IsNVIDIA reports whether the row is an NVIDIA part (the table also has AMD
// rows, which bench cannot probe through NVML).
func (g *GPU) IsNVIDIA() bool { return !strings.HasPrefix(g.Model, "AMD ") }

// Table is the parsed datasheet table.
type Table struct{ GPUs []GPU }

// Load parses the embedded table and attaches the PCI ids.
func Load() (*Table, error) {
	r := csv.NewReader(bytes.NewReader(specsCSV))
	rows, err := r.ReadAll()
	if err != nil {
		return nil, i18n.Errorf("embedded GPU table: %w", err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	t := &Table{}
	for n, row := range rows[1:] {
		get := func(k string) string {
			i, ok := col[k]
			if !ok {
				return ""
			}
			return strings.TrimSpace(row[i])
		}
		num := func(k string) (float64, error) {
			s := get(k)
			if s == "" {
				return 0, nil
			}
			return strconv.ParseFloat(s, 64)
		}
		g := GPU{Model: get("model"), Variant: get("variant"), MemoryType: get("memory_type"),
			ComputeCapability: get("compute_capability"), Source: get("source_url")}
		for _, f := range []struct {
			k   string
			dst *float64
		}{{"memory_gib", &g.MemoryGB}, {"memory_bw_gbs", &g.MemoryBWGBs}, {"fp32_tflops", &g.FP32TFLOPS},
			{"tf32_tensor_tflops", &g.TF32TFLOPS}, {"bf16_tensor_tflops", &g.BF16TFLOPS}, {"fp16_tensor_tflops", &g.FP16TFLOPS},
			{"fp8_tensor_tflops", &g.FP8TFLOPS}, {"int8_tops", &g.INT8TOPS}, {"tdp_w", &g.TDPW}, {"nvlink_gbs", &g.NVLinkGBs}} {
			v, err := num(f.k)
			if err != nil {
				return nil, i18n.Errorf("embedded GPU table row %d (%s): %s: %w", n+2, g.Model, f.k, err)
			}
			*f.dst = v
		}
		for _, f := range []struct {
			k   string
			dst *int
		}{{"sm_count", &g.SMs}, {"boost_clock_mhz", &g.BoostMHz}, {"pcie_gen", &g.PCIeGen}, {"pcie_lanes", &g.PCIeLanes}} {
			v, err := num(f.k)
			if err != nil {
				return nil, i18n.Errorf("embedded GPU table row %d (%s): %s: %w", n+2, g.Model, f.k, err)
			}
			*f.dst = int(v)
		}
		if g.Model == "" || g.Source == "" {
			return nil, i18n.Errorf("embedded GPU table row %d: model and source_url are required", n+2)
		}
		t.GPUs = append(t.GPUs, g)
	}
	for _, id := range pciIDs() {
		g := t.byModel(id.model)
		if g == nil {
			return nil, i18n.Errorf("PCI id %04x names model %q, which is not in the GPU table", id.device, id.model)
		}
		g.PCIIDs = append(g.PCIIDs, id.device)
	}
	return t, nil
}

func (t *Table) byModel(model string) *GPU {
	for i := range t.GPUs {
		if t.GPUs[i].Model == model {
			return &t.GPUs[i]
		}
	}
	return nil
}

// ByPCI returns the row of a PCI device id (the high 16 bits of NVML's
// pciDeviceId; the low 16 are NVIDIA's vendor id 0x10de), or nil.
func (t *Table) ByPCI(device uint16) *GPU {
	for i := range t.GPUs {
		for _, id := range t.GPUs[i].PCIIDs {
			if id == device {
				return &t.GPUs[i]
			}
		}
	}
	return nil
}

// KnownPCIName names PCI device ids that pci.ids lists but the datasheet
// table has no row for, so bench can still say what the card is.
func KnownPCIName(device uint16) string {
	for _, id := range append(pciIDs(), unmatchedPCIIDs()...) {
		if id.device == device {
			return id.name
		}
	}
	return ""
}

// Match returns every row whose words contain all of want's words, after
// normalising form factors ("SXM4", "SXM5" are "SXM") and ignoring
// "NVIDIA" and "GeForce": "H100" accepts all H100 rows, "H100 SXM" only the
// SXM5 one, "A100 80GB SXM" only "A100 80GB SXM4". Order does not matter;
// "H20" does not match "H200". Words may run together ("rtx4090",
// "H100SXM"; see RunTogether).
func (t *Table) Match(want string) []*GPU {
	w := Words(want)
	if len(w) == 0 {
		return nil
	}
	var out []*GPU
	byDriver := t.byDriverWords(w)
	for i := range t.GPUs {
		have := map[string]bool{}
		m := Words(t.GPUs[i].Model + " " + t.GPUs[i].Variant)
		for _, x := range m {
			have[x] = true
		}
		// Offers and the driver name a card by its memory too ("H100
		// 80GB", "NVIDIA H100 80GB HBM3"): the row's size and type are
		// words of its name as well.
		for _, x := range t.GPUs[i].MemoryWords() {
			have[x] = true
		}
		all := true
		for _, x := range w {
			if !have[x] && !RunTogether(m, x) {
				all = false
				break
			}
		}
		if all || byDriver == &t.GPUs[i] {
			out = append(out, &t.GPUs[i])
		}
	}
	return out
}

// RunTogether reports whether word is some consecutive words of words
// written without the spaces between them, as people type names
// ("rtx4090", "h100sxm5"): still whole words, so "rtx4090" is not
// "RTX 4090 D" and "h20" is not "H200". A form factor's digit is dropped
// as Words drops it ("h100sxm5" is "h100" "sxm").
func RunTogether(words []string, word string) bool {
	if i := strings.LastIndex(word, "sxm"); i >= 0 && i+4 == len(word) && unicode.IsDigit(rune(word[i+3])) {
		word = word[:i+3]
	}
	for i := range words {
		run := ""
		for j := i; j < len(words) && len(run) < len(word); j++ {
			if run += words[j]; run == word {
				return true
			}
		}
	}
	return false
}

// ByName finds the row for a name as NVML reports it ("NVIDIA H100 80GB
// HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA GeForce RTX 4090"): the row whose
// model words all appear in the name, preferring the most specific row,
// after the names drivers give rows in other words (drivernames.go).
func (t *Table) ByName(name string) *GPU {
	if g := t.ByDriverName(name); g != nil {
		return g
	}
	have := map[string]bool{}
	for _, x := range Words(name) {
		have[x] = true
	}
	var best *GPU
	bestN := 0
	for i := range t.GPUs {
		w := Words(t.GPUs[i].Model)
		ok := len(w) > 0
		for _, x := range w {
			if !have[x] {
				ok = false
				break
			}
		}
		if ok && len(w) > bestN {
			best, bestN = &t.GPUs[i], len(w)
		}
	}
	return best
}

// Words splits a GPU name into normalised lower-case words: letters and
// digits only; "SXM4"/"SXM5"/"SXM2" become "sxm"; "nvidia", "geforce" and
// "tesla" are dropped; a lone letter after a number joins it ("4090 D" is
// "4090d"); "80 GB" is "80gb", and so is "80G" (the HBM3e GH200's driver
// name says "144G").
func Words(s string) []string {
	f := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	var out []string
	for _, w := range f {
		switch {
		case w == "nvidia" || w == "geforce" || w == "tesla":
			continue
		case strings.HasPrefix(w, "sxm") && strings.Trim(w[3:], "0123456789") == "":
			w = "sxm"
		}
		if len(out) > 0 && (w == "gb" || (len(w) == 1 && unicode.IsLetter(rune(w[0])))) {
			prev := out[len(out)-1]
			if prev != "" && unicode.IsDigit(rune(prev[len(prev)-1])) {
				out[len(out)-1] += w
				continue
			}
		}
		out = append(out, w)
	}
	for i, w := range out {
		if n, ok := strings.CutSuffix(w, "g"); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			out[i] = n + "gb"
		}
	}
	return out
}

// Peak is the dense datasheet peak in TFLOPS for a precision ("fp32",
// "tf32", "bf16", "fp16", "fp8"), 0 when unknown.
func (g *GPU) Peak(precision string) float64 {
	switch precision {
	case "fp32":
		return g.FP32TFLOPS
	case "tf32":
		return g.TF32TFLOPS
	case "bf16":
		return g.BF16TFLOPS
	case "fp16":
		return g.FP16TFLOPS
	case "fp8":
		return g.FP8TFLOPS
	}
	return 0
}
