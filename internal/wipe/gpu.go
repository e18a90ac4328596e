package wipe

import "github.com/gpurent/gpurent/internal/i18n"

// GPU is what wipe --gpu did, or would do, to one GPU's free memory. The
// wipe package holds no GPU code: internal/gpuwipe fills these from the cuda
// backend and NVML, and the report carries them beside the files.
type GPU struct {
	Index  int    `json:"index"` // NVML's numbering, as bench's gpuN
	Name   string `json:"name,omitempty"`
	BusID  string `json:"bus_id,omitempty"`
	Status string `json:"status"` // GPUPlanned, GPUScrubbed, GPUDriverClears, GPUInUse or GPUFailed
	// FreeBytes is what was free before; ScrubbedBytes what was filled
	// with zeros and read back; NonzeroBytes what did not read back as
	// zero.
	// TotalBytes is the GPU's memory: what is neither free nor scrubbed
	// the driver and running processes held.
	TotalBytes    uint64 `json:"total_bytes,omitempty"`
	FreeBytes     uint64 `json:"free_bytes,omitempty"`
	ScrubbedBytes uint64 `json:"scrubbed_bytes,omitempty"`
	NonzeroBytes  uint64 `json:"nonzero_bytes,omitempty"`
	// MIG is set where the GPU is split into MIG instances, which
	// wipe --gpu does not scrub.
	MIG bool `json:"mig,omitempty"`
	// Residue is the residue check that ran first, in words.
	Residue i18n.Text `json:"residue,omitempty"`
	// HeldBy names the processes holding memory on this GPU ("pid N
	// (SIZE)"), or says NVML could not tell: theirs is not free, so no
	// scrub reaches it until they exit.
	HeldBy []string  `json:"held_by,omitempty"`
	Error  i18n.Text `json:"error,omitempty"`
}

// The states of a GPU in the report.
const (
	GPUPlanned      = "planned"       // the dry run's: to be scrubbed with --yes
	GPUScrubbed     = "scrubbed"      // filled with zeros and read back as zeros
	GPUDriverClears = "driver clears" // fresh memory read as zeros: the driver clears it between processes; nothing done
	GPUInUse        = "in use"        // processes hold memory there: not scrubbed, unless forced
	GPUFailed       = "failed"        // not scrubbed, not all of the free memory reached, or not read back as zeros
	GPUNotRun       = "not run"       // the wipe stopped before it
)
