package store

import (
	"bufio"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
)

// Speed is what one round trip of a test checkpoint through the store
// took, with gpurent's own pipeline: age encryption, SHA-256, files in
// parallel, multipart uploads; the download is decrypted, checked and
// written to disk, as a pull is.
type Speed struct {
	Run       string        // the test's run, deleted after it
	Bytes     int64         // in all
	Files     int           // how many the bytes were split into
	Encrypted bool          // whether the objects were encrypted
	Upload    time.Duration // the push, until its manifest was written
	Download  time.Duration // the pull, until every file was checked
	// Left says why the test's run could not be deleted from the store
	// (credentials that may write but not delete); nil when it was.
	Left error
}

// SpeedTest pushes a checkpoint of size random bytes in files files,
// written under dir, to a run of its own, pulls it back under dir, and
// deletes it from the store and from dir, also when ctx is cancelled
// midway. Random bytes, since a checkpoint's floats barely compress and
// encryption would hide any pattern anyway.
func (s *Store) SpeedTest(ctx context.Context, dir string, size int64, files int) (sp *Speed, err error) {
	if size <= 0 || files <= 0 || int64(files) > size {
		return nil, i18n.Errorf("speed test: %d bytes in %d files", size, files)
	}
	// The test data and its pulled copy: refused now, rather than after
	// minutes of upload.
	if avail, ok := s.free(dir); ok && avail < uint64(2*size)+64<<20 {
		return nil, i18n.Errorf("speed test: %s has %s free; the test writes its %s twice there (the checkpoint and its pulled copy): test less (--size) or elsewhere (--dir)",
			dir, report.Bytes(int64(avail)), report.Bytes(size))
	}
	var seed [32]byte
	if _, err := crand.Read(seed[:]); err != nil {
		return nil, err
	}
	run := "speed-test-" + hex.EncodeToString(seed[:4])
	tmp, err := os.MkdirTemp(dir, ".gpurent-speed-")
	if err != nil {
		return nil, i18n.Errorf("speed test: %w", err)
	}
	sp = &Speed{Run: run, Bytes: size, Files: files, Encrypted: s.opt.Crypto != nil && s.opt.Crypto.Encrypting()}
	// Whatever happens, the test leaves nothing: its run is deleted with
	// no grace for its leftovers (no other push writes to it).
	defer func() {
		os.RemoveAll(tmp)
		opt := s.opt
		opt.Grace = -1
		if _, perr := New(s.b, opt).Prune(context.WithoutCancel(ctx), run, 0); perr != nil {
			left := i18n.Errorf("the test's run %s could not be deleted from the store (%w); delete it with gpurent ckpt prune --run %s --keep 0 --unsafe-allow-remove-all", run, perr, run)
			if err != nil {
				err = i18n.Errorf("%w; %w", err, left)
			} else {
				sp.Left = left
			}
		}
		if e, ok := s.b.(emptyDirs); ok {
			e.RemoveEmpty(runPrefix(run))
		}
	}()
	src := filepath.Join(tmp, "checkpoint")
	if err := writeRandom(src, size, files, seed); err != nil {
		return nil, i18n.Errorf("speed test: %w", err)
	}
	start := time.Now()
	if _, err := s.Push(ctx, src, run); err != nil {
		return nil, err
	}
	sp.Upload = time.Since(start)
	start = time.Now()
	if _, err := s.Pull(ctx, run, "latest", filepath.Join(tmp, "pulled")); err != nil {
		return nil, err
	}
	sp.Download = time.Since(start)
	return sp, nil
}

// emptyDirs is a store whose deleted objects leave their directories:
// the file store.
type emptyDirs interface{ RemoveEmpty(prefix string) }

// writeRandom writes size bytes of ChaCha8 output under dir, split into
// files of (about) equal size.
func writeRandom(dir string, size int64, files int, seed [32]byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	gen := rand.NewChaCha8(seed)
	buf := make([]byte, 1<<20)
	for i := range files {
		n := size / int64(files)
		if i == files-1 {
			n = size - n*int64(files-1)
		}
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("shard-%03d.bin", i)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		w := bufio.NewWriterSize(f, 4<<20)
		for n > 0 {
			k := min(n, int64(len(buf)))
			gen.Read(buf[:k])
			w.Write(buf[:k])
			n -= k
		}
		err = errors.Join(w.Flush(), f.Close())
		if err != nil {
			return err
		}
	}
	return nil
}
