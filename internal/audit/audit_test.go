package audit

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/check"
)

// fakeMachine plants a rented machine's worth of exposures under a
// temporary root: nothing here reads or changes the real home or /etc.
type fakeMachine struct {
	root, home, cwd string
	now             time.Time
	foreign         bool // files chowned to another user (needs root)
}

func write(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func utmpRecord(user, line, host string, at time.Time) []byte {
	r := make([]byte, utmpSize)
	binary.LittleEndian.PutUint32(r[0:], utUserProcess)
	copy(r[8:40], line)
	copy(r[44:76], user)
	copy(r[76:332], host)
	binary.LittleEndian.PutUint32(r[340:], uint32(at.Unix()))
	return r
}

const (
	fakeSecret = "AKIAFAKEFAKEFAKE wJalrXUtnFEMI/K7MDENG"
	keyA       = "AAAAC3NzaC1lZDI1NTE5AAAAIHqPwFkV8x0tW0mT7o3n0bKJ2yDq5Qm0h6Z1e6k4Jw9x"
	keyB       = "AAAAC3NzaC1lZDI1NTE5AAAAIBv6n0D5lJ7VfJcNnq0vH6dAxzq6xk4bS5wqk5mZ2t1a"
)

func newFake(t testing.TB) *fakeMachine {
	base := t.TempDir()
	// Let "others" traverse the test tree, as they would a real /home.
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	m := &fakeMachine{root: filepath.Join(base, "root"), now: time.Now()}
	m.home = filepath.Join(m.root, "home", "me")
	m.cwd = filepath.Join(m.root, "work")
	r := m.root
	// An old dataset in /data, there before the tenancy: a year old by its
	// modification time, and, since the change time cannot be set back,
	// written before PID 1 "starts" (tenancy) and everything else is.
	write(t, r+"/data/old-dataset/shard-0.bin", strings.Repeat("x", 3000), 0o644)
	old := m.now.Add(-400 * 24 * time.Hour)
	os.Chtimes(r+"/data/old-dataset/shard-0.bin", old, old)
	os.Chtimes(r+"/data/old-dataset", old, old)
	time.Sleep(20 * time.Millisecond)
	tenancy := time.Now()
	time.Sleep(40 * time.Millisecond)
	uid := os.Getuid()
	write(t, r+"/etc/passwd", "root:x:0:0::/root:/bin/bash\nme:x:"+itoa(uid)+":"+itoa(uid)+"::/home/me:/bin/bash\nmallory:x:1001:1001::/home/mallory:/bin/bash\n", 0o644)
	if uid == 0 {
		write(t, r+"/etc/passwd", "root:x:0:0::/root:/bin/bash\nmallory:x:1001:1001::/home/mallory:/bin/bash\n", 0o644)
	}
	write(t, r+"/etc/skel/.bashrc", "# skel\n", 0o644)
	// Logins: mallory now and two days ago; a month-old login is too old.
	write(t, r+"/run/utmp", string(utmpRecord("mallory", "pts/1", "203.0.113.7", m.now.Add(-time.Hour))), 0o644)
	wtmp := append(utmpRecord("mallory", "pts/1", "203.0.113.7", m.now.Add(-48*time.Hour)),
		utmpRecord("olduser", "pts/2", "198.51.100.1", m.now.Add(-30*24*time.Hour))...)
	write(t, r+"/var/log/wtmp", string(wtmp), 0o644)
	// Processes: mallory's miner, holding a socket on 0.0.0.0:8888.
	write(t, r+"/proc/4242/status", "Name:\tminer\nUid:\t1001\t1001\t1001\t1001\n", 0o644)
	write(t, r+"/proc/4242/comm", "miner\n", 0o644)
	// My trainer got its token as an argument; my shell has none.
	write(t, r+"/proc/777/status", "Name:\tpython\nUid:\t"+itoa(uid)+"\t"+itoa(uid)+"\t"+itoa(uid)+"\t"+itoa(uid)+"\n", 0o644)
	write(t, r+"/proc/777/cmdline", "python\x00train.py\x00--hf_token\x00hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\x00", 0o644)
	write(t, r+"/proc/778/status", "Name:\tbash\nUid:\t"+itoa(uid)+"\t"+itoa(uid)+"\t"+itoa(uid)+"\t"+itoa(uid)+"\n", 0o644)
	write(t, r+"/proc/778/cmdline", "bash\x00", 0o644)
	os.MkdirAll(r+"/proc/4242/fd", 0o755)
	if err := os.Symlink("socket:[555]", r+"/proc/4242/fd/3"); err != nil {
		t.Fatal(err)
	}
	write(t, r+"/proc/net/tcp", "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"+
		"   0: 00000000:22B8 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 555 1 0 100 0 0 10 0\n"+
		"   1: 0100007F:1776 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 556 1 0 100 0 0 10 0\n"+
		"   2: 0100007F:1776 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 557 1 0 100 0 0 10 0\n", 0o644)
	// PID 1 started 100 s after boot, at tenancy (rounded up to the 10 ms
	// of a clock tick): the tenancy began then.
	btime := tenancy.Unix() - 100
	ticks := int(tenancy.Sub(time.Unix(btime, 0))/(10*time.Millisecond)) + 1
	write(t, r+"/proc/stat", "cpu 1 2 3\nbtime "+itoa(int(btime))+"\n", 0o644)
	write(t, r+"/proc/1/stat", "1 (systemd (init)) S 0 1 1 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 "+itoa(ticks)+" 1000 100\n", 0o644)
	// Storage: the root on a plain disk, /data on LUKS, plain swap.
	write(t, r+"/proc/self/mounts", "/dev/vda1 / ext4 rw,relatime 0 0\n/dev/mapper/cryptdata /data ext4 rw 0 0\nproc /proc proc rw 0 0\n", 0o644)
	write(t, r+"/sys/block/dm-0/dm/name", "cryptdata\n", 0o644)
	write(t, r+"/sys/block/dm-0/dm/uuid", "CRYPT-LUKS2-0123456789abcdef-cryptdata\n", 0o644)
	write(t, r+"/proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n/dev/vda2 partition 1048572 0 -2\n", 0o644)
	// sshd: passwords on, root with a password, through an Include.
	write(t, r+"/etc/ssh/sshd_config", "Include /etc/ssh/sshd_config.d/*.conf\nPermitRootLogin no\nMatch User git\n  PasswordAuthentication no\n", 0o644)
	write(t, r+"/etc/ssh/sshd_config.d/50-cloud.conf", "PasswordAuthentication yes\nPermitRootLogin yes\n", 0o644)
	// Home: credentials, one readable by everyone; two authorized keys.
	write(t, m.home+"/.bashrc", "# mine\n", 0o644)
	write(t, m.home+"/.aws/credentials", "[default]\naws_access_key_id = "+fakeSecret+"\n", 0o644)
	write(t, m.home+"/.netrc", "machine api.wandb.ai login user password "+fakeSecret+"\n", 0o600)
	write(t, m.home+"/.docker/config.json", `{"credsStore":"desktop"}`, 0o600)
	write(t, m.home+"/.config/rclone/rclone.conf", "[oss]\ntype = s3\naccess_key_id = x\nsecret_access_key = "+fakeSecret+"\n", 0o600)
	write(t, m.home+"/.config/gh/hosts.yml", "github.com:\n    oauth_token: "+fakeSecret+"\n    user: me\n", 0o600)
	write(t, m.home+"/.npmrc", "registry=https://registry.npmmirror.com\n", 0o644) // a mirror, no token
	// Tencent Cloud's CLI holds a key; ossutil set up for an ECS RAM role
	// holds none.
	write(t, m.home+"/.tccli/default.credential", `{"secretId": "AKID`+fakeSecret+`", "secretKey": "`+fakeSecret+`"}`, 0o600)
	write(t, m.home+"/.ossutilconfig", "[Credentials]\nlanguage=EN\nendpoint=oss-cn-hangzhou-internal.aliyuncs.com\nmode=EcsRamRole\necsRoleName=train\n", 0o600)
	write(t, m.home+"/.ssh/id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\n"+fakeSecret+"\n", 0o600)
	write(t, m.home+"/.ssh/authorized_keys", "ssh-ed25519 "+keyA+" me@laptop\nno-pty,command=\"echo a, b\" ssh-ed25519 "+keyB+" provider-recovery\n", 0o600)
	write(t, m.root+"/hf/token", fakeSecret, 0o600)
	write(t, m.cwd+"/.env", "OPENAI_API_KEY="+fakeSecret+"\n", 0o600)
	write(t, m.cwd+"/train.py", "print(1)\n", 0o644)
	// A repository cloned with a token in its URL, one with a user name
	// alone and one over ssh: only the first holds a secret.
	write(t, m.cwd+"/private-llm/.git/config", "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://me:AKIAFAKETOKEN123@github.com/me/private-llm.git\n", 0o644)
	write(t, m.cwd+"/public/.git/config", "[remote \"origin\"]\n\turl = https://me@github.com/me/public.git\n", 0o644)
	write(t, m.cwd+"/.git/config", "[remote \"origin\"]\n\turl = git@github.com:me/work.git\n", 0o644)
	// A token typed on a command line stays in the history; another
	// history holds only names that look alike.
	write(t, m.home+"/.bash_history", "ls\nexport HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\npython train.py\n", 0o600)
	write(t, m.home+"/.python_history", "from huggingface_hub import hf_hub_download\nos.environ['AKIA_NOT_A_KEY']\n", 0o600)
	// Leftovers: new data of mine beside the old dataset, and mine
	// unpacked from an archive with last year's modification times.
	write(t, r+"/data/mine/today.bin", "new", 0o644)
	write(t, r+"/data/unpacked/shard-0.bin", "from a tar archive", 0o644)
	os.Chtimes(r+"/data/unpacked/shard-0.bin", old, old)
	os.Chtimes(r+"/data/unpacked", old, old)
	write(t, r+"/tmp/foreign.bin", strings.Repeat("y", 500), 0o644)
	if os.Getuid() == 0 {
		if err := os.Chown(r+"/tmp/foreign.bin", 1001, 1001); err != nil {
			t.Fatal(err)
		}
		m.foreign = true
	}
	return m
}

func itoa(n int) string { return strconv.Itoa(n) }

func (m *fakeMachine) env() Env {
	vars := map[string]string{"HF_HOME": m.root + "/hf"}
	return Env{Root: m.root, Home: m.home, Cwd: m.cwd, UID: os.Getuid(), Now: func() time.Time { return m.now },
		Lookup: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
}

func checkByID(t *testing.T, r *Report, id string) check.Check {
	t.Helper()
	for _, c := range r.Checks {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no check %s in %v", id, r.Checks)
	return check.Check{}
}

func TestAuditFindsEachPlantedExposure(t *testing.T) {
	m := newFake(t)
	// A real Docker-like socket that answers.
	sock := filepath.Join(m.root, "var/run/docker.sock")
	os.MkdirAll(filepath.Dir(sock), 0o755)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()

	f := Gather(context.Background(), m.env())
	r := Judge(f)

	want := map[string]struct{ status, contains string }{
		"users.logins":        {check.Warn, "mallory on pts/1 from 203.0.113.7"},
		"users.processes":     {check.Warn, "mallory: miner (4242)"},
		"ssh.login":           {check.Warn, "passwordauthentication yes"}, // and root with a password
		"ssh.authorized_keys": {check.Warn, "provider-recovery"},
		"net.listeners":       {check.Warn, "tcp 0.0.0.0:8888 miner (pid 4242, mallory)"},
		"secrets.files":       {check.Fail, ".aws/credentials (AWS access keys, -rw-r--r--)"},
		"data.permissions":    {check.Warn, "while others use this machine (mallory): "},
		"data.leftovers":      {check.Warn, "old-dataset"},
		"storage.encryption":  {check.Warn, "not encrypted"},
		"storage.swap":        {check.Warn, "/dev/vda2"},
		"docker.socket":       {check.Warn, "/var/run/docker.sock"},
		"secrets.cmdline":     {check.Fail, "python (pid 777): a Hugging Face token; others use this machine (mallory)"},
	}
	for id, w := range want {
		c := checkByID(t, r, id)
		if c.Status != w.status || !strings.Contains(c.Evidence.String(), w.contains) {
			t.Errorf("%s: got %s %q; want %s containing %q", id, c.Status, c.Evidence.String(), w.status, w.contains)
		}
	}
	if r.Verdict != check.Fail {
		t.Errorf("verdict %s, want fail (a world-readable credential)", r.Verdict)
	}
	if c := checkByID(t, r, "data.leftovers"); strings.Contains(c.Evidence.String(), "/data/mine") || strings.Contains(c.Evidence.String(), "/data/unpacked") {
		t.Errorf("data of this tenancy taken for a leftover (old modification times are not old data): %s", c.Evidence.String())
	}
	// The details behind the checks.
	if c := checkByID(t, r, "ssh.login"); !strings.Contains(c.Evidence.String(), "permitrootlogin yes") || !strings.Contains(c.Evidence.String(), "Match blocks") {
		t.Errorf("ssh: the first value obtained wins, and the Include comes before the main file's own line: %s", c.Evidence.String())
	}
	if c := checkByID(t, r, "storage.encryption"); !strings.Contains(c.Evidence.String(), "dm-crypt (luks2) on dm-0") {
		t.Errorf("LUKS under /data not found: %s", c.Evidence.String())
	}
	secrets := map[string]bool{}
	for _, s := range f.Secrets {
		secrets[strings.TrimPrefix(s.Path, m.root)] = true
	}
	for _, p := range []string{"/home/me/.aws/credentials", "/home/me/.netrc", "/home/me/.ssh/id_ed25519", "/hf/token", "/work/.env", "/work/private-llm/.git/config", "/home/me/.bash_history",
		"/home/me/.config/rclone/rclone.conf", "/home/me/.config/gh/hosts.yml", "/home/me/.tccli/default.credential"} {
		if !secrets[p] {
			t.Errorf("secret %s not found; found %v", p, secrets)
		}
	}
	if secrets["/work/public/.git/config"] || secrets["/work/.git/config"] || secrets["/home/me/.python_history"] {
		t.Error("a git remote without a password, or a history without a token, was reported as a secret")
	}
	if c := checkByID(t, r, "secrets.files"); !strings.Contains(c.Evidence.String(), "/home/me/.bash_history (history holding a token (a Hugging Face token), -rw-------)") ||
		!strings.Contains(c.Advice.String(), "gpurent wipe removes the histories") {
		t.Errorf("secrets.files: %s / %s", c.Evidence.String(), c.Advice.String())
	}
	if secrets["/home/me/.docker/config.json"] || secrets["/home/me/.npmrc"] || secrets["/home/me/.ossutilconfig"] {
		t.Error("a docker config, an npmrc or an ossutil config without credentials was reported as a secret")
	}
	if len(f.Recent) != 1 {
		t.Errorf("recent logins %v: want only mallory's of two days ago", f.Recent)
	}
	var sawForeign, sawMine, sawSkel bool
	for _, l := range f.Leftovers {
		sawForeign = sawForeign || strings.HasSuffix(l.Path, "/tmp/foreign.bin") && len(l.Owners) == 1 && l.Owners[0] == "mallory"
		sawMine = sawMine || strings.HasSuffix(l.Path, "/data/mine")
		sawSkel = sawSkel || strings.HasSuffix(l.Path, "/.bashrc")
	}
	if m.foreign && !sawForeign {
		t.Errorf("mallory's file in /tmp not reported: %+v", f.Leftovers)
	}
	if sawMine || sawSkel {
		t.Errorf("this tenant's own files reported as leftovers: %+v", f.Leftovers)
	}
	// No secret's content reaches the report.
	b, _ := json.Marshal(r)
	if strings.Contains(string(b), "AKIAFAKE") || strings.Contains(string(b), "hf_AbCdEf") {
		t.Fatal("a secret's content leaked into the report")
	}
}

func TestSSHEmptyPasswordsFail(t *testing.T) {
	m := newFake(t)
	write(t, m.root+"/etc/ssh/sshd_config", "PermitEmptyPasswords yes\n", 0o644)
	r := Judge(Gather(context.Background(), m.env()))
	if c := checkByID(t, r, "ssh.login"); c.Status != check.Fail {
		t.Fatalf("empty passwords: %s %s", c.Status, c.Evidence.String())
	}
	// sshd -T, when it works, is believed over the files.
	e := m.env()
	e.SSHD = func(context.Context) ([]byte, error) {
		return []byte("port 22\npasswordauthentication no\nkbdinteractiveauthentication no\npermitemptypasswords no\npermitrootlogin without-password\nusepam yes\n"), nil
	}
	r = Judge(Gather(context.Background(), e))
	if c := checkByID(t, r, "ssh.login"); c.Status != check.Pass || !strings.Contains(c.Evidence.String(), "sshd -T") {
		t.Fatalf("sshd -T keys only: %s %s", c.Status, c.Evidence.String())
	}
}

// A Match block that opens passwords to some users or addresses is judged
// as if it applied (who connects from where is not known here), and named,
// whether the global settings come from the files or from sshd -T, which
// prints those of a connection no block selects.
func TestSSHMatchBlocks(t *testing.T) {
	m := newFake(t)
	write(t, m.root+"/etc/ssh/sshd_config", "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"+
		"Match User git\n  PasswordAuthentication no\n"+
		"Match Address 10.0.0.0/8\n  Include /etc/ssh/lan.conf\n", 0o644)
	write(t, m.root+"/etc/ssh/lan.conf", "PasswordAuthentication yes\n", 0o644)
	expect := func(e Env, status, contains string) {
		t.Helper()
		f := Gather(context.Background(), e)
		c := checkByID(t, Judge(f), "ssh.login")
		if c.Status != status || !strings.Contains(c.Evidence.String(), contains) {
			t.Errorf("got %s %q; want %s containing %q", c.Status, c.Evidence.String(), status, contains)
		}
		if len(f.SSH.MatchBlocks) != 2 || f.SSH.MatchBlocks[1].Condition != "Address 10.0.0.0/8" {
			t.Errorf("match blocks %+v", f.SSH.MatchBlocks)
		}
	}
	expect(m.env(), check.Warn, "Match Address 10.0.0.0/8 (/etc/ssh/sshd_config) sets passwordauthentication yes")
	e := m.env()
	e.SSHD = func(context.Context) ([]byte, error) {
		return []byte("passwordauthentication no\nkbdinteractiveauthentication no\npermitemptypasswords no\npermitrootlogin prohibit-password\nusepam yes\n"), nil
	}
	expect(e, check.Warn, "from sshd -T: passwordauthentication no")
	// Empty passwords for the block's connections fail, as they would
	// globally.
	write(t, m.root+"/etc/ssh/lan.conf", "PasswordAuthentication yes\nPermitEmptyPasswords yes\n", 0o644)
	expect(m.env(), check.Fail, "sets passwordauthentication yes, permitemptypasswords yes")
	// Blocks that allow nothing more leave the check passing.
	write(t, m.root+"/etc/ssh/lan.conf", "PasswordAuthentication no\n", 0o644)
	expect(m.env(), check.Pass, "Match blocks change none of these to allow more")
}

// A home or data directory every account may enter is a warning only
// where someone else uses the machine; a closed one passes either way.
func TestOpenDirs(t *testing.T) {
	m := newFake(t)
	os.MkdirAll(m.root+"/workspace", 0o755)
	os.Chmod(m.root+"/workspace", 0o755)
	os.Chmod(m.home, 0o755)
	c := checkByID(t, Judge(Gather(context.Background(), m.env())), "data.permissions")
	if c.Status != check.Warn || !strings.Contains(c.Evidence.String(), m.home+" (drwxr-xr-x)") || !strings.Contains(c.Evidence.String(), m.root+"/workspace (drwxr-xr-x)") {
		t.Errorf("open home beside mallory: %s %q", c.Status, c.Evidence.String())
	}
	// Alone on the machine: said, not warned.
	for _, p := range []string{"/run/utmp", "/var/log/wtmp", "/proc/4242"} {
		os.RemoveAll(m.root + p)
	}
	c = checkByID(t, Judge(Gather(context.Background(), m.env())), "data.permissions")
	if c.Status != check.Pass || !strings.Contains(c.Evidence.String(), "no other account was seen") {
		t.Errorf("open home, alone: %s %q", c.Status, c.Evidence.String())
	}
	// Closed (or unreachable: a parent others cannot pass) is closed.
	os.Chmod(m.home, 0o700)
	os.Chmod(m.root+"/workspace", 0o750)
	os.Chmod(m.cwd, 0o711)
	os.Chmod(m.root+"/data", 0o700)
	c = checkByID(t, Judge(Gather(context.Background(), m.env())), "data.permissions")
	if c.Status != check.Pass || c.Measured != 0 {
		t.Errorf("closed: %s %v %q", c.Status, c.Measured, c.Evidence.String())
	}
}

func TestCleanMachinePasses(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	home := filepath.Join(root, "root")
	write(t, root+"/etc/passwd", "root:x:0:0::/root:/bin/bash\n", 0o644)
	write(t, home+"/.ssh/authorized_keys", "ssh-ed25519 "+keyA+" me@laptop\n", 0o600)
	write(t, root+"/proc/self/mounts", "/dev/mapper/luks-root / ext4 rw 0 0\n", 0o644)
	write(t, root+"/sys/block/dm-3/dm/name", "luks-root\n", 0o644)
	write(t, root+"/sys/block/dm-3/dm/uuid", "LVM-abc\n", 0o644)
	os.MkdirAll(root+"/sys/block/dm-3/slaves/dm-1", 0o755)
	write(t, root+"/sys/block/dm-1/dm/uuid", "CRYPT-LUKS1-xyz-luks\n", 0o644)
	write(t, root+"/proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n", 0o644)
	write(t, root+"/run/utmp", "", 0o644)
	write(t, root+"/var/log/wtmp", "", 0o644)
	write(t, root+"/proc/stat", "btime 1\n", 0o644)
	write(t, root+"/proc/1/stat", "1 (init) S 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n", 0o644)
	r := Judge(Gather(context.Background(), Env{Root: root, Home: home, Cwd: home, UID: os.Getuid()}))
	for _, c := range r.Checks {
		if c.Status == check.Warn || c.Status == check.Fail {
			t.Errorf("%s: %s %s", c.ID, c.Status, c.Evidence.String())
		}
	}
	if c := checkByID(t, r, "storage.encryption"); !strings.Contains(c.Evidence.String(), "dm-crypt (luks1) on dm-1 under dm-3") {
		t.Errorf("LVM on LUKS: %s", c.Evidence.String())
	}
	if r.Verdict != check.Pass {
		t.Errorf("verdict %s", r.Verdict)
	}
}

// TestListenersForReal binds a socket on every address and one on
// loopback, and reads them back from this machine's /proc. No traffic is
// sent.
func TestListenersForReal(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp")
	}
	all, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	lo, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lo.Close()
	ls := listeners(Env{Root: "/"}, readPasswd("/"), func(string) {})
	find := func(port int) *Listener {
		for i := range ls {
			if ls[i].Port == port && ls[i].Proto == "tcp" {
				return &ls[i]
			}
		}
		return nil
	}
	a, l := find(all.Addr().(*net.TCPAddr).Port), find(lo.Addr().(*net.TCPAddr).Port)
	if a == nil || l == nil {
		t.Fatalf("listeners not found in %+v", ls)
	}
	if a.Loopback() || !l.Loopback() || a.Addr != "0.0.0.0" {
		t.Errorf("loopback judged wrong: %+v %+v", a, l)
	}
	if a.PID != os.Getpid() {
		t.Errorf("owner pid %d, want this process %d", a.PID, os.Getpid())
	}
}

func TestParseAuthKeyFingerprint(t *testing.T) {
	// ssh-keygen -lf prints SHA256 of the decoded blob, base64 without
	// padding; checked here against the same computation done by hand.
	k, ok := parseAuthKey(`from="10.0.0.1",command="a b, c" ssh-ed25519 ` + keyA + ` laptop key`)
	if !ok || k.Type != "ssh-ed25519" || k.Comment != "laptop key" || strings.Join(k.Options, ",") != "from,command" {
		t.Fatalf("%+v", k)
	}
	if !strings.HasPrefix(k.Fingerprint, "SHA256:") || len(k.Fingerprint) != 7+43 {
		t.Fatalf("fingerprint %q", k.Fingerprint)
	}
}

// Any /proc/net table is read without a panic, and every listener it gives
// has an address that parses and a port that fits.
func FuzzParseSockets(f *testing.F) {
	f.Add("tcp", "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"+
		"   0: 00000000:0B06 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 12345 1 0000000000000000 100 0 0 10 0\n")
	f.Add("tcp6", "h\n   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 0:0 0:0 0 1000 0 777\n")
	f.Add("udp", "h\n   0: 0100007F:0035 00000000:0000 07 0:0 0:0 0 0 0 1\n")
	f.Add("udp", "h\n 0: zz:0035 00000000:FFFFF 07 0 0 0 x 0 y\n")
	f.Fuzz(func(t *testing.T, proto, table string) {
		for _, l := range parseSockets(proto, table) {
			if _, err := netip.ParseAddr(l.Addr); err != nil || l.Port < 0 || l.Port > 65535 {
				t.Fatalf("listener %+v", l)
			}
		}
	})
}

// Any authorized_keys line is read without a panic; a key found has a
// key type and a SHA-256 fingerprint.
func FuzzParseAuthKey(f *testing.F) {
	f.Add("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG me@laptop")
	f.Add(`command="echo a,b",no-pty ssh-rsa AAAAB3NzaC1yc2E= ops`)
	f.Add("# comment")
	f.Add("ssh-ed25519 !!!notbase64")
	f.Fuzz(func(t *testing.T, line string) {
		k, ok := parseAuthKey(line)
		if ok && (!keyType(k.Type) || !strings.HasPrefix(k.Fingerprint, "SHA256:")) {
			t.Fatalf("%q gave %+v", line, k)
		}
	})
}

// A machine whose /proc cannot be read has not shown that nobody else
// runs programs or listens on it: those checks are skipped with the
// reason, not passed (unknown is not none).
func TestUnreadProcIsNotAPass(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	home := filepath.Join(root, "root")
	write(t, root+"/etc/passwd", "root:x:0:0::/root:/bin/bash\n", 0o644)
	r := Judge(Gather(context.Background(), Env{Root: root, Home: home, Cwd: home, UID: os.Getuid()}))
	for id, want := range map[string]string{
		"users.processes": "processes not seen: no /proc",
		"secrets.cmdline": "command lines not seen: no /proc",
		"net.listeners":   "listening sockets not seen: no /proc/net/tcp",
		"net.services":    "not asked: the listening sockets were not seen (no /proc/net/tcp)",
		"storage.swap":    "swap not seen: no /proc/swaps",
	} {
		if c := checkByID(t, r, id); c.Status != check.Skip || c.Evidence.String() != want || c.Measured != nil {
			t.Errorf("%s: %s %q (measured %v); want skip %q", id, c.Status, c.Evidence.String(), c.Measured, want)
		}
	}
	// Without PID 1's start the tenancy's start is unknown: the pass may
	// speak of others' files only, not of files older than the tenancy.
	if c := checkByID(t, r, "data.leftovers"); c.Status != check.Pass || !strings.Contains(c.Evidence.String(), "predates this tenancy is not known") {
		t.Errorf("data.leftovers: %s %q; want a pass that says the tenancy's start is not known", c.Status, c.Evidence.String())
	}
}
