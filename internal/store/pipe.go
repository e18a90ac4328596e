package store

import (
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"hash"
	"io"
	"os"
	"sync"
	"sync/atomic"
)

// hashPipe computes SHA-256 on its own goroutine, so hashing runs beside
// encryption or decryption instead of after it: on a 2-core machine that is
// the difference between the sum and the maximum of their costs. Write
// copies p into a pooled buffer; Sum waits for the hash to catch up.
type hashPipe struct {
	ch   chan pipeItem
	done chan struct{}
	h    hash.Hash
	prog func(int64)
}

// pipeItem is bytes to hash, or (b nil) a request to say when every byte
// sent before is hashed.
type pipeItem struct {
	b      []byte
	caught chan struct{}
}

var chunkPool = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

func newHashPipe(progress func(int64)) *hashPipe {
	p := &hashPipe{ch: make(chan pipeItem, 8), done: make(chan struct{}), h: sha256.New(), prog: progress}
	go func() {
		defer close(p.done)
		for it := range p.ch {
			if it.caught != nil {
				close(it.caught)
				continue
			}
			b := it.b
			p.h.Write(b)
			if p.prog != nil {
				p.prog(int64(len(b)))
			}
			bp := b[:cap(b)]
			chunkPool.Put(&bp)
		}
	}()
	return p
}

func (p *hashPipe) Write(b []byte) (int, error) {
	for off := 0; off < len(b); {
		bp := chunkPool.Get().(*[]byte)
		n := copy(*bp, b[off:])
		p.ch <- pipeItem{b: (*bp)[:n]}
		off += n
	}
	return len(b), nil
}

// catchUp waits until every byte written is hashed; the hash is the
// caller's until the next Write.
func (p *hashPipe) catchUp() {
	c := make(chan struct{})
	p.ch <- pipeItem{caught: c}
	<-c
}

// mark is the running hash of what was written so far, and the state to
// go back to it (rewind) when what follows must be hashed again.
func (p *hashPipe) mark() (sum string, state []byte) {
	p.catchUp()
	state, _ = p.h.(encoding.BinaryMarshaler).MarshalBinary() // sha256 always can
	return hex.EncodeToString(p.h.Sum(nil)), state
}

// rewind sets the hash back to a mark's state.
func (p *hashPipe) rewind(state []byte) error {
	p.catchUp()
	return p.h.(encoding.BinaryUnmarshaler).UnmarshalBinary(state)
}

// Sum closes the pipe and returns the hex digest. The pipe cannot be used
// afterwards.
func (p *hashPipe) Sum() string {
	close(p.ch)
	<-p.done
	return hex.EncodeToString(p.h.Sum(nil))
}

// abandon stops the goroutine without a result (an error path).
func (p *hashPipe) abandon() {
	close(p.ch)
	<-p.done
}

// writeBehind asks the kernel to start writing a file's dirty pages every
// few MiB (sync_file_range, SYNC_FILE_RANGE_WRITE: asynchronous), so the
// fsync that makes the file durable before pull renames it finds little left
// to do instead of the whole file.
type writeBehind struct {
	f       *os.File
	flushed int64
}

const writeBehindStep = 16 << 20

func (w *writeBehind) advance(off int64) {
	if off-w.flushed < writeBehindStep {
		return
	}
	startWriteback(w.f, w.flushed, off-w.flushed)
	w.flushed = off
}

// fanout copies src to dst and hashes it on three goroutines: the caller's
// reads (and so decrypts), one writes, one hashes. Each chunk is read once
// into a pooled buffer and shared by the writer and the hasher, so a pull
// costs the larger of the three stages rather than their sum: on a 2-core
// machine, writing the page cache and decrypting are as costly as each
// other. Chunks in flight are bounded, and so is memory.
//
// h is the hash to go on with (a file's running hash, read in parts); a
// new one when nil. sum is h's at the end.
func fanout(dst io.Writer, src io.Reader, progress func(int64), h hash.Hash) (n int64, sum string, err error) {
	type chunk struct {
		b    []byte
		refs atomic.Int32
	}
	release := func(c *chunk) {
		if c.refs.Add(-1) == 0 {
			b := c.b[:cap(c.b)]
			chunkPool.Put(&b)
		}
	}
	toWrite, toHash := make(chan *chunk, 4), make(chan *chunk, 4)
	var werr error
	var failed atomic.Bool // the writer failed: stop reading
	if h == nil {
		h = sha256.New()
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for c := range toWrite {
			if werr == nil {
				if _, werr = dst.Write(c.b); werr != nil {
					failed.Store(true)
				}
			}
			release(c)
		}
	}()
	go func() {
		defer wg.Done()
		for c := range toHash {
			h.Write(c.b)
			if progress != nil {
				progress(int64(len(c.b)))
			}
			release(c)
		}
	}()
	for !failed.Load() {
		bp := chunkPool.Get().(*[]byte)
		k, rerr := io.ReadFull(src, *bp)
		if k > 0 {
			c := &chunk{b: (*bp)[:k]}
			c.refs.Store(2)
			toWrite <- c
			toHash <- c
			n += int64(k)
		} else {
			chunkPool.Put(bp)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			err = rerr
			break
		}
	}
	close(toWrite)
	close(toHash)
	wg.Wait()
	if err == nil {
		err = werr
	}
	return n, hex.EncodeToString(h.Sum(nil)), err
}
