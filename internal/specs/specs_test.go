package specs

import "testing"

func load(t *testing.T) *Table {
	t.Helper()
	tab, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func TestTable(t *testing.T) {
	tab := load(t)
	nvidia := 0
	for _, g := range tab.GPUs {
		if g.IsNVIDIA() {
			nvidia++
		}
	}
	if nvidia < 30 {
		t.Errorf("%d NVIDIA rows, want at least 30", nvidia)
	}
	h := tab.ByPCI(0x2330)
	if h == nil || h.Model != "H100 SXM5" || h.BF16TFLOPS != 989.5 || h.TDPW != 700 || h.MemoryGB != 80 || h.PCIeGen != 5 {
		t.Errorf("0x2330: %+v", h)
	}
	if g := tab.ByPCI(0x2329); g == nil || g.Model != "H20" || g.BF16TFLOPS != 148 {
		t.Errorf("0x2329: %+v", g)
	}
	if tab.ByPCI(0x2339) != nil || KnownPCIName(0x2339) != "H100 SXM5 94GB" {
		t.Error("0x2339 has a pci.ids name but no datasheet row")
	}
}

func TestMatch(t *testing.T) {
	tab := load(t)
	models := func(want string) []string {
		var out []string
		for _, g := range tab.Match(want) {
			out = append(out, g.Model)
		}
		return out
	}
	for want, exp := range map[string][]string{
		"A100 80GB SXM": {"A100 80GB SXM4"},
		"h100 sxm":      {"H100 SXM5"},
		"H100":          {"H100 PCIe", "H100 SXM5", "H100 NVL"},
		"H20":           {"H20"},
		"RTX 4090":      {"GeForce RTX 4090"},
		"RTX 4090D":     {"GeForce RTX 4090 D"},
		// Run together, as people type them; still whole words.
		"rtx4090":       {"GeForce RTX 4090"},
		"rtx4090d":      {"GeForce RTX 4090 D"},
		"H100SXM5":      {"H100 SXM5"},
		"h100sxm":       {"H100 SXM5"},
		"a100 80gbsxm4": {"A100 80GB SXM4"},
		"H200nvl":       {"H200 NVL"},
		"rtx409":        nil,
		"h10":           nil,
		"sxm5h100":      nil,
		"A100 80GB":     {"A100 80GB PCIe", "A100 80GB SXM4"},
		"TPU":           nil,
		// By memory, as offers and the driver name cards: the rows of
		// that size (and memory type); a wrong size matches none.
		"H100 80GB":      {"H100 PCIe", "H100 SXM5"},
		"H100 80GB HBM3": {"H100 SXM5"},
		"H100 94GB":      {"H100 NVL"},
		"H200 141GB":     {"H200 SXM", "H200 NVL"},
		"RTX 4090 24GB":  {"GeForce RTX 4090"},
		"H100 40GB":      nil,
		"A100 80GB HBM3": nil,
		// A GH200 by the name its driver gives it, or by its HBM.
		"GH200":             {"GH200 (96GB HBM3)", "GH200 (144GB HBM3e)"},
		"GH200 480GB":       {"GH200 (96GB HBM3)"},
		"nvidia gh200 144g": {"GH200 (144GB HBM3e)"},
		"GH200 96GB":        {"GH200 (96GB HBM3)"},
	} {
		got := models(want)
		if len(got) != len(exp) {
			t.Errorf("Match(%q) = %q, want %q", want, got, exp)
			continue
		}
		for i := range got {
			if got[i] != exp[i] {
				t.Errorf("Match(%q) = %q, want %q", want, got, exp)
			}
		}
	}
}

func TestByName(t *testing.T) {
	tab := load(t)
	for name, model := range map[string]string{
		"NVIDIA H100 PCIe":        "H100 PCIe",
		"NVIDIA A100-SXM4-80GB":   "A100 80GB SXM4",
		"NVIDIA GeForce RTX 4090": "GeForce RTX 4090",
		"NVIDIA L40S":             "L40S",
		"NVIDIA H20":              "H20",
		"NVIDIA H200":             "",
		// A GH200's driver names it by the Grace CPU's LPDDR5X, or with
		// "144G" for the HBM3e one.
		"NVIDIA GH200 480GB":       "GH200 (96GB HBM3)",
		"NVIDIA GH200 144G HBM3e":  "GH200 (144GB HBM3e)",
		"NVIDIA GH200":             "",
		"Some Unknown Accelerator": "",
	} {
		g := tab.ByName(name)
		got := ""
		if g != nil {
			got = g.Model
		}
		if got != model {
			t.Errorf("ByName(%q) = %q, want %q", name, got, model)
		}
	}
}
