package store

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// owner is a Crypto as gpurent's commands build it for the identity's
// holder: it signs, and readers check.
func owner(t *testing.T) *Crypto {
	t.Helper()
	c, _ := newCrypto(t)
	c.Auth = AuthKeysOf(c.Identities)
	c.CheckAuth = true
	return c
}

// attacker holds what a leaked store write key and a public manifest
// give: the store and the recipients, no identity.
func attacker(c *Crypto) *Crypto {
	return &Crypto{Recipients: c.Recipients, Keys: c.Keys}
}

func newLocal(dir string) (Backend, error) {
	b, _, err := Open(context.Background(), dir, OpenOptions{})
	return b, err
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPlantedCheckpointRefused: with the store's write key and the public
// recipient, a newer checkpoint can be committed; the owner's readers pass
// over it, name it, and never hand its bytes on.
func TestPlantedCheckpointRefused(t *testing.T) {
	ctx := context.Background()
	b, err := newLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	own := owner(t)
	src := filepath.Join(t.TempDir(), "checkpoint-100")
	writeFile(t, filepath.Join(src, "model.pt"), "the owner's weights")
	mine, err := New(b, Options{Crypto: own}).Push(ctx, src, "r")
	if err != nil {
		t.Fatal(err)
	}
	if mine.Auth == nil || mine.Version != versionShared {
		t.Fatalf("the owner's push carries no proof: %+v", mine.Auth)
	}
	evil := filepath.Join(t.TempDir(), "checkpoint-200")
	writeFile(t, filepath.Join(evil, "model.pt"), "a pickle that runs code")
	planted, err := New(b, Options{Crypto: attacker(own)}).Push(ctx, evil, "r")
	if err != nil {
		t.Fatal(err)
	}
	s := New(b, Options{Crypto: own})
	m, passed, err := s.Latest(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != mine.ID || len(passed) != 1 || passed[0].ID != planted.ID {
		t.Fatalf("Latest = %s, passed %v; want the owner's %s, passing over %s", m.ID, passed, mine.ID, planted.ID)
	}
	// ls marks it (issue #58: listed as the newest with no mark); with
	// no key here it cannot tell, and says so.
	ms, _ := s.List(ctx, "r")
	if bad, checked := s.Unauthenticated(ms); !checked || len(bad) != 1 || !bad[planted.ID] {
		t.Fatalf("unauthenticated %v (checked %v); want only %s", bad, checked, planted.ID)
	}
	if _, checked := New(b, Options{Crypto: &Crypto{CheckAuth: true}}).Unauthenticated(ms); checked {
		t.Fatal("told the planted one apart with no key")
	}
	_, err = s.Pull(ctx, "r", planted.ID, filepath.Join(t.TempDir(), "out"))
	if !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), "no proof of its writer") {
		t.Fatalf("pull of the planted checkpoint: %v", err)
	}
	_, probs, err := s.Verify(ctx, "r", "", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) != 1 || probs[0].ID != planted.ID {
		t.Fatalf("verify --deep problems %+v; want the planted one", probs)
	}
	// Planted checkpoints never push the owner's out of --keep, and are
	// not deleted by it either: only their owner can tell them from a
	// store written before proofs.
	for range 3 {
		if _, err := New(b, Options{Crypto: attacker(own)}).Push(ctx, evil, "r"); err != nil {
			t.Fatal(err)
		}
	}
	p, err := s.Prune(ctx, "r", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Checkpoints) != 0 || len(p.Unauthenticated) != 4 {
		t.Fatalf("prune --keep 1 deleted %v and left %v unauthenticated; want nothing deleted, 4 left", p.Checkpoints, p.Unauthenticated)
	}
	if got, _ := s.Find(ctx, "r", mine.ID); got == nil {
		t.Fatal("the owner's checkpoint was pruned")
	}
	// Without checks (--allow-unauthenticated), the store reads as before.
	open := New(b, Options{Crypto: &Crypto{Identities: own.Identities}})
	if m, _, err := open.Latest(ctx, "r"); err != nil || m.ID == mine.ID {
		t.Fatalf("unchecked Latest = %v, %v; want the newest", m, err)
	}
}

// TestForgedProofRefused: a manifest whose content changed after it was
// signed (an older checkpoint's proof copied onto other files, a newer
// id, another run), or signed by a key not here, is refused.
func TestForgedProofRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := newLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	own := owner(t)
	src := filepath.Join(t.TempDir(), "ck")
	writeFile(t, filepath.Join(src, "a"), "a")
	mine, err := New(b, Options{Crypto: own}).Push(ctx, src, "r")
	if err != nil {
		t.Fatal(err)
	}
	s := New(b, Options{Crypto: own})
	for _, c := range []struct {
		name   string
		change func(m *Manifest)
	}{
		{"bytes", func(m *Manifest) { m.Host = "elsewhere" }},
		{"file list", func(m *Manifest) { m.FileList = append([]byte(nil), m.FileList...); m.FileList[len(m.FileList)-1] ^= 1 }},
		{"mac", func(m *Manifest) { m.Auth = &ManifestAuth{Key: m.Auth.Key, MAC: strings.Repeat("0", 64)} }},
		{"other key", func(m *Manifest) { m.Auth = &ManifestAuth{Key: "0123456789abcdef", MAC: m.Auth.MAC} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := *mine
			c.change(&m)
			err := own.Authentic(&m)
			if !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("Authentic = %v", err)
			}
		})
	}
	// A signed manifest copied under a newer id is refused when read: its
	// key must name its id (a replay of an old checkpoint as the newest).
	body, err := os.ReadFile(filepath.Join(dir, "runs/r/manifests", mine.ID+".json"))
	if err != nil {
		t.Fatal(err)
	}
	later := "29991231T000000.000Z-00000000"
	writeFile(t, filepath.Join(dir, "runs/r/manifests", later+".json"), string(body))
	if _, err := s.Find(ctx, "r", later); err == nil || !strings.Contains(err.Error(), "holds checkpoint") {
		t.Fatalf("replayed manifest: %v", err)
	}
	// An id changed inside it breaks the proof.
	var m Manifest
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	m.ID = later
	if err := own.Authentic(&m); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("renamed manifest: %v", err)
	}
}

// TestAuthKeyFileSignsForTheIdentity: the auth key keygen derives lets a
// machine without the identity sign checkpoints that the identity's holder
// accepts, and it decrypts nothing.
func TestAuthKeyFileSignsForTheIdentity(t *testing.T) {
	ctx := context.Background()
	b, err := newLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	own := owner(t)
	path := filepath.Join(t.TempDir(), "auth.key")
	if err := WriteAuthKey(path, own.Auth[0]); err != nil {
		t.Fatal(err)
	}
	if err := WriteAuthKey(path, own.Auth[0]); err == nil {
		t.Fatal("an existing auth key file was replaced")
	}
	k, err := LoadAuthKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if k.ID() != own.Auth[0].ID() {
		t.Fatalf("loaded key %s, want %s", k.ID(), own.Auth[0].ID())
	}
	box := &Crypto{Recipients: own.Recipients, Keys: own.Keys, Auth: []AuthKey{k}}
	src := filepath.Join(t.TempDir(), "ck")
	writeFile(t, filepath.Join(src, "a"), "weights")
	m, err := New(b, Options{Crypto: box}).Push(ctx, src, "r")
	if err != nil {
		t.Fatal(err)
	}
	if err := own.Authentic(m); err != nil {
		t.Fatal(err)
	}
	if _, err := New(b, Options{Crypto: box}).Pull(ctx, "r", m.ID, filepath.Join(t.TempDir(), "out")); !errors.Is(err, ErrNoIdentity) {
		t.Fatalf("the auth key decrypted: %v", err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadAuthKey(path); err == nil || !strings.Contains(err.Error(), "readable by other users") {
		t.Fatalf("a world-readable auth key: %v", err)
	}
	for _, bad := range []string{"", "GPURENT-AUTH-KEY-zz", "AGE-SECRET-KEY-1ABC"} {
		if _, err := ParseAuthKey(bad); err == nil || strings.Contains(err.Error(), bad[min(len(bad), 4):]) && bad != "" {
			t.Fatalf("ParseAuthKey(%q) = %v", bad, err)
		}
	}
}

// TestOldStoreNeedsTheFlag: version 1 manifests (no proof) are refused by
// checking readers with a sentence naming the flag, and read without it.
func TestOldStoreNeedsTheFlag(t *testing.T) {
	ctx := context.Background()
	b, err := newLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	own := owner(t)
	src := filepath.Join(t.TempDir(), "ck")
	writeFile(t, filepath.Join(src, "a"), "weights")
	old := &Crypto{Recipients: own.Recipients, Keys: own.Keys, Identities: own.Identities}
	m, err := New(b, Options{Crypto: old}).Push(ctx, src, "r")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = New(b, Options{Crypto: own}).Latest(ctx, "r")
	if !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), "--allow-unauthenticated") {
		t.Fatalf("Latest on an old store: %v", err)
	}
	if _, err := New(b, Options{Crypto: old}).Pull(ctx, "r", m.ID, filepath.Join(t.TempDir(), "out")); err != nil {
		t.Fatalf("pull without checks: %v", err)
	}
	// A version 1 manifest as gpurent wrote it before proofs still parses.
	m.Version = 1
	body, _ := json.Marshal(m)
	if _, err := ParseManifest(body); err != nil {
		t.Fatal(err)
	}
}
