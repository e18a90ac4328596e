package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/gpurent/gpurent/internal/i18n"
)

// Problem is one defect verify found.
type Problem struct {
	ID   string    `json:"id"`
	Path string    `json:"path"` // the file, or the object key when the file list cannot be read
	Msg  i18n.Text `json:"msg"`
}

// Verify checks the checkpoints of run (or only id): every object exists
// with its recorded size; with deep, every object is read, decrypted and
// hashed against the file list. It returns the problems; err is for
// failures to check at all.
func (s *Store) Verify(ctx context.Context, run, id string, deep bool) ([]*Manifest, []Problem, error) {
	var ms []*Manifest
	if id != "" {
		m, err := s.Find(ctx, run, id)
		if err != nil {
			return nil, nil, err
		}
		ms = []*Manifest{m}
	}
	var probs []Problem
	if id == "" {
		var bad []Unreadable
		var err error
		if ms, bad, err = s.ListAll(ctx, run); err != nil {
			return nil, nil, err
		}
		for _, u := range bad {
			probs = append(probs, Problem{Path: u.Key, Msg: i18n.Textf("not a manifest this gpurent can read: %v", u.Err)})
		}
	}
	var mu sync.Mutex
	for _, m := range ms {
		if err := s.opt.Crypto.trusted(m); err != nil {
			// A shallow verify needs no secret: with no key here it
			// checks the objects alone (ckpt verify says authenticity
			// went unchecked).
			if !errors.Is(err, ErrNoAuthKey) || deep {
				probs = append(probs, Problem{ID: m.ID, Msg: i18n.Textf("%v", err)})
			}
		}
		names := map[int]string{}
		fileOf := map[int]string{} // the path of the file each object is of
		var entries []Entry
		if deep || len(s.opt.Crypto.Identities) > 0 || !m.Encrypted {
			es, err := s.Files(m)
			if err != nil {
				if deep || errors.Is(err, ErrWrongIdentity) {
					return nil, nil, err
				}
				// Its file list cannot be read: nothing of it can be
				// restored, whatever its objects say.
				probs = append(probs, Problem{ID: m.ID, Msg: i18n.Textf("file list: %v", err)})
			} else {
				entries = es
				for _, e := range es {
					if e.Type != "file" {
						continue
					}
					for k, o := range e.objects() {
						names[o], fileOf[o] = e.Path, e.Path
						if len(e.Parts) > 0 {
							names[o] = fmt.Sprintf("%s (part %d of %d)", e.Path, k+1, len(e.Parts))
						}
					}
				}
			}
		}
		name := func(i int) string {
			if n, ok := names[i]; ok {
				return n
			}
			return m.Objects[i].Key
		}
		err := s.parallel(ctx, len(m.Objects), func(ctx context.Context, i int) error {
			o := m.Objects[i]
			size, err := s.b.Size(ctx, o.Key)
			var msg i18n.Text
			switch {
			case IsNotFound(err):
				msg = i18n.Textf("missing from the store")
			case err != nil:
				return err
			case size != o.Size:
				msg = i18n.Textf("stored object is %d bytes, the manifest says %d (truncated or replaced)", size, o.Size)
			}
			if !msg.IsZero() {
				mu.Lock()
				probs = append(probs, Problem{ID: m.ID, Path: name(i), Msg: msg})
				mu.Unlock()
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		if !deep {
			continue
		}
		bad := map[string]bool{}
		for _, p := range probs {
			bad[p.ID+"\x00"+p.Path] = true
		}
		for i, o := range m.Objects {
			if bad[m.ID+"\x00"+name(i)] || bad[m.ID+"\x00"+o.Key] {
				bad[m.ID+"\x00"+fileOf[i]] = true
			}
		}
		var files []Entry
		for _, e := range entries {
			if e.Type == "file" && !bad[m.ID+"\x00"+e.Path] {
				files = append(files, e)
			}
		}
		err = s.parallel(ctx, len(files), func(ctx context.Context, k int) error {
			if err := s.checkFile(ctx, m, files[k]); err != nil {
				if errors.Is(err, ErrWrongIdentity) || errors.Is(err, context.Canceled) {
					return err
				}
				mu.Lock()
				probs = append(probs, Problem{ID: m.ID, Path: files[k].Path, Msg: i18n.Textf("%v", err)})
				mu.Unlock()
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	sort.Slice(probs, func(i, j int) bool { return probs[i].ID+probs[i].Path < probs[j].ID+probs[j].Path })
	return ms, probs, nil
}

func (s *Store) checkFile(ctx context.Context, m *Manifest, e Entry) error {
	_, _, err := s.readFile(ctx, m, e, io.Discard)
	var te transportError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		return i18n.Errorf("not checked: the store broke off each of %d reads, the last with %v", pullTries, te.error)
	default:
		return err
	}
}
