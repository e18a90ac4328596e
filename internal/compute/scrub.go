package compute

import (
	"context"
	"fmt"
	"time"
)

// Scrub is what wipe --gpu did to one GPU's free memory.
type Scrub struct {
	BusID string `json:"bus_id,omitempty"`
	// Residue is the residue check that ran first: where fresh memory
	// read back as zeros the driver clears memory between processes, and
	// the scrub is skipped unless forced.
	Residue Result `json:"residue"`
	Skipped bool   `json:"skipped,omitempty"`
	// InUse is set where, unforced, more of the memory was taken than a
	// context's own share (InUseAbove): someone's job is running there,
	// whether or not NVML could say whose.
	InUse bool `json:"in_use,omitempty"`
	// FreeBytes is what cuMemGetInfo called free before; ScrubbedBytes
	// what was allocated, filled with zeros and read back; NonzeroBytes
	// the bytes that did not read back as zero (0 on a sound card).
	FreeBytes     uint64  `json:"free_bytes"`
	TotalBytes    uint64  `json:"total_bytes"`
	ScrubbedBytes uint64  `json:"scrubbed_bytes"`
	NonzeroBytes  uint64  `json:"nonzero_bytes"`
	Ms            float64 `json:"ms"`
	Error         string  `json:"error,omitempty"`
}

// Scrub fills the free memory of device with zeros and reads all of it
// back, so that nothing a process of this tenancy left there reaches the
// next tenant through a driver that does not clear memory. It allocates
// everything the driver will give, down to pieces of 2 MiB, and frees it
// again. It first samples fresh memory for residue: where that reads
// back as zeros the driver clears memory itself, and unless force is set
// the scrub is skipped and says so. Memory that running processes hold
// is theirs until they exit and is not touched; unless forced, a GPU
// where more than InUseAbove is taken is not scrubbed at all, since
// taking every free byte could crash a job still running there.
func (cu CUDA) Scrub(ctx context.Context, device int, force bool) Scrub {
	var s Scrub
	c, err := openCUDA(cu.Library, device)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	defer c.close()
	s.BusID = c.busID()
	start := time.Now()
	if s.FreeBytes, s.TotalBytes, err = c.memInfo(); err != nil {
		s.Error = err.Error()
		return s
	}
	if !force && s.TotalBytes-s.FreeBytes > InUseAbove(s.TotalBytes) {
		s.InUse = true
		return s
	}
	s.Residue = c.residue()
	if ctx.Err() != nil {
		s.Error = ctx.Err().Error()
		return s
	}
	if !force && s.Residue.Error == "" && s.Residue.Value == 0 {
		s.Skipped = true
		s.Ms = float64(time.Since(start).Microseconds()) / 1e3
		return s
	}
	if s.FreeBytes, s.TotalBytes, err = c.memInfo(); err != nil {
		s.Error = err.Error()
		return s
	}
	common, err := c.load(ptxCommon)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	defer c.unload(common)
	sms, err := c.attr(cuAttrSMCount)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	// The checker's result words first: the pieces then take the rest.
	k, err := newChecker(c, common, sms, int(s.FreeBytes>>30)+12) // and the halves down to 2 MiB
	if err != nil {
		s.Error = err.Error()
		return s
	}
	defer k.close()
	ps, err := c.allocPieces(s.FreeBytes)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	defer c.freePieces(ps)
	if len(ps) > len(k.host) {
		s.Error = fmt.Sprintf("%d pieces for %d results", len(ps), len(k.host))
		return s
	}
	for _, pc := range ps {
		if err := c.check("cuMemsetD8_v2", uintptr(pc.ptr), 0, uintptr(pc.size)); err != nil {
			s.Error = err.Error()
			return s
		}
	}
	if err := k.sweep(ps, mtPass{mode: 0, arg: 0}); err != nil {
		s.Error = err.Error()
		return s
	}
	if err := k.read(); err != nil {
		s.Error = err.Error()
		return s
	}
	for i := range ps {
		s.NonzeroBytes += k.host[i][1]
	}
	s.ScrubbedBytes = bytesOf(ps)
	s.Ms = float64(time.Since(start).Microseconds()) / 1e3
	return s
}

// InUseAbove is how much of a GPU's memory may be taken, by the driver and
// this process's own context, before someone else is taken to be using
// it: 2 GiB or 3% of the card, whichever is more, well above what a
// context and the driver's own reservation take (hundreds of MiB); not
// yet checked on a real card.
func InUseAbove(total uint64) uint64 { return max(2<<30, total/100*3) }
