package compute

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/gpurent/gpurent/internal/i18n"
)

// ProbeMemtest is the memory test bench runs with --memtest: pattern
// passes over the free memory, wrong words counted.
const ProbeMemtest = "memtest"

// checkWords is the size of a check kernel's result (kernels/common.cu):
// words wrong, bytes wrong, ~first word, last word, wrong bits, the
// largest difference as float bits.
const checkWords = 6

// checkResult is one check kernel's result, read back.
type checkResult [checkWords]uint64

func (r checkResult) words() uint64 { return r[0] }
func (r checkResult) first() uint64 { return ^r[2] }
func (r checkResult) last() uint64  { return r[3] }

// piece is one device allocation of the memory under test.
type piece struct{ ptr, size uint64 }

// allocPieces allocates up to want bytes in pieces of 1 GiB. Where the
// driver runs out of memory first (a limit below what cuMemGetInfo said,
// or the context's own share) it goes on in halves, down to 2 MiB, and
// stops there quietly. Any other failure frees what it had and is an
// error.
func (c *cudaLib) allocPieces(want uint64) ([]piece, error) {
	var ps []piece
	var got uint64
	size := uint64(1 << 30)
	for got < want {
		n := min(size, want-got)
		d, err := c.alloc(n)
		if err != nil {
			if !strings.HasSuffix(err.Error(), "CUDA_ERROR_OUT_OF_MEMORY") {
				c.freePieces(ps)
				return nil, err
			}
			if n <= 2<<20 {
				break
			}
			size = n / 2
			continue
		}
		ps = append(ps, piece{d, n})
		got += n
	}
	return ps, nil
}

func (c *cudaLib) freePieces(ps []piece) {
	for _, p := range ps {
		c.free(p.ptr)
	}
}

func bytesOf(ps []piece) uint64 {
	var n uint64
	for _, p := range ps {
		n += p.size
	}
	return n
}

// checker runs the check kernels over pieces of memory, one result each,
// in one device buffer read back at once.
type checker struct {
	c      *cudaLib
	check  uintptr // mt_check
	fill   uintptr // mt_fill
	grid   uint32
	dev    uint64
	host   []checkResult
	pinner runtime.Pinner
}

func newChecker(c *cudaLib, common module, sms, n int) (*checker, error) {
	k := &checker{c: c, grid: uint32(max(1, sms) * 8), host: make([]checkResult, max(1, n))}
	var err error
	if k.check, err = c.function(common, "mt_check"); err != nil {
		return nil, err
	}
	if k.fill, err = c.function(common, "mt_fill"); err != nil {
		return nil, err
	}
	if k.dev, err = c.alloc(uint64(len(k.host)) * checkWords * 8); err != nil {
		return nil, err
	}
	// The driver copies into host: pinned, it stays in place on the heap.
	k.pinner.Pin(&k.host[0])
	return k, nil
}

func (k *checker) close() {
	k.c.free(k.dev)
	k.pinner.Unpin()
}

func (k *checker) reset() error {
	return k.c.check("cuMemsetD8_v2", uintptr(k.dev), 0, uintptr(len(k.host)*checkWords*8))
}

// read copies every piece's result to k.host (and waits for the kernels).
func (k *checker) read() error {
	return k.c.check("cuMemcpyDtoH_v2", uintptr(unsafe.Pointer(&k.host[0])), uintptr(k.dev), uintptr(len(k.host)*checkWords*8))
}

func (k *checker) result(i int) uint64 { return k.dev + uint64(i)*checkWords*8 }

// mtPass is one sweep of the memory test over every piece: a fill, or a
// check (flags: 1 expects the complement, 2 leaves the complement).
type mtPass struct {
	name        string
	fill        bool
	mode, arg   uint32
	flags       uint32
	bytesPerOne float64 // bytes moved per byte tested: 1 (fill or check) or 2 (check and rewrite)
}

// mtPasses is the memory test: walking ones (each bit of every word set
// alone, so a cell stuck at 0 or coupled to a neighbour shows), own
// address (every word unlike every other, so an address line fault that
// aliases two locations shows), moving inversions (a pattern and its
// complement read and rewritten in turn: cells that lose a value under
// their neighbours' writes) and a seeded random pattern (what no fixed
// pattern covers). cuda_memtest and memtester run the same families.
func mtPasses(seed uint32) []mtPass {
	var ps []mtPass
	add := func(name string, mode, arg uint32, checks ...uint32) {
		ps = append(ps, mtPass{name: name, fill: true, mode: mode, arg: arg, bytesPerOne: 1})
		for _, f := range checks {
			per := 1.0
			if f&2 != 0 {
				per = 2
			}
			ps = append(ps, mtPass{name: name, mode: mode, arg: arg, flags: f, bytesPerOne: per})
		}
	}
	for b := range 32 {
		add(fmt.Sprintf("walking one, bit %d", b), 0, 1<<b, 0)
	}
	add("own address", 1, 0, 0)
	add("moving inversions 0x55555555", 0, 0x55555555, 2, 1|2, 0)
	add(fmt.Sprintf("random, seed %#x", seed), 2, seed, 2, 1)
	return ps
}

// memtestFinding is one pass that found words wrong in one piece.
type memtestFinding struct {
	pass        string
	words       uint64
	first, last uint64 // device addresses
	offset      uint64 // bytes into the memory tested
	bits        uint64
}

// memtestMemory is the memory under test: allocated before setup loads
// any kernel or writes anything, so that nothing this process wrote and
// freed can lie in it and read as another's.
type memtestMemory struct {
	pieces []piece
	free   uint64
	err    error
}

// allocMemtest allocates the free memory less allocMargin, in pieces;
// the margin leaves setup room for its kernels and buffers.
func (c *cudaLib) allocMemtest() memtestMemory {
	free, total, err := c.memInfo()
	if err != nil {
		return memtestMemory{err: err}
	}
	margin := allocMargin(total)
	if free <= margin+(64<<20) {
		return memtestMemory{free: free, err: fmt.Errorf("free %.2f GiB of %.2f GiB total: nothing to test beyond the margin", gibf(free), gibf(total))}
	}
	ps, err := c.allocPieces(free - margin)
	if err == nil && len(ps) == 0 {
		err = fmt.Errorf("no memory could be allocated of the %.2f GiB free", gibf(free))
	}
	return memtestMemory{pieces: ps, free: free, err: err}
}

// memtest reads all of m before writing anything (the residue check over
// every byte, returned first), then runs the pattern passes over it. Any
// word wrong fails the card; where the patterns went wrong is said by
// address, pattern and bit.
func (p *cudaProber) memtest(ctx context.Context, m memtestMemory) []Result {
	res := Result{Probe: ProbeResidue, Unit: "bytes"}
	mt := Result{Probe: ProbeMemtest, Unit: "words"}
	fail := func(err error) []Result {
		res.Error, mt.Error = err.Error(), err.Error()
		return []Result{res, mt}
	}
	if m.err != nil {
		return fail(m.err)
	}
	ps, free := m.pieces, m.free
	k, err := newChecker(p.c, p.common, p.sms, len(ps))
	if err != nil {
		return fail(err)
	}
	defer k.close()
	tested := bytesOf(ps)

	// The residue over all of it: a check for zeros, nothing written.
	start := time.Now()
	if err := k.sweep(ps, mtPass{mode: 0, arg: 0}); err != nil {
		return fail(err)
	}
	if err := k.read(); err != nil {
		return fail(err)
	}
	var dirty, dirtyWords uint64
	var where i18n.Text
	var off uint64
	for i, pc := range ps {
		r := k.host[i]
		if r.words() > 0 && where.IsZero() {
			where = i18n.Textf("; the first at %.2f GiB into the memory read", gibf(off+4*r.first()))
		}
		dirty += r[1]
		dirtyWords += r.words()
		off += pc.size
	}
	res.Value = float64(dirty)
	res.Timing = Summary{N: 1, Median: float64(time.Since(start).Microseconds()) / 1e3}
	res.Notes = i18n.Textf("read all %.2f GiB of fresh allocations (%.0f%% of the %.2f GiB free) before writing them, with a kernel, in %.0f ms: %d words held non-zero bytes%s",
		gibf(tested), 100*float64(tested)/float64(free), gibf(free), res.Timing.Median, dirtyWords, where)

	seed := rand.Uint32()
	var findings []memtestFinding
	var rates, ms []float64
	var wrong uint64
	start = time.Now()
	for _, pass := range mtPasses(seed) {
		if ctx.Err() != nil {
			return fail(ctx.Err())
		}
		t, err := p.c.timed(func() error { return k.sweep(ps, pass) })
		if err == nil && !pass.fill {
			err = k.read()
		}
		if err != nil {
			return fail(fmt.Errorf("%s: %w", pass.name, err))
		}
		ms = append(ms, t)
		rates = append(rates, pass.bytesPerOne*float64(tested)/1e9/(t/1e3))
		if pass.fill {
			continue
		}
		var off uint64
		for i, pc := range ps {
			if r := k.host[i]; r.words() > 0 {
				wrong += r.words()
				findings = append(findings, memtestFinding{pass: pass.name, words: r.words(), first: pc.ptr + 4*r.first(),
					last: pc.ptr + 4*r.last(), offset: off + 4*r.first(), bits: r[4]})
			}
			off += pc.size
		}
	}
	mt.Value = float64(wrong)
	mt.Timing = Summarize(ms)
	gbs := Summarize(rates)
	mt.Notes = i18n.Textf("%d passes over %.2f GiB (%.0f%% of the %.2f GiB free) in %.1f s: walking ones, own address, moving inversions, random (seed %#x); %.0f GB/s median, %.0f GB/s slowest pass",
		len(ms), gibf(tested), 100*float64(tested)/float64(free), gibf(free), time.Since(start).Seconds(), seed, gbs.Median, slices.Min(rates))
	if len(findings) > 0 {
		mt.Notes = i18n.Textf("%s; %s", mt.Notes, describeFindings(findings))
	}
	return []Result{res, mt}
}

// describeFindings names where the memory test found words wrong: the
// first few (pass, words, address range, offset, bits), then a count.
func describeFindings(fs []memtestFinding) i18n.Text {
	var parts []i18n.Text
	for i, f := range fs {
		if i == 4 {
			parts = append(parts, i18n.Textf("and %d more", len(fs)-i))
			break
		}
		parts = append(parts, i18n.Textf("%s: %d words wrong at %#x-%#x (%.3f GiB into the memory tested), bits %#x", f.pass, f.words, f.first, f.last+3, gibf(f.offset), f.bits))
	}
	return i18n.Join(parts, "; ")
}

// sweep launches one pass over every piece, each check into its piece's
// result (zeroed first).
func (k *checker) sweep(ps []piece, pass mtPass) error {
	if !pass.fill {
		if err := k.reset(); err != nil {
			return err
		}
	}
	for i, pc := range ps {
		var err error
		if pass.fill {
			err = k.c.launch(k.fill, k.grid, 256, pc.ptr, pc.size/4, uint64(pass.mode), uint64(pass.arg))
		} else {
			err = k.c.launch(k.check, k.grid, 256, pc.ptr, pc.size/4, uint64(pass.mode), uint64(pass.arg), uint64(pass.flags), k.result(i))
		}
		if err != nil {
			return err
		}
	}
	return nil
}
