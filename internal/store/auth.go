package store

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"

	"filippo.io/age"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
)

// Why manifests are authenticated: the store's write key lives on every
// rented box, and the recipients are printed in every manifest, so anyone
// holding a leaked key can encrypt and commit a checkpoint that a resume
// would hand to torch.load. A MAC keyed from a secret the write key does
// not give (the age identity, or an auth key derived from it for a box that
// only pushes) tells the owner's checkpoints from planted ones.

// AuthKey is the secret that signs and checks manifests: derived from an
// age identity, or read from an auth key file (ExportAuthKey).
type AuthKey struct {
	key []byte
	id  string
}

const (
	authKeyPrefix = "GPURENT-AUTH-KEY-"
	authInfo      = "gpurent checkpoint manifest authentication v1"
)

func newAuthKey(key []byte) AuthKey {
	h := sha256.Sum256(append([]byte("gpurent auth key id\x00"), key...))
	return AuthKey{key: key, id: hex.EncodeToString(h[:8])}
}

// ID names the key without revealing it: what a manifest records, so an
// error can say which key signed it.
func (k AuthKey) ID() string { return k.id }

// Export is the key as an auth key file holds it.
func (k AuthKey) Export() string { return authKeyPrefix + hex.EncodeToString(k.key) }

// AuthKeysOf derives one auth key from each X25519 identity: whoever holds
// the identity can check what its auth key signed, with nothing else to
// copy around.
func AuthKeysOf(ids []age.Identity) []AuthKey {
	var out []AuthKey
	for _, id := range ids {
		x, ok := id.(*age.X25519Identity)
		if !ok {
			continue
		}
		k, err := hkdf.Key(sha256.New, []byte(x.String()), nil, authInfo, 32)
		if err != nil {
			continue // only for lengths far beyond 32
		}
		out = append(out, newAuthKey(k))
	}
	return out
}

// ParseAuthKey reads "GPURENT-AUTH-KEY-<64 hex>"; lines starting with '#'
// and blank lines are skipped. The error never contains the key.
func ParseAuthKey(text string) (AuthKey, error) {
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		v, ok := strings.CutPrefix(l, authKeyPrefix)
		b, err := hex.DecodeString(v)
		if !ok || err != nil || len(b) != 32 {
			return AuthKey{}, i18n.Errorf("not a gpurent auth key (GPURENT-AUTH-KEY- and 64 hex digits)")
		}
		return newAuthKey(b), nil
	}
	return AuthKey{}, i18n.Errorf("holds no gpurent auth key")
}

// LoadAuthKey reads an auth key file, refusing one other users can read,
// as LoadIdentities does.
func LoadAuthKey(path string) (AuthKey, error) {
	f, _, err := openSecret(path, "auth key")
	if err != nil {
		return AuthKey{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return AuthKey{}, i18n.Errorf("auth key %s: %w", path, err)
	}
	k, err := ParseAuthKey(string(b))
	if err != nil {
		return AuthKey{}, i18n.Errorf("auth key %s: %w", path, err)
	}
	return k, nil
}

// WriteAuthKey writes k to path (mode 0600, never replacing a file).
func WriteAuthKey(path string, k AuthKey) error {
	body := "# gpurent auth key " + k.ID() + ": signs checkpoints as yours; it cannot decrypt them\n" + k.Export() + "\n"
	if err := writeSecret(path, body); err != nil {
		if errors.Is(err, os.ErrExist) {
			return i18n.Errorf("auth key: %s already exists; it is not overwritten", path)
		}
		return i18n.Errorf("auth key: %w", err)
	}
	return nil
}

// ManifestAuth is a manifest's proof of its writer: an HMAC-SHA256 of the
// rest of the manifest, under the auth key whose ID is Key.
type ManifestAuth struct {
	Key string `json:"key"`
	MAC string `json:"mac"`
}

// ErrUnauthenticated means a checkpoint carries no proof, or a proof no
// key here checks: it may have been planted by someone with the store's
// write key. ErrNoAuthKey means this machine holds no key to sign or check.
var (
	ErrUnauthenticated = i18n.Errorf("not authenticated")
	ErrNoAuthKey       = i18n.Errorf("no auth key")
)

// macOf is the MAC of m under k: over the manifest as this gpurent
// encodes it, with Auth left out. Every field is covered, the file list
// with its SHA-256s among them, so the files are too.
func macOf(k AuthKey, m *Manifest) (string, error) {
	c := *m
	c.Auth = nil
	body, err := json.Marshal(&c)
	if err != nil {
		return "", err
	}
	h := hmac.New(sha256.New, k.key)
	h.Write([]byte("gpurent manifest\x00"))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// sign sets m.Auth with the first auth key.
func (c *Crypto) sign(m *Manifest) error {
	if len(c.Auth) == 0 {
		return nil
	}
	mac, err := macOf(c.Auth[0], m)
	if err != nil {
		return err
	}
	m.Auth = &ManifestAuth{Key: c.Auth[0].ID(), MAC: mac}
	return nil
}

// Authentic checks m's proof against the auth keys here. A nil error
// means one of them signed it; otherwise the error wraps ErrUnauthenticated
// and says why in a sentence.
func (c *Crypto) Authentic(m *Manifest) error {
	if m.Auth == nil {
		return i18n.Errorf("checkpoint %s of run %s (from %s at %s) %w: it carries no proof of its writer, so anyone with the store's write key could have put it there (a gpurent from before 2026-12 wrote none: read such a store with --allow-unauthenticated)",
			m.ID, m.Run, report.Safe(m.Host), m.Created.UTC().Format("2006-01-02 15:04"), ErrUnauthenticated)
	}
	if len(c.Auth) == 0 {
		return i18n.Errorf("checkpoint %s of run %s cannot be checked: it is signed by auth key %s and this machine holds no identity or auth key to check it (%w): pass --identity FILE, GPURENT_IDENTITY, or --auth-key FILE",
			m.ID, m.Run, m.Auth.Key, ErrNoAuthKey)
	}
	for _, k := range c.Auth {
		if k.ID() != m.Auth.Key {
			continue
		}
		want, err := macOf(k, m)
		if err != nil {
			return err
		}
		got, err := hex.DecodeString(m.Auth.MAC)
		w, _ := hex.DecodeString(want)
		if err == nil && hmac.Equal(got, w) {
			return nil
		}
		return i18n.Errorf("checkpoint %s of run %s (from %s at %s) is %w: its proof does not match its content under auth key %s, so it was changed after it was written or forged",
			m.ID, m.Run, report.Safe(m.Host), m.Created.UTC().Format("2006-01-02 15:04"), ErrUnauthenticated, m.Auth.Key)
	}
	ids := make([]string, len(c.Auth))
	for i, k := range c.Auth {
		ids[i] = k.ID()
	}
	return i18n.Errorf("checkpoint %s of run %s (from %s at %s) is %w by a key here: it is signed by auth key %s, and this machine holds %s; if it is yours, pass the identity it was written with (--identity)",
		m.ID, m.Run, report.Safe(m.Host), m.Created.UTC().Format("2006-01-02 15:04"), ErrUnauthenticated, m.Auth.Key, strings.Join(ids, ", "))
}

// Unauthenticated are the ids, of ms, that readers here would refuse as
// not the owner's (Trusted fails): a planted checkpoint, or one written
// with another identity. checked is false where nothing can be told: no
// identity or auth key here, or the checks turned off.
func (s *Store) Unauthenticated(ms []*Manifest) (ids map[string]bool, checked bool) {
	if c := s.opt.Crypto; !c.CheckAuth || len(c.Auth) == 0 {
		return nil, false
	}
	ids = map[string]bool{}
	for _, m := range ms {
		if s.Trusted(m) != nil {
			ids[m.ID] = true
		}
	}
	return ids, true
}

// Trusted is nil when readers may use m (Crypto.trusted).
func (s *Store) Trusted(m *Manifest) error { return s.opt.Crypto.trusted(m) }

// trusted reports whether readers may use m: always when checks are off,
// else when Authentic holds.
func (c *Crypto) trusted(m *Manifest) error {
	if !c.CheckAuth {
		return nil
	}
	return c.Authentic(m)
}
