//go:build unix

package audit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func mkfifo(t *testing.T, path string) {
	t.Helper()
	os.Remove(path)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o666); err != nil {
		t.Skipf("this file system makes no FIFOs (mkfifo: %v)", err)
	}
}

// gatherWithin gathers the facts, failing the test when that takes more
// than 5 s: a FIFO opened for reading blocks until a writer comes.
func gatherWithin(t *testing.T, e Env) Facts {
	t.Helper()
	done := make(chan Facts, 1)
	go func() { done <- Gather(context.Background(), e) }()
	select {
	case f := <-done:
		return f
	case <-time.After(5 * time.Second):
		t.Fatal("audit still gathering after 5 s: it blocked on a FIFO")
	}
	return Facts{}
}

// Anyone who can write a scanned place could stop everybody's audit with
// a FIFO there (issue #35, item 7): the histories, a .git/config in the
// working directory or a data directory, authorized_keys. The audit now
// finishes and still reports the rest.
func TestAuditFIFOsDoNotHang(t *testing.T) {
	m := newFake(t)
	for _, p := range []string{m.home + "/.bash_history", m.home + "/.zsh_history", m.cwd + "/.git/config",
		m.root + "/data/shared-repo/.git/config", m.home + "/.ssh/authorized_keys", m.home + "/.python_history"} {
		mkfifo(t, p)
	}
	f := gatherWithin(t, m.env())
	found := map[string]bool{}
	for _, s := range f.Secrets {
		found[s.Path] = true
	}
	if !found[m.home+"/.aws/credentials"] || !found[m.cwd+"/private-llm/.git/config"] {
		t.Errorf("the other secrets went unreported: %+v", f.Secrets)
	}
	if found[m.home+"/.bash_history"] {
		t.Errorf("a FIFO reported as a history holding a token")
	}
}

// A credential that is a symlink (~/.netrc -> a world-readable file
// elsewhere) went unreported (issue #35, item 7): it is reported, naming
// its target, and judged by the target's permissions.
func TestSymlinkedCredentialReported(t *testing.T) {
	m := newFake(t)
	open := m.root + "/elsewhere/netrc"
	write(t, open, "machine api.wandb.ai login user password "+fakeSecret+"\n", 0o644)
	os.Remove(m.home + "/.netrc")
	if err := os.Symlink(open, m.home+"/.netrc"); err != nil {
		t.Fatal(err)
	}
	closed := m.root + "/elsewhere/credentials"
	write(t, closed, "[default]\naws_access_key_id = "+fakeSecret+"\n", 0o600)
	os.Remove(m.home + "/.aws/credentials")
	if err := os.Symlink("../../../elsewhere/credentials", m.home+"/.aws/credentials"); err != nil {
		t.Fatal(err)
	}
	// A link to a FIFO is no credential, and is not waited on.
	mkfifo(t, m.root+"/elsewhere/fifo")
	if err := os.Symlink(m.root+"/elsewhere/fifo", m.home+"/.git-credentials"); err != nil {
		t.Fatal(err)
	}
	// Targets are named with the links resolved (a temporary directory
	// may itself sit behind one, as /var does on macOS).
	open, _ = filepath.EvalSymlinks(open)
	closed, _ = filepath.EvalSymlinks(closed)
	f := gatherWithin(t, m.env())
	got := map[string]Secret{}
	for _, s := range f.Secrets {
		got[s.Path] = s
	}
	if s, ok := got[m.home+"/.netrc"]; !ok || s.Target != open || !s.OthersCanRead || s.Mode != "-rw-r--r--" {
		t.Errorf("~/.netrc -> a world-readable file: %+v (reported: %v)", s, ok)
	}
	if s, ok := got[m.home+"/.aws/credentials"]; !ok || s.Target != closed || s.OthersCanRead || s.Mode != "-rw-------" {
		t.Errorf("~/.aws/credentials -> a private file: %+v (reported: %v)", s, ok)
	}
	if _, ok := got[m.home+"/.git-credentials"]; ok {
		t.Errorf("a link to a FIFO reported as a credential")
	}
	c := checkByID(t, Judge(f), "secrets.files")
	if c.Status != "fail" || !strings.Contains(c.Evidence.String(), m.home+"/.netrc, a symlink to "+open+" (netrc passwords") {
		t.Errorf("secrets.files: %s %q", c.Status, c.Evidence.String())
	}
}
