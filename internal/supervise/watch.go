package supervise

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// notify returns a channel that receives soon after anything changes in
// the checkpoint directory or one level below it (a checkpoint-N/
// directory filling up), coalesced to at most one scan per settle period.
// It returns nil when the file system gives no events (inotify missing or
// exhausted); the periodic scan then does all the work. Network file
// systems deliver no events for changes made elsewhere, but the trainer
// writes here, so local events are the ones that matter.
func (s *Supervisor) notify(ctx context.Context) <-chan struct{} {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		s.cfg.Log("no file events (%v): scanning %s every %v", err, s.cfg.CkptDir, s.cfg.Poll)
		return nil
	}
	if err := w.Add(s.cfg.CkptDir); err != nil {
		w.Close()
		s.cfg.Log("no file events for %s (%v): scanning every %v", s.cfg.CkptDir, err, s.cfg.Poll)
		return nil
	}
	if ents, err := os.ReadDir(s.cfg.CkptDir); err == nil {
		for _, e := range ents {
			if e.IsDir() {
				_ = w.Add(filepath.Join(s.cfg.CkptDir, e.Name()))
			}
		}
	}
	out := make(chan struct{}, 1)
	const settle = 100 * time.Millisecond
	go func() {
		defer w.Close()
		var timer <-chan time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if ev.Has(fsnotify.Create) && filepath.Dir(ev.Name) == filepath.Clean(s.cfg.CkptDir) {
					if st, err := os.Lstat(ev.Name); err == nil && st.IsDir() {
						_ = w.Add(ev.Name)
					}
				}
				if timer == nil {
					timer = wallAfter(settle) // files settle in real time
				}
			case <-w.Errors:
				// An overflowed queue loses events; the periodic scan
				// catches up.
			case <-timer:
				timer = nil
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out
}
