package store

import (
	"context"
	"io"
	"sync"

	"github.com/gpurent/gpurent/internal/i18n"
)

// MemoryLimit is the soft limit (runtime/debug.SetMemoryLimit) the ckpt
// commands run under: buffers are bounded by design, and the limit makes the
// garbage collector return them promptly instead of letting the heap grow
// to twice the live data.
const MemoryLimit = 160 << 20

// Large objects are read as several ranges at once, in order: one HTTP
// stream rarely fills a link (rclone's multi-thread downloads do the same),
// while decryption must see the bytes in sequence. Memory is bounded by
// prefetchDepth × prefetchChunk per large object.
const (
	prefetchChunk = 8 << 20
	prefetchDepth = 4
	// prefetchMin: objects smaller than this are read as one stream.
	prefetchMin = 4 * prefetchChunk
)

type fetched struct {
	data []byte
	err  error
}

// rangePool recycles range buffers, so a long pull reuses a few instead of
// leaving hundreds of MiB to the garbage collector.
var rangePool = sync.Pool{New: func() any { b := make([]byte, prefetchChunk); return &b }}

// prefetchReader reads key of the given size through up to prefetchDepth
// concurrent range reads and returns the bytes in order.
type prefetchReader struct {
	ctx    context.Context
	cancel context.CancelFunc
	queue  chan chan fetched
	cur    []byte
	buf    []byte // the whole buffer cur is a tail of, to recycle
	err    error
}

func openObject(ctx context.Context, b Backend, key string, size int64) (io.ReadCloser, error) {
	if size < prefetchMin {
		return b.Get(ctx, key)
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &prefetchReader{ctx: ctx, cancel: cancel, queue: make(chan chan fetched, prefetchDepth)}
	go func() {
		defer close(p.queue)
		for off := int64(0); off < size; off += prefetchChunk {
			n := min(int64(prefetchChunk), size-off)
			slot := make(chan fetched, 1)
			select {
			case p.queue <- slot: // blocks while prefetchDepth chunks are in flight
			case <-ctx.Done():
				return
			}
			go func(off, n int64) {
				slot <- fetchRange(ctx, b, key, off, n)
			}(off, n)
		}
	}()
	return p, nil
}

func fetchRange(ctx context.Context, b Backend, key string, off, n int64) fetched {
	r, err := b.GetRange(ctx, key, off, n)
	if err != nil {
		return fetched{err: err}
	}
	defer r.Close()
	bp := rangePool.Get().(*[]byte)
	buf := (*bp)[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		rangePool.Put(bp)
		return fetched{err: i18n.Errorf("read %s at %d: %w", key, off, err)}
	}
	return fetched{data: buf}
}

func (p *prefetchReader) Read(b []byte) (int, error) {
	for len(p.cur) == 0 {
		p.recycle()
		if p.err != nil {
			return 0, p.err
		}
		slot, ok := <-p.queue
		if !ok {
			p.err = io.EOF
			return 0, io.EOF
		}
		f := <-slot
		if f.err != nil {
			p.err = f.err
			p.cancel()
			return 0, f.err
		}
		p.cur, p.buf = f.data, f.data
	}
	n := copy(b, p.cur)
	p.cur = p.cur[n:]
	return n, nil
}

func (p *prefetchReader) recycle() {
	if p.buf != nil {
		b := p.buf[:cap(p.buf)]
		rangePool.Put(&b)
		p.buf = nil
	}
}

func (p *prefetchReader) Close() error {
	p.cancel()
	// Drain so no fetch goroutine is left blocked.
	for slot := range p.queue {
		if f := <-slot; f.data != nil {
			b := f.data[:cap(f.data)]
			rangePool.Put(&b)
		}
	}
	p.cur = nil
	p.recycle()
	return nil
}
