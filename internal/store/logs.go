package store

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
)

// A run's console output lives beside its checkpoints, so that the
// traceback of a machine that vanished can still be read from another:
//
//	runs/<run>/logs/<session>/info.json               written first
//	runs/<run>/logs/<session>/<seq>-<time>            gzip, then age
//
// A session is one gpurent run invocation (its restarts included); its id
// has a checkpoint id's form, so sessions sort by start. Segments are
// numbered from 1 at a fixed width and hold consecutive bytes of the
// output: the log is their concatenation. A segment is only ever written
// once it is whole; one whose Put failed is written again, under the same
// number, with what is there by then.

// LogInfo is a session's info.json.
type LogInfo struct {
	Version    int       `json:"version"`
	Session    string    `json:"session"`
	Run        string    `json:"run"`
	Host       string    `json:"host"`
	Started    time.Time `json:"started"`
	Gpurent    string    `json:"gpurent,omitempty"`
	Encrypted  bool      `json:"encrypted"`
	Recipients []string  `json:"recipients,omitempty"`
}

// LogSession is a session as listed: its info.json, and from the listing
// how many segments it has, their stored size and when the newest was
// shipped.
type LogSession struct {
	LogInfo
	Segments    int       `json:"segments"`
	StoredBytes int64     `json:"stored_bytes"`
	Updated     time.Time `json:"updated,omitzero"`
	// Missing is the first segment number not in the store, when later
	// ones are (deleted by hand): the segments before it are all that
	// reads as one log.
	Missing int `json:"missing_segment,omitempty"`

	keys []string // the segments' keys, in order
}

// segRe is a segment's name: its number and when it was shipped.
var segRe = regexp.MustCompile(`^(\d{6,})-(\d{8}T\d{6}Z)$`)

const segTime = "20060102T150405Z"

func logPrefix(run string) string { return runPrefix(run) + "logs/" }

// LogWriter ships one session's segments.
type LogWriter struct {
	s    *Store
	info LogInfo
	seq  int
}

// NewLog begins a session of run's log: it writes the session's info.json,
// so that a session is listed (and its encryption known) before its first
// segment. started is when the output began, which may be minutes before
// its first shipment; zero means now.
func (s *Store) NewLog(ctx context.Context, run string, started time.Time) (*LogWriter, error) {
	if err := ValidRun(run); err != nil {
		return nil, err
	}
	if started.IsZero() {
		started = s.opt.Now()
	}
	info := LogInfo{Version: 1, Session: newID(started), Run: run, Host: s.opt.Host, Started: started.UTC(),
		Gpurent: s.opt.Version, Encrypted: s.opt.Crypto.Encrypting(), Recipients: s.opt.Crypto.Keys}
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return nil, err
	}
	key := logPrefix(run) + info.Session + "/info.json"
	if _, err := s.b.Put(ctx, key, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
		return nil, i18n.Errorf("log of run %s: %w", run, err)
	}
	return &LogWriter{s: s, info: info}, nil
}

// Session is the session's id.
func (w *LogWriter) Session() string { return w.info.Session }

// Append ships data as the next segment. On error nothing is counted, and
// the next Append writes the same segment number again.
func (w *LogWriter) Append(ctx context.Context, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	if len(data) > MaxSegment {
		return i18n.Errorf("log segment of %d bytes: at most %d at once", len(data), MaxSegment)
	}
	key := fmt.Sprintf("%s%s/%06d-%s", logPrefix(w.info.Run), w.info.Session, w.seq+1, w.s.opt.Now().UTC().Format(segTime))
	_, err := w.s.b.Put(ctx, key, func(dst io.Writer) error {
		enc, err := w.s.opt.Crypto.wrapWriter(dst)
		if err != nil {
			return err
		}
		z := gzip.NewWriter(enc)
		if _, err := z.Write(data); err != nil {
			return err
		}
		if err := z.Close(); err != nil {
			return err
		}
		return enc.Close()
	})
	if err != nil {
		return i18n.Errorf("log of run %s: %w", w.info.Run, err)
	}
	w.seq++
	return nil
}

// LogSessions lists run's log sessions, oldest first.
func (s *Store) LogSessions(ctx context.Context, run string) ([]LogSession, error) {
	if err := ValidRun(run); err != nil {
		return nil, err
	}
	prefix := logPrefix(run)
	objs, err := s.b.List(ctx, prefix)
	if err != nil {
		if IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	type segment struct {
		key  string
		seq  int
		size int64
		at   time.Time
	}
	segs, infos := map[string][]segment{}, map[string]bool{}
	for _, o := range objs {
		sess, name, ok := strings.Cut(strings.TrimPrefix(o.Key, prefix), "/")
		if !ok || !idRe.MatchString(sess) {
			continue
		}
		if name == "info.json" {
			infos[sess] = true
			continue
		}
		m := segRe.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		at, _ := time.Parse(segTime, m[2])
		segs[sess] = append(segs[sess], segment{key: o.Key, seq: n, size: o.Size, at: at})
	}
	out := make([]LogSession, 0, len(infos))
	for sess := range infos {
		info, err := s.logInfo(ctx, run, sess)
		if err != nil {
			return nil, err
		}
		ls := LogSession{LogInfo: *info}
		l := segs[sess]
		// A segment whose Put was reported failed may have been stored
		// all the same, and was then written again later, from the same
		// byte, with what had come since: of two with one number the
		// later (the larger, within a second) holds the other.
		sort.Slice(l, func(i, j int) bool {
			if l[i].seq != l[j].seq {
				return l[i].seq < l[j].seq
			}
			if !l[i].at.Equal(l[j].at) {
				return l[i].at.Before(l[j].at)
			}
			return l[i].size < l[j].size
		})
		for i, g := range l {
			if i+1 < len(l) && l[i+1].seq == g.seq {
				continue
			}
			if g.seq != ls.Segments+1 {
				ls.Missing = ls.Segments + 1
				break
			}
			ls.Segments++
			ls.StoredBytes += g.size
			ls.keys = append(ls.keys, g.key)
			if g.at.After(ls.Updated) {
				ls.Updated = g.at
			}
		}
		out = append(out, ls)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Session < out[j].Session })
	return out, nil
}

func (s *Store) logInfo(ctx context.Context, run, sess string) (*LogInfo, error) {
	key := logPrefix(run) + sess + "/info.json"
	if info, ok := s.logInfos.Load(key); ok {
		return info.(*LogInfo), nil
	}
	r, err := s.b.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return nil, i18n.Errorf("read %s: %w", key, err)
	}
	var info LogInfo
	if err := decodeStrict(data, &info); err != nil {
		return nil, i18n.Errorf("%s: %w", key, err)
	}
	if info.Version != 1 || info.Session != sess || info.Run != run {
		return nil, i18n.Errorf("%s: not session %s of run %s (version %d)", key, sess, run, info.Version)
	}
	s.logInfos.Store(key, &info)
	return &info, nil
}

// ReadLogSegment writes segment i (from 0) of a listed session to w,
// decrypted and unpacked. A segment is written to w only once it has all
// been read, so that a damaged one adds no garbage before its error.
func (s *Store) ReadLogSegment(ctx context.Context, ls *LogSession, i int, w io.Writer) error {
	if i < 0 || i >= len(ls.keys) {
		return i18n.Errorf("log session %s has no segment %d", ls.Session, i+1)
	}
	key := ls.keys[i]
	r, err := s.b.Get(ctx, key)
	if err != nil {
		return err
	}
	defer r.Close()
	plain, err := s.opt.Crypto.wrapReader(r, ls.Encrypted, ls.Recipients, "log")
	if err != nil {
		return i18n.Errorf("log session %s: %w", ls.Session, err)
	}
	z, err := gzip.NewReader(plain)
	if err != nil {
		return i18n.Errorf("%s: %w", key, err)
	}
	var buf bytes.Buffer
	// The bound keeps a hostile object (a gzip bomb) from filling memory.
	if _, err := io.Copy(&buf, io.LimitReader(z, MaxSegment+1)); err != nil {
		return i18n.Errorf("%s: %w", key, err)
	}
	if buf.Len() > MaxSegment {
		return i18n.Errorf("%s: more than %d bytes: not a segment gpurent wrote", key, MaxSegment)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// MaxSegment is the most plaintext one segment holds: a shipper Appends no
// more at once, and a reader refuses a segment that unpacks to more.
const MaxSegment = 64 << 20

// PruneLogs deletes the run's log sessions but the newest keep, each with
// everything under its prefix (retried segments included), info.json
// first so that a session leaves the listing whole; with dryRun it only
// says which. The sessions are returned oldest first. A session still
// being shipped is the newest, so keep 1 or more leaves it alone.
func (s *Store) PruneLogs(ctx context.Context, run string, keep int, dryRun bool) ([]string, error) {
	if keep < 0 {
		return nil, i18n.Errorf("prune: --keep-logs must be 0 or more, got %d", keep)
	}
	sessions, err := s.LogSessions(ctx, run)
	if err != nil {
		return nil, err
	}
	gone := []string{}
	if len(sessions) <= keep {
		return gone, nil
	}
	for _, ls := range sessions[:len(sessions)-keep] {
		if !dryRun {
			prefix := logPrefix(run) + ls.Session + "/"
			if err := s.b.Delete(ctx, prefix+"info.json"); err != nil && !IsNotFound(err) {
				return gone, err
			}
			objs, err := s.b.List(ctx, prefix)
			if err != nil {
				return gone, err
			}
			keys := make([]string, len(objs))
			for i, o := range objs {
				keys[i] = o.Key
			}
			if _, _, err := s.deleteBatches(ctx, keys, nil, nil); err != nil {
				return gone, err
			}
		}
		gone = append(gone, ls.Session)
	}
	return gone, nil
}
