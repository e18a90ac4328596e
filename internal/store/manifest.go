package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gpurent/gpurent/internal/i18n"
)

// ManifestVersion is the newest format version of manifests: this gpurent
// writes version 3 when a file of the checkpoint is stored in parts
// (segment.go) and version 2 otherwise, so that a gpurent that knows no
// parts still reads what it can restore. It reads version 1 too (written
// before manifests carried Auth).
const ManifestVersion = 5

// versionNoParts is the version written when no file is in parts, and
// versionParts when one is; versionRawNames when a name or a link's
// target is not UTF-8 (Entry.RawPath), which a gpurent that reads 3
// would restore under another name.
// versionShared when its objects carry content addresses (shared.go),
// and may be other checkpoints' of the run: a gpurent that reads 4 would
// prune them with the checkpoint that first stored them.
const (
	versionNoParts  = 2
	versionParts    = 3
	versionRawNames = 4
	versionShared   = 5
)

// ErrNewerManifest is a manifest of a version newer than this gpurent
// reads. Finding the newest checkpoint fails on one instead of passing
// over it: an older gpurent would otherwise resume from an older
// checkpoint without a word.
var ErrNewerManifest = i18n.Errorf("newer than this gpurent reads")

// Manifest describes one committed checkpoint. It is stored last, so its
// presence is the commit. The public part (ids, sizes, object names, the
// recipients) is readable without the identity, so ls and a shallow verify
// need no secret; the file list with names and hashes is encrypted to the
// recipients unless the checkpoint is stored in plaintext.
type Manifest struct {
	Version int       `json:"version"`
	ID      string    `json:"id"`
	Run     string    `json:"run"`
	Created time.Time `json:"created"`
	Host    string    `json:"host"`
	Gpurent string    `json:"gpurent"`
	// Name is the base name of what was pushed, so a pull into a directory
	// of checkpoints can restore it under the name it had.
	Name       string   `json:"name,omitempty"`
	Encrypted  bool     `json:"encrypted"`
	Recipients []string `json:"recipients,omitempty"`
	Files      int      `json:"files"`     // entries in the file list
	Bytes      int64    `json:"bytes"`     // plaintext bytes of all files
	Objects    []ObjRef `json:"objects"`   // what must exist for the checkpoint to be whole
	FileList   []byte   `json:"file_list"` // age ciphertext of the JSON file list, or the JSON itself
	// Auth proves the writer held the auth key (auth.go); absent in
	// version 1 and in a push made with --allow-unauthenticated.
	Auth *ManifestAuth `json:"auth,omitempty"`
	// Reused is what the push that made it copied inside the store from
	// the previous checkpoint instead of uploading (reuse.go): plaintext
	// bytes, known only to that push, never stored.
	Reused int64 `json:"-"`
	// Resumed is what the push found stored by an earlier push of the
	// same files that was cut short (segment.go): plaintext bytes, known
	// only to that push.
	Resumed int64 `json:"-"`
}

// ObjRef is one stored object and its stored size.
type ObjRef struct {
	Key  string `json:"key"`
	Size int64  `json:"size"`
	// ETag is the store's name for the version stored (S3, GCS, Azure;
	// objects of files of 1 MiB or more): a later push copies the object only
	// while it is still this version (reuse.go).
	ETag string `json:"etag,omitempty"`
	// Addr is the object's content address (shared.go), from version 5:
	// a later push of the same bytes refers to this object instead of
	// storing another.
	Addr string `json:"addr,omitempty"`
}

// Entry is one file system entry of a checkpoint.
type Entry struct {
	Path   string      `json:"path"` // slash-separated, relative to the pushed root; "." is the root itself
	Type   string      `json:"type"` // file, dir or symlink
	Mode   fs.FileMode `json:"mode"` // permission bits
	Size   int64       `json:"size,omitempty"`
	SHA256 string      `json:"sha256,omitempty"` // of the plaintext
	Object int         `json:"object"`           // index into Manifest.Objects for files, -1 otherwise
	// Parts, for a file stored in parts (segment.go), are its objects in
	// order; Object is then -1.
	Parts []Part    `json:"parts,omitempty"`
	Link  string    `json:"link,omitempty"` // a symlink's target, stored as written, never followed
	MTime time.Time `json:"mtime"`
	// RawPath and RawLink are Path and Link byte for byte where they are
	// not UTF-8 (JSON strings are: Linux names are bytes), from version 4;
	// Path and Link then hold them with U+FFFD in place of the bad bytes.
	RawPath []byte `json:"raw_path,omitempty"`
	RawLink []byte `json:"raw_link,omitempty"`
}

// rawNames records e's names that are not UTF-8 as bytes (RawPath,
// RawLink), reporting whether there were any.
func (e *Entry) rawNames() bool {
	raw := false
	if !utf8.ValidString(e.Path) {
		e.RawPath, e.Path, raw = []byte(e.Path), strings.ToValidUTF8(e.Path, "\uFFFD"), true
	}
	if !utf8.ValidString(e.Link) {
		e.RawLink, e.Link, raw = []byte(e.Link), strings.ToValidUTF8(e.Link, "\uFFFD"), true
	}
	return raw
}

// validPath is fs.ValidPath for names of bytes: slash-separated,
// unrooted, no empty, "." or ".." element, no NUL; UTF-8 or not.
func validPath(name string) bool {
	if name == "." {
		return true
	}
	if strings.ContainsRune(name, 0) {
		return false
	}
	for _, el := range strings.Split(name, "/") {
		if el == "" || el == "." || el == ".." {
			return false
		}
	}
	return true
}

// Part is one segment of a file stored in parts: an object of its own,
// encrypted on its own, so that a push cut short keeps the parts it
// finished and a pull can check each part as it ends.
type Part struct {
	Object int   `json:"object"` // index into Manifest.Objects
	Size   int64 `json:"size"`   // plaintext bytes
	// Prefix is the SHA-256 of the file's bytes from its start through
	// the end of this part: the running hash of the whole file, read off
	// at the part's end, so it costs no second pass, and the last part's
	// is the file's SHA-256.
	Prefix string `json:"prefix_sha256"`
}

// objects are the indexes into Manifest.Objects of a file's objects, in
// order.
func (e Entry) objects() []int {
	if len(e.Parts) == 0 {
		return []int{e.Object}
	}
	idx := make([]int, len(e.Parts))
	for i, p := range e.Parts {
		idx[i] = p.Object
	}
	return idx
}

var (
	idRe  = regexp.MustCompile(`^\d{8}T\d{6}\.\d{3}Z-[0-9a-f]{8}$`)
	runRe = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
	hexRe = regexp.MustCompile(`^[0-9a-f]{64}$`)
	kidRe = regexp.MustCompile(`^[0-9a-f]{16}$`)
	// objNameRe is an object's name under its checkpoint's data: the
	// file's number, its part's, the tag of a resumed push (segment.go).
	objNameRe = regexp.MustCompile(`^\d{6}(\.\d{1,9})?(-[0-9a-f]{8})?$`)
)

// ValidRun checks a run name: letters, digits, '.', '_' and '-', at most 64.
func ValidRun(run string) error {
	if !runRe.MatchString(run) || run == "." || run == ".." {
		return i18n.Errorf("run name %q: use 1 to 64 letters, digits, '.', '_' or '-'", run)
	}
	return nil
}

// ValidID rejects what cannot be a checkpoint id (ls prints them), so a
// typo is a usage error before the store is asked.
func ValidID(id string) error {
	if !idRe.MatchString(id) {
		return i18n.Errorf("checkpoint id %q: want an id from gpurent ckpt ls, or latest", id)
	}
	return nil
}

// decodeStrict decodes JSON rejecting unknown fields and trailing data.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return i18n.Errorf("trailing data after the JSON object")
	}
	return nil
}

// ParseManifest decodes and checks a manifest. Everything that pull later
// trusts (object keys inside this checkpoint) is validated here.
func ParseManifest(data []byte) (*Manifest, error) {
	var m Manifest
	if err := decodeStrict(data, &m); err != nil {
		return nil, i18n.Errorf("manifest: %w", err)
	}
	if m.Version > ManifestVersion {
		return nil, i18n.Errorf("manifest %s: version %d, %w (it reads versions 1 to %d): upgrade gpurent; if no newer gpurent wrote it, it was planted and can be removed", m.ID, m.Version, ErrNewerManifest, ManifestVersion)
	}
	if m.Version < 1 {
		return nil, i18n.Errorf("manifest %s: version %d", m.ID, m.Version)
	}
	if m.Version == 1 && m.Auth != nil {
		return nil, i18n.Errorf("manifest %s: version 1 carries no auth", m.ID)
	}
	if a := m.Auth; a != nil && (!kidRe.MatchString(a.Key) || !hexRe.MatchString(a.MAC)) {
		return nil, i18n.Errorf("manifest %s: auth is not a key id and an HMAC-SHA256", m.ID)
	}
	if !idRe.MatchString(m.ID) {
		return nil, i18n.Errorf("manifest: bad checkpoint id %q", m.ID)
	}
	if err := ValidRun(m.Run); err != nil {
		return nil, i18n.Errorf("manifest %s: %w", m.ID, err)
	}
	for i, o := range m.Objects {
		// Its own object, or from version 5 one of another checkpoint
		// of the run that it shares by content: never another run's,
		// never anything but a data object.
		of, ok := objectOf(m.Run, o.Key)
		shared := m.Version >= versionShared && hexRe.MatchString(o.Addr)
		if !ok || o.Size < 0 || of != m.ID && !shared || o.Addr != "" && !shared {
			return nil, i18n.Errorf("manifest %s: object %d %q is not an object of this checkpoint", m.ID, i, o.Key)
		}
	}
	// gpurent before pushName recorded "push ." as "." (and ".." or "/"
	// likewise): that names nothing, so it reads as no name instead of
	// making every ls of the run fail.
	if m.Name == "." || m.Name == ".." || m.Name == "/" {
		m.Name = ""
	}
	if strings.ContainsAny(m.Name, "/\x00") {
		return nil, i18n.Errorf("manifest %s: name %q is not a single file name", m.ID, m.Name)
	}
	if m.Files < 0 || m.Bytes < 0 {
		return nil, i18n.Errorf("manifest %s: negative counts", m.ID)
	}
	if m.Encrypted && len(m.Recipients) == 0 {
		return nil, i18n.Errorf("manifest %s: encrypted but names no recipient", m.ID)
	}
	return &m, nil
}

// ParseFileList decodes and checks the file list of m: paths stay inside
// the checkpoint, no entry lives under a symlink (pull would write through
// it), files refer to existing objects, and counts match the public part.
func ParseFileList(m *Manifest, plain []byte) ([]Entry, error) {
	var es []Entry
	if err := decodeStrict(plain, &es); err != nil {
		return nil, i18n.Errorf("checkpoint %s file list: %w", m.ID, err)
	}
	if len(es) != m.Files {
		return nil, i18n.Errorf("checkpoint %s: file list has %d entries, manifest says %d", m.ID, len(es), m.Files)
	}
	seen := map[string]string{}
	var total int64
	used := map[int]bool{}
	for i := range es {
		e := &es[i]
		if len(e.RawPath) > 0 || len(e.RawLink) > 0 {
			if m.Version < versionRawNames || len(e.RawPath) > 0 && utf8.Valid(e.RawPath) || len(e.RawLink) > 0 && utf8.Valid(e.RawLink) {
				return nil, i18n.Errorf("checkpoint %s: entry %d has a raw name it cannot have", m.ID, i)
			}
			if len(e.RawPath) > 0 {
				e.Path = string(e.RawPath)
			}
			if len(e.RawLink) > 0 {
				e.Link = string(e.RawLink)
			}
		}
		if e.Path != "." && (!validPath(e.Path) || path.Clean(e.Path) != e.Path) {
			return nil, i18n.Errorf("checkpoint %s: entry %d path %q leaves the checkpoint", m.ID, i, e.Path)
		}
		if _, err := filepath.Localize(strings.ToValidUTF8(e.Path, "_")); err != nil { // names of bytes are checked by validPath
			// A name this system cannot hold as one name: on Windows a
			// Linux file named `a\..\..\x` would be a path out of the
			// pull's directory, and `NUL` or `c:x` no file at all.
			return nil, i18n.Errorf("checkpoint %s: entry %d path %q cannot be written on %s", m.ID, i, e.Path, runtime.GOOS)
		}
		if _, dup := seen[e.Path]; dup {
			return nil, i18n.Errorf("checkpoint %s: path %q twice", m.ID, e.Path)
		}
		for p := path.Dir(e.Path); p != "." && p != "/"; p = path.Dir(p) {
			if seen[p] != "dir" {
				return nil, i18n.Errorf("checkpoint %s: %q comes before or under a non-directory %q", m.ID, e.Path, p)
			}
		}
		if e.Path != "." && path.Dir(e.Path) == "." && len(es) > 0 && es[0].Path == "." && es[0].Type != "dir" {
			return nil, i18n.Errorf("checkpoint %s: %q under a root that is not a directory", m.ID, e.Path)
		}
		seen[e.Path] = e.Type
		if e.Mode&^fs.ModePerm != 0 {
			return nil, i18n.Errorf("checkpoint %s: %q has mode bits beyond permissions", m.ID, e.Path)
		}
		switch e.Type {
		case "file":
			if e.Size < 0 || !hexRe.MatchString(e.SHA256) {
				return nil, i18n.Errorf("checkpoint %s: %q has a bad size or hash", m.ID, e.Path)
			}
			if e.Size > math.MaxInt64-total {
				return nil, i18n.Errorf("checkpoint %s: files add up to more than any disk holds", m.ID)
			}
			if err := checkParts(m, *e); err != nil {
				return nil, err
			}
			for _, o := range e.objects() {
				if o < 0 || o >= len(m.Objects) || used[o] {
					return nil, i18n.Errorf("checkpoint %s: %q refers to object %d", m.ID, e.Path, o)
				}
				used[o] = true
			}
			total += e.Size
		case "dir":
		case "symlink":
			if e.Link == "" {
				return nil, i18n.Errorf("checkpoint %s: symlink %q has no target", m.ID, e.Path)
			}
		default:
			return nil, i18n.Errorf("checkpoint %s: %q has unknown type %q", m.ID, e.Path, e.Type)
		}
		if e.Type != "file" && (len(e.Parts) > 0 || e.Object != -1 && m.Version >= 3) {
			return nil, i18n.Errorf("checkpoint %s: %q is a %s with objects", m.ID, e.Path, e.Type)
		}
	}
	if total != m.Bytes {
		return nil, i18n.Errorf("checkpoint %s: files add up to %d bytes, manifest says %d", m.ID, total, m.Bytes)
	}
	return es, nil
}

// checkParts checks a file's parts: only in a version that has them, at
// least two (one part is a whole object), none empty, adding up to the
// file, the last one's running hash the file's.
func checkParts(m *Manifest, e Entry) error {
	if len(e.Parts) == 0 {
		return nil
	}
	bad := func(why string) error { return i18n.Errorf("checkpoint %s: %q parts: %s", m.ID, e.Path, why) }
	if m.Version < 3 {
		return bad(fmt.Sprintf("a version %d manifest has none", m.Version))
	}
	if e.Object != -1 || len(e.Parts) < 2 {
		return bad("want -1 as the object and at least two parts")
	}
	var sum int64
	for _, p := range e.Parts {
		if p.Size <= 0 || p.Size > e.Size-sum || !hexRe.MatchString(p.Prefix) {
			return bad("a part is empty, too large or has no hash")
		}
		sum += p.Size
	}
	if sum != e.Size || e.Parts[len(e.Parts)-1].Prefix != e.SHA256 {
		return bad("they do not add up to the file")
	}
	return nil
}

// objectOf is the checkpoint id a data object of run is stored under;
// ok false when key is not a data object's name.
func objectOf(run, key string) (id string, ok bool) {
	rest, ok := strings.CutPrefix(key, runPrefix(run)+"data/")
	if !ok {
		return "", false
	}
	id, name, _ := strings.Cut(rest, "/")
	return id, idRe.MatchString(id) && objNameRe.MatchString(name)
}

func runPrefix(run string) string       { return "runs/" + run + "/" }
func manifestKey(run, id string) string { return runPrefix(run) + "manifests/" + id + ".json" }
func dataPrefix(run, id string) string  { return runPrefix(run) + "data/" + id + "/" }
func objectKey(run, id string, n int) string {
	return fmt.Sprintf("%s%06d", dataPrefix(run, id), n)
}
