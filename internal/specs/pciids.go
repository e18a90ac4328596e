package specs

// pciID ties a PCI device id to a datasheet row. Source: pciutils/pciids
// pci.ids at commit c1c12547. model is the row's model name; name is pci.ids' wording, kept for
// ids whose card has no row.
type pciID struct {
	device uint16
	model  string
	name   string
}

// pciIDs is returned fresh on each call so the table cannot be modified.
func pciIDs() []pciID {
	return []pciID{
		{0x20b0, "A100 40GB SXM4", "A100 SXM4 40GB"},
		{0x20b2, "A100 80GB SXM4", "A100 SXM4 80GB"},
		{0x20b5, "A100 80GB PCIe", "A100 PCIe 80GB"},
		{0x20f1, "A100 40GB PCIe", "A100 PCIe 40GB"},
		{0x20f3, "A800 80GB SXM4", "A800-SXM4-80GB"},
		{0x20f5, "A800 80GB PCIe", "A800 80GB PCIe"},
		{0x2321, "H100 NVL", "H100L 94GB"},
		{0x2324, "H800 SXM5", "H800"},
		{0x2329, "H20", "H20"},
		{0x2330, "H100 SXM5", "H100 SXM5 80GB"},
		{0x2331, "H100 PCIe", "H100 PCIe"},
		{0x2335, "H200 SXM", "H200 SXM 141GB"},
		{0x233b, "H200 NVL", "H200 NVL"},
		{0x2684, "GeForce RTX 4090", "RTX 4090"},
		{0x2685, "GeForce RTX 4090 D", "RTX 4090 D"},
		{0x26b5, "L40", "L40"},
		{0x26b9, "L40S", "L40S"},
		{0x27b8, "L4", "L4"},
		{0x2901, "B200", "B200"},
		{0x2b85, "GeForce RTX 5090", "RTX 5090"},
	}
}

// unmatchedPCIIDs are in pci.ids (same source) without a datasheet row.
func unmatchedPCIIDs() []pciID {
	return []pciID{
		{0x20b3, "", "A100-SXM-64GB"},
		{0x20bd, "", "A800 SXM4 40GB"},
		{0x20f6, "", "A800 40GB PCIe"},
		{0x2322, "", "H800 PCIe"},
		{0x232c, "", "H20 HBM3e"},
		{0x2339, "", "H100 SXM5 94GB"},
		{0x233a, "", "H800L 94GB"},
	}
}
