package supervise

import (
	"sync"
	"time"

	"github.com/gpurent/gpurent/internal/ckptformat"
)

// shortCache remembers ckptformat.CutShort's answer per file version (size and
// modification time), so that a scan every --poll reads each file once.
// What one scan did not ask about is forgotten after the next, so a run
// of weeks keeps no more than its directory holds.
type shortCache struct {
	mu        sync.Mutex
	cur, next map[string]shortEntry
}

type shortEntry struct {
	size  int64
	mtime time.Time
	why   string
}

func (c *shortCache) check(path string, size int64, mtime time.Time) string {
	c.mu.Lock()
	e, ok := c.cur[path]
	if !ok {
		e, ok = c.next[path]
	}
	c.mu.Unlock()
	if !ok || e.size != size || !e.mtime.Equal(mtime) {
		why, err := ckptformat.CutShort(path)
		if err != nil {
			return "" // gone or unreadable: the upload will say so
		}
		e = shortEntry{size, mtime, why}
	}
	c.mu.Lock()
	if c.next == nil {
		c.next = map[string]shortEntry{}
	}
	c.next[path] = e
	c.mu.Unlock()
	return e.why
}

// roll ends a scan: what it asked about is what the next one remembers.
func (c *shortCache) roll() {
	c.mu.Lock()
	c.cur, c.next = c.next, nil
	c.mu.Unlock()
}
