// Package compute measures what a card delivers, as opposed to what NVML says
// it is: arithmetic throughput per precision, the GEMM users run (through
// cuBLASLt, loaded at run time like the driver), memory and PCIe
// bandwidth, allocatable memory, and whether a fixed kernel keeps its
// speed when launched back to back (time slicing, MPS sharing and
// throttling show there). Backends share one interface: cuda (the driver
// API through purego, with embedded PTX), torch (an embedded script, a
// cross-check) and cpu (the host, so the whole pipeline runs without a
// GPU).
//
// Without a GPU to test on, the cuda backend's tests drive it against a
// simulated driver and cuBLASLt (testdata/fakecuda.c, fakecublaslt.c),
// written from NVIDIA's headers, on a virtual clock: they
// prove the calls, the bookkeeping and the arithmetic, not the speed.
package compute
