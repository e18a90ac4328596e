package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"filippo.io/age"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/userfile"
)

// Keygen writes a new age X25519 identity to path (mode 0600, never
// replacing an existing file) and returns its recipient, the public key
// that push encrypts to.
func Keygen(path string) (string, error) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return "", err
	}
	body := fmt.Sprintf("# created: %s\n# public key: %s\n%s\n", time.Now().UTC().Format(time.RFC3339), id.Recipient(), id)
	if err := writeSecret(path, body); err != nil {
		if errors.Is(err, os.ErrExist) {
			return "", i18n.Errorf("keygen: %s already exists; it is not overwritten (move it away first, or choose another path with --identity)", path)
		}
		return "", i18n.Errorf("keygen: %w", err)
	}
	return id.Recipient().String(), nil
}

// writeSecret writes a new key file: mode 0600 in a directory made 0700,
// never replacing a file (an error wrapping os.ErrExist), synced, and
// removed again if it could not be written whole.
func writeSecret(path, body string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(body)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return i18n.Errorf("%s: %w", path, err)
	}
	return nil
}

// maxIdentityFile caps an identity file: one key is 74 bytes, so 1 MiB
// holds thousands.
const maxIdentityFile = 1 << 20

// LoadIdentities reads an age identity file: a regular file, opened
// without blocking (userfile.Open: a FIFO or a device is refused, not
// waited on or read without end). The error never contains the key.
func LoadIdentities(path string) ([]age.Identity, error) {
	f, st, err := openSecret(path, "identity")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > maxIdentityFile {
		return nil, i18n.Errorf("identity %s holds %s, over the %s an identity file may hold: %w", path, userfile.Size(st.Size()), userfile.Size(maxIdentityFile), userfile.ErrTooLarge)
	}
	ids, err := age.ParseIdentities(io.LimitReader(f, maxIdentityFile))
	if err != nil {
		return nil, i18n.Errorf("identity %s: not an age identity file", path)
	}
	return ids, nil
}

// openSecret opens a key file (what names it in errors) without blocking
// (userfile.Open: a FIFO or a device is refused), refusing one that other
// users can read. Windows guards files with ACLs, which Go's mode bits do
// not show: every file there reads as mode 0666, and the profile
// directory keys live in is the user's own.
func openSecret(path, what string) (*os.File, fs.FileInfo, error) {
	f, st, err := userfile.Open(path)
	if err != nil {
		return nil, nil, i18n.Errorf("%s: %w", what, err)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		f.Close()
		return nil, nil, i18n.Errorf("%s %s is readable by other users (mode %v): chmod 600 it", what, path, st.Mode().Perm())
	}
	if runtime.GOOS != "windows" {
		// A key in a directory others may write can be replaced by
		// theirs (a sticky directory such as /tmp lets no one replace
		// another's file).
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			real = path
		}
		dir := filepath.Dir(real)
		if dst, err := os.Stat(dir); err == nil && dst.Mode().Perm()&0o022 != 0 && dst.Mode()&os.ModeSticky == 0 {
			f.Close()
			return nil, nil, i18n.Errorf("%s %s lies in %s, which other users may write (mode %v): they could put their key in its place; chmod go-w %s, or keep the key in a directory of your own", what, path, dir, dst.Mode().Perm(), dir)
		}
	}
	return f, st, nil
}

// ParseRecipients parses age recipients ("age1...").
func ParseRecipients(keys []string) ([]age.Recipient, error) {
	var out []age.Recipient
	for _, k := range keys {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		if u := strings.ToUpper(k); strings.HasPrefix(u, "AGE-SECRET-KEY-") || strings.HasPrefix(u, "GPURENT-AUTH-KEY-") {
			// Never echoed: it would land in a terminal's scrollback or
			// the run's log.
			return nil, i18n.Errorf("a recipient given is a secret key (%s...), not a public key (age1...): it is not used; give the public key, and keep the secret one off the command line", k[:min(len(k), 15)])
		}
		r, err := age.ParseX25519Recipient(k)
		if err != nil {
			return nil, i18n.Errorf("recipient %q: not an age public key (age1...)", k)
		}
		out = append(out, r)
	}
	return out, nil
}

// RecipientsOf returns the public keys of X25519 identities.
func RecipientsOf(ids []age.Identity) []string {
	var out []string
	for _, id := range ids {
		if x, ok := id.(*age.X25519Identity); ok {
			out = append(out, x.Recipient().String())
		}
	}
	return out
}

// Crypto encrypts to recipients and decrypts with identities. The zero value
// (no recipients) stores plaintext.
type Crypto struct {
	Recipients []age.Recipient
	Keys       []string // the recipients as text, for the manifest
	Identities []age.Identity
	// Auth signs manifests (the first) and checks them (any): derived
	// from the identities, or read from an auth key file (auth.go).
	Auth []AuthKey
	// CheckAuth makes readers (Pull, Verify, Latest, Prune's count and
	// the backup check) refuse a checkpoint no Auth key signed.
	CheckAuth bool
}

// Encrypting reports whether objects are encrypted.
func (c *Crypto) Encrypting() bool { return len(c.Recipients) > 0 }

// wrapWriter returns a writer that encrypts into w; Close finishes the
// age stream (not w).
func (c *Crypto) wrapWriter(w io.Writer) (io.WriteCloser, error) {
	if !c.Encrypting() {
		return nopCloser{w}, nil
	}
	return age.Encrypt(w, c.Recipients...)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// ErrWrongIdentity means the identity cannot open the checkpoint, and
// ErrNoIdentity that none was given for one that is encrypted: both are
// the caller's input to fix, not a fault of the store's.
var (
	ErrWrongIdentity = i18n.Errorf("wrong identity")
	// errHeaderDamaged: an age header that does not open with an identity
	// it is encrypted to.
	errHeaderDamaged = i18n.Errorf("damaged age header")
	ErrNoIdentity    = i18n.Errorf("no identity was given")
)

// wrapReader decrypts r when it is encrypted; what names it in errors
// ("checkpoint", "log").
func (c *Crypto) wrapReader(r io.Reader, encrypted bool, recipients []string, what string) (io.Reader, error) {
	if !encrypted {
		return r, nil
	}
	if len(c.Identities) == 0 {
		return nil, i18n.Errorf("the %s is encrypted (to %s) and %w: pass --identity FILE or set GPURENT_IDENTITY", what, strings.Join(recipients, ", "), ErrNoIdentity)
	}
	d, err := age.Decrypt(r, c.Identities...)
	if err != nil {
		var nm *age.NoIdentityMatchError
		if errors.As(err, &nm) {
			mine := RecipientsOf(c.Identities)
			for _, r := range recipients {
				if slices.Contains(mine, r) {
					// Encrypted to this identity, says the manifest: a
					// header that will not open is damaged, or was
					// replaced, not the wrong key.
					return nil, i18n.Errorf("%w: the %s is encrypted to this identity (%s), yet its header does not open with it", errHeaderDamaged, what, r)
				}
			}
			return nil, i18n.Errorf("%w: this identity (%s) cannot decrypt a %s encrypted to %s", ErrWrongIdentity,
				strings.Join(RecipientsOf(c.Identities), ", "), what, strings.Join(recipients, ", "))
		}
		return nil, err
	}
	return d, nil
}

// seal encrypts a small blob (the file list) in memory.
func (c *Crypto) seal(plain []byte) ([]byte, error) {
	if !c.Encrypting() {
		return plain, nil
	}
	var buf bytes.Buffer
	w, err := age.Encrypt(&buf, c.Recipients...)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(plain); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (c *Crypto) open(m *Manifest) ([]byte, error) {
	r, err := c.wrapReader(bytes.NewReader(m.FileList), m.Encrypted, m.Recipients, "checkpoint")
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(r, 256<<20))
	if err != nil {
		return nil, i18n.Errorf("checkpoint %s: file list does not decrypt: %w", m.ID, err)
	}
	return b, nil
}

// Throwaway is a Crypto with a key pair made for one use and never
// written anywhere: a speed test encrypts as a push does without needing
// the user's identity, which a rented machine may not hold.
func Throwaway() (*Crypto, error) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return nil, err
	}
	return &Crypto{Recipients: []age.Recipient{id.Recipient()}, Keys: []string{id.Recipient().String()}, Identities: []age.Identity{id}}, nil
}
