package specs

import "slices"

// driverName ties a name NVML reports to a datasheet row whose words are
// not in it.
type driverName struct {
	name, model, source string
}

// driverNames: a GH200's driver names the superchip by its Grace CPU's
// memory, "480GB" of LPDDR5X, not by the GPU's 96 GB of HBM3.
func driverNames() []driverName {
	return []driverName{
		// 97280 MB of GPU memory under this name, driver 555.42.06.
		{"NVIDIA GH200 480GB", "GH200 (96GB HBM3)", "https://github.com/mredenti/PowerCapping/blob/main/configuration/OpenCL_benchmark.md (read 2026-12-03)"},
	}
}

// ByDriverName is the row of a name a driver gives a card in other words
// than its datasheet row's ("NVIDIA GH200 480GB" is the 96 GB GH200),
// compared word by word in any case, or nil: quote reads such a name, as
// nvidia-smi prints it, as the row it stands for.
func (t *Table) ByDriverName(name string) *GPU {
	w := Words(name)
	for _, d := range driverNames() {
		if slices.Equal(Words(d.name), w) {
			return t.byModel(d.model)
		}
	}
	return nil
}

// byDriverWords is the row of the driver name all of want's words are in
// ("GH200 480GB" as an order names the 96 GB GH200), or nil; an order the
// row's own words match finds it without this.
func (t *Table) byDriverWords(want []string) *GPU {
	for _, d := range driverNames() {
		have := Words(d.name)
		if len(want) > 0 && !slices.ContainsFunc(want, func(x string) bool { return !slices.Contains(have, x) }) {
			return t.byModel(d.model)
		}
	}
	return nil
}
