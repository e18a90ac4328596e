// Package gpu measures what a card delivers, as opposed to what NVML says
// it is: arithmetic throughput per precision, memory and PCIe bandwidth,
// allocatable memory, and whether a fixed kernel keeps its speed when
// launched back to back (time slicing, MPS sharing and throttling show
// there). Backends share one interface: cuda (the driver API through
// purego, with embedded PTX), torch (an embedded script, a cross-check)
// and cpu (the host, so the whole pipeline runs without a GPU).
package gpu
