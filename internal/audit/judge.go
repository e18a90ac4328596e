package audit

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/gpurent/gpurent/internal/check"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/probe"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/sharing"
)

// Report is the audit's verdict, with bench's check type, so both read
// and parse alike.
type Report struct {
	Verdict string        `json:"verdict"`
	Checks  []check.Check `json:"checks"`
	Facts   Facts         `json:"facts"`
}

// Judge turns facts into checks. Fail is for what exposes the tenant now
// (a secret any account can read, an empty-password login); warn for what
// the tenant should look at or fix.
func Judge(f Facts) *Report {
	j := &judger{f: f}
	j.logins()
	j.processes()
	j.ssh()
	j.keys()
	j.listeners()
	j.services()
	j.secrets()
	j.tokenArgs()
	j.openDirs()
	j.leftovers()
	j.storage()
	j.swap()
	j.docker()
	j.checks = append(j.checks, sharing.Checks(probe.Facts{GPU: f.GPU, Sharing: f.Sharing})...)
	j.visibility()
	return &Report{Verdict: check.Verdict(j.checks), Checks: j.checks, Facts: f}
}

type judger struct {
	f      Facts
	checks []check.Check
}

func (j *judger) add(c check.Check) { j.checks = append(j.checks, c) }

// list joins the first ten items and says how many more there are.
func list(items []i18n.Text) i18n.Text {
	const max = 10
	if len(items) <= max {
		return i18n.Join(items, "; ")
	}
	return i18n.Textf("%s%s", i18n.Join(items[:max], "; "), i18n.Textf("; and %d more", len(items)-max))
}

func (j *judger) logins() {
	c := check.Check{ID: "users.logins", Status: check.Pass, Measured: len(j.f.Logins), Expected: 0, Unit: "other users"}
	var now, recent []i18n.Text
	for _, l := range j.f.Logins {
		now = append(now, i18n.Textf("%s on %s from %s since %s", l.User, l.Line, orLocal(l.Host), l.Time.Format("2006-01-02 15:04")))
	}
	for _, l := range j.f.Recent {
		recent = append(recent, i18n.Textf("%s from %s at %s", l.User, orLocal(l.Host), l.Time.Format("2006-01-02 15:04")))
	}
	switch {
	case len(now) > 0:
		c.Status = check.Warn
		c.Evidence = i18n.Textf("logged in now: %s", list(now))
		c.Advice = i18n.Textf("Someone else has a session on this machine: find out who before putting data on it; a machine sold as yours alone should have none.")
	case len(recent) > 0:
		c.Status = check.Warn
		c.Evidence = i18n.Textf("logged in during the last week: %s", list(recent))
		c.Advice = i18n.Textf("Other accounts used this machine recently: the image or the host is reused. Check the leftovers below and keep secrets off the disk.")
	default:
		c.Evidence = i18n.Textf("no other user is logged in, and none was in the last week")
		if len(j.f.Recent) == 0 && hasUnseen(j.f.Unseen, "logins") {
			c.Status, c.Evidence = check.Skip, i18n.Textf("no login records to read (containers usually keep none)")
		}
	}
	j.add(c)
}

func orLocal(h string) i18n.Text {
	if h == "" {
		return i18n.Textf("the console")
	}
	return i18n.Plain(h)
}

func hasUnseen(unseen []string, word string) bool {
	for _, u := range unseen {
		if strings.Contains(u, word) {
			return true
		}
	}
	return false
}

func (j *judger) processes() {
	c := check.Check{ID: "users.processes", Status: check.Pass, Measured: len(j.f.Processes), Expected: 0, Unit: "processes"}
	by := map[string][]string{}
	var order []string
	for _, p := range j.f.Processes {
		if _, ok := by[p.User]; !ok {
			order = append(order, p.User)
		}
		by[p.User] = append(by[p.User], fmt.Sprintf("%s (%d)", p.Name, p.PID))
	}
	var items []i18n.Text
	for _, u := range order {
		items = append(items, i18n.Plain(u+": "+strings.Join(by[u], ", ")))
	}
	switch {
	case len(items) > 0:
		c.Status = check.Warn
		c.Evidence = i18n.Textf("processes of other users: %s", list(items))
		c.Advice = i18n.Textf("Other people run programs on this machine: it is shared. Keep data encrypted and credentials off it, or ask for a dedicated machine.")
	case j.f.ProcHidden && j.f.UID != 0:
		c.Status, c.Evidence = check.Skip, i18n.Textf("/proc hides other users' processes (hidepid)")
	case hasUnseen(j.f.Unseen, "processes: no /proc"):
		c.Status, c.Measured, c.Evidence = check.Skip, nil, i18n.Textf("processes not seen: no /proc")
	default:
		c.Evidence = i18n.Textf("no process of another user")
	}
	j.add(c)
}

func (j *judger) ssh() {
	s := j.f.SSH
	c := check.Check{ID: "ssh.login", Status: check.Pass, Expected: i18n.Textf("keys only"), Unit: ""}
	if s.Source == "" {
		c.Status, c.Measured, c.Evidence = check.Skip, "no sshd", i18n.Textf("no sshd configuration on this machine")
		j.add(c)
		return
	}
	var set []string
	for _, k := range []string{"passwordauthentication", "kbdinteractiveauthentication", "permitemptypasswords", "permitrootlogin", "usepam"} {
		set = append(set, k+" "+s.Settings[k])
	}
	c.Measured = strings.Join(set, ", ")
	c.Evidence = i18n.Textf("from %s: %s", s.Source, strings.Join(set, ", "))
	if len(s.Defaulted) > 0 {
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf(" (OpenSSH defaults for %s)", strings.Join(s.Defaulted, ", ")))
	}
	status, advice := sshLogin(s.Settings)
	// A Match block's settings apply to the connections it selects, over
	// the global ones: judged as if every block applied, since who
	// connects from where is not known here.
	var opened []i18n.Text
	for _, m := range s.MatchBlocks {
		eff := maps.Clone(s.Settings)
		var own []string
		for k, v := range m.Settings {
			eff[k] = v
			own = append(own, k+" "+v)
		}
		sort.Strings(own)
		st, adv := sshLogin(eff)
		if check.Verdict([]check.Check{{Status: st}, {Status: status}}) != status {
			status, advice = st, adv
		}
		if st != check.Pass && len(own) > 0 {
			opened = append(opened, i18n.Textf("Match %s (%s) sets %s", m.Condition, m.File, strings.Join(own, ", ")))
		}
	}
	switch {
	case len(opened) > 0:
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; %s", i18n.Join(opened, "; ")))
		advice = i18n.Textf("%s The Match blocks named above do so for the users or addresses they select: change them too.", advice)
	case s.Match:
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; Match blocks change none of these to allow more"))
	}
	c.Status, c.Advice = status, advice
	j.add(c)
}

// sshLogin judges one set of sshd settings: empty passwords fail;
// passwords, keyboard-interactive through PAM, or root with a password
// warn.
func sshLogin(set map[string]string) (status string, advice i18n.Text) {
	pw := set["passwordauthentication"] == "yes"
	kbd := set["kbdinteractiveauthentication"] == "yes" && set["usepam"] == "yes"
	empty := set["permitemptypasswords"] == "yes"
	root := set["permitrootlogin"] == "yes"
	switch {
	case empty && (pw || kbd):
		return check.Fail, i18n.Textf("sshd accepts empty passwords: any account without a password is open to the internet. Set PermitEmptyPasswords no and restart sshd, or leave the machine.")
	case root && (pw || kbd):
		return check.Warn, i18n.Textf("root can log in with a password, which bots guess all day on public addresses. Put your key in ~/.ssh/authorized_keys, set PasswordAuthentication no (and KbdInteractiveAuthentication no) and restart sshd.")
	case pw || kbd:
		return check.Warn, i18n.Textf("sshd accepts passwords. Log in with a key and set PasswordAuthentication no (and KbdInteractiveAuthentication no).")
	}
	return check.Pass, i18n.Text{}
}

func (j *judger) keys() {
	c := check.Check{ID: "ssh.authorized_keys", Status: check.Pass, Measured: len(j.f.Keys), Unit: "keys"}
	var items []i18n.Text
	for _, k := range j.f.Keys {
		s := fmt.Sprintf("%s %s %q", k.Type, k.Fingerprint, k.Comment)
		if len(k.Options) > 0 {
			s += " [" + strings.Join(k.Options, ",") + "]"
		}
		items = append(items, i18n.Plain(s))
	}
	switch {
	case len(items) == 0:
		c.Evidence = i18n.Textf("no authorized_keys: nobody logs in as you with a key")
	case len(items) == 1:
		c.Evidence = i18n.Textf("one key can log in as you: %s; check it is yours (ssh-keygen -lf ~/.ssh/id_*.pub on your computer)", items[0])
	default:
		c.Status = check.Warn
		c.Evidence = i18n.Textf("%d keys can log in as you: %s", len(items), list(items))
		c.Advice = i18n.Textf("Each key here opens your account. Compare the fingerprints with your own (ssh-keygen -lf) and delete the lines of keys you did not add.")
	}
	j.add(c)
}

func (j *judger) listeners() {
	c := check.Check{ID: "net.listeners", Status: check.Pass, Expected: i18n.Textf("loopback only, or sshd"), Unit: "sockets"}
	var open, sshd []i18n.Text
	for _, l := range j.f.Listeners {
		if l.Loopback() {
			continue
		}
		who := i18n.Plain(fmt.Sprintf("%s (pid %d, %s)", l.Process, l.PID, l.User))
		if l.Process == "" {
			who = i18n.Textf("owner %s, process not visible", l.User)
		}
		s := i18n.Textf("%s %s:%d %s", l.Proto, l.Addr, l.Port, who)
		if l.Process == "sshd" || (l.Process == "" && l.Port == 22 && strings.HasPrefix(l.Proto, "tcp")) {
			sshd = append(sshd, s)
			continue
		}
		open = append(open, s)
	}
	c.Measured = len(open)
	switch {
	case len(open) > 0:
		c.Status = check.Warn
		c.Evidence = i18n.Textf("reachable from other machines: %s", list(open))
		c.Advice = i18n.Textf("These services answer on every address. Bind notebooks, TensorBoard and dashboards to 127.0.0.1 and reach them with ssh -L; stop what you do not use.")
	case len(sshd) > 0:
		c.Evidence = i18n.Textf("only sshd listens beyond loopback: %s", list(sshd))
	case hasUnseen(j.f.Unseen, "listening sockets:"):
		c.Status, c.Measured, c.Evidence = check.Skip, nil, i18n.Textf("listening sockets not seen: no /proc/net/tcp")
	default:
		c.Evidence = i18n.Textf("nothing listens beyond loopback")
	}
	j.add(c)
}

// services: a notebook without a token runs any code for whoever reaches
// its port, as does Ray's Jobs API; TensorBoard shows the training's logs
// and has no login at all.
func (j *judger) services() {
	c := check.Check{ID: "net.services", Status: check.Pass, Expected: i18n.Textf("none open"), Unit: "services"}
	var run, read, closed []i18n.Text
	for _, s := range j.f.Services {
		line := i18n.Textf("%s on port %d (%s)", s.Kind, s.Port, s.Evidence)
		switch {
		case !s.Open:
			closed = append(closed, line)
		case s.Kind == "tensorboard":
			read = append(read, line)
		default:
			run = append(run, line)
		}
	}
	c.Measured = len(run) + len(read)
	switch {
	case len(run) > 0:
		c.Status, c.Evidence = check.Fail, i18n.Textf("runs code for anyone who reaches it: %s", list(run))
		c.Advice = i18n.Textf("Anyone who can reach this port runs commands on this machine as the service's owner, with your data and credentials in reach. Stop it now, or restart it bound to 127.0.0.1 (jupyter lab --ip 127.0.0.1; ray start --dashboard-host 127.0.0.1; code-server --bind-addr 127.0.0.1:8080 --auth password) with a token or password, and reach it with ssh -L.")
		if len(read) > 0 {
			c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; readable by anyone: %s", list(read)))
		}
	case len(read) > 0:
		c.Status, c.Evidence = check.Warn, i18n.Textf("readable by anyone who reaches it: %s", list(read))
		c.Advice = i18n.Textf("TensorBoard has no login: anyone who reaches the port reads the training's curves, text and images. Restart it with --host 127.0.0.1 and reach it with ssh -L.")
	case len(closed) > 0:
		c.Evidence = i18n.Textf("asks for credentials: %s", list(closed))
	case hasUnseen(j.f.Unseen, "listening sockets:"):
		c.Status, c.Measured, c.Evidence = check.Skip, nil, i18n.Textf("not asked: the listening sockets were not seen (no /proc/net/tcp)")
	default:
		c.Evidence = i18n.Textf("no Jupyter, TensorBoard, Ray dashboard or code-server answers on a port other machines can reach")
	}
	j.add(c)
}

// others are the accounts seen using this machine: logged in now or in
// the last week, or running processes.
func (j *judger) others() []string {
	others := map[string]bool{}
	for _, l := range slices.Concat(j.f.Logins, j.f.Recent) {
		others[l.User] = true
	}
	for _, p := range j.f.Processes {
		others[p.User] = true
	}
	return slices.Sorted(maps.Keys(others))
}

// tokenArgs: a command line is readable by every account (ps), so a token
// passed as an argument is shared with whoever else uses the machine.
func (j *judger) tokenArgs() {
	c := check.Check{ID: "secrets.cmdline", Status: check.Pass, Measured: len(j.f.TokenArgs), Expected: 0, Unit: "processes"}
	var items []i18n.Text
	for _, a := range j.f.TokenArgs {
		items = append(items, i18n.Plain(fmt.Sprintf("%s (pid %d): %s", a.Name, a.PID, a.Kind)))
	}
	names := j.others()
	switch {
	case len(items) == 0 && hasUnseen(j.f.Unseen, "processes: no /proc"):
		c.Status, c.Measured, c.Evidence = check.Skip, nil, i18n.Textf("command lines not seen: no /proc")
	case len(items) == 0:
		c.Evidence = i18n.Textf("no process of yours has a token on its command line")
	case j.f.ProcHidden:
		c.Evidence = i18n.Textf("a token on the command line, but /proc hides it from other accounts (hidepid): %s", list(items))
	default:
		c.Status = check.Warn
		c.Evidence = i18n.Textf("a token on the command line, which every account here can read with ps: %s", list(items))
		if len(names) > 0 {
			c.Status = check.Fail
			c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; others use this machine (%s)", list(i18n.Plains(names))))
		}
		c.Advice = i18n.Textf("Pass tokens in environment variables or files (HF_TOKEN, huggingface-cli login, ~/.aws/credentials), not as arguments, and rotate one others may have read.")
	}
	j.add(c)
}

// openDirs: a home or data directory that every account may list and
// enter shares everything under it that is not closed file by file, which
// matters as soon as someone else uses the machine.
func (j *judger) openDirs() {
	c := check.Check{ID: "data.permissions", Status: check.Pass, Measured: len(j.f.OpenDirs), Expected: 0, Unit: "directories"}
	var open []i18n.Text
	for _, d := range j.f.OpenDirs {
		open = append(open, i18n.Plain(fmt.Sprintf("%s (%s)", d.Path, d.Mode)))
	}
	names := j.others()
	switch {
	case len(open) == 0:
		c.Evidence = i18n.Textf("your home, working directory and data directories are closed to other accounts")
	case len(names) > 0:
		c.Status = check.Warn
		c.Evidence = i18n.Textf("open to every account, while others use this machine (%s): %s", list(i18n.Plains(names)), list(open))
		c.Advice = i18n.Textf("Other people on this machine can list and read what these hold (datasets, checkpoints, code, shell history). chmod 700 them (chmod 700 ~ for the home), or keep your data where only you can reach it.")
	default:
		c.Evidence = i18n.Textf("open to every account, but no other account was seen using this machine: %s", list(open))
	}
	j.add(c)
}

func (j *judger) secrets() {
	c := check.Check{ID: "secrets.files", Status: check.Pass, Measured: len(j.f.Secrets), Expected: 0, Unit: "files"}
	var readable, present []i18n.Text
	for _, s := range j.f.Secrets {
		item := i18n.Textf("%s (%s, %s)", s.Path, i18n.Data(s.Kind), s.Mode)
		if s.Target != "" {
			item = i18n.Textf("%s, a symlink to %s (%s, %s)", s.Path, s.Target, i18n.Data(s.Kind), s.Mode)
		}
		if s.OthersCanRead {
			readable = append(readable, item)
		} else {
			present = append(present, item)
		}
	}
	switch {
	case len(readable) > 0:
		c.Status = check.Fail
		c.Evidence = i18n.Textf("readable by every account on this machine: %s", list(readable))
		if len(present) > 0 {
			c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; also present: %s", list(present)))
		}
		c.Advice = i18n.Textf("Anyone else on this machine can read these credentials now: chmod 600 them, and rotate the keys if the machine is shared. Then gpurent wipe before release.")
	case len(present) > 0:
		c.Status = check.Warn
		c.Evidence = i18n.Textf("credentials on this machine's disk: %s", list(present))
		c.Advice = i18n.Textf("These stay on a disk someone else owns after you leave. Prefer environment variables for the session, and run gpurent wipe before releasing the machine.")
	default:
		c.Evidence = i18n.Textf("no credential files in the home, .env files in the working directory or git remotes holding a token")
	}
	var git, history bool
	for _, s := range j.f.Secrets {
		git = git || s.Kind == gitRemoteKind
		history = history || strings.HasPrefix(s.Kind, historyKind)
	}
	if git {
		c.Advice = i18n.Textf("%s%s", c.Advice, i18n.Textf(" For a git remote: git remote set-url origin with the URL less its token, and let git keep the token in memory (git config --global credential.helper cache)."))
	}
	if history {
		c.Advice = i18n.Textf("%s%s", c.Advice, i18n.Textf(" For a history: the token was typed on a command line; gpurent wipe removes the histories (bash: history -c; history -w), and a token others could read must be rotated."))
	}
	j.add(c)
}

func (j *judger) leftovers() {
	c := check.Check{ID: "data.leftovers", Status: check.Pass, Measured: len(j.f.Leftovers), Expected: 0, Unit: "entries"}
	var items []i18n.Text
	var total int64
	for _, l := range j.f.Leftovers {
		why := i18n.Textf("untouched since %s", l.Newest.Format("2006-01-02"))
		if len(l.Owners) > 0 {
			why = i18n.Textf("owned by %s", strings.Join(l.Owners, ", "))
		}
		items = append(items, i18n.Textf("%s (%s, %s, %s)", l.Path, report.Bytes(l.Bytes), i18n.Plural(l.Files, "%d file", "%d files"), why))
		total += l.Bytes
	}
	since := i18n.Textf("unknown")
	if !j.f.Since.IsZero() {
		since = i18n.Textf("%s UTC, %s", j.f.Since.Format("2006-01-02 15:04"), i18n.Data(j.f.SinceFrom))
	}
	switch {
	case len(items) > 0:
		c.Status = check.Warn
		c.Evidence = i18n.Textf("%s left by others or from before this tenancy (began %s): %s", report.Bytes(total), since, list(items))
		c.Advice = i18n.Textf("The image or the machine was used before you and not cleared, so what you leave will stay too. Leave others' files unread; plan gpurent wipe (and an encrypted volume) for your own.")
	case j.f.Since.IsZero():
		// Without a start, files older than this tenancy cannot be told
		// from the user's own: only others' ownership was judged.
		c.Evidence = i18n.Textf("nothing in the home, data or temp directories belongs to another user; whether anything there predates this tenancy is not known (when it began is not known: pass --since)")
	default:
		c.Evidence = i18n.Textf("nothing in the home, data or temp directories belongs to another user or predates this tenancy (began %s)", since)
	}
	if j.f.ScanPartial != "" {
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; %s", j.f.ScanPartial))
	}
	j.add(c)
}

const adviceCrypt = "Keep checkpoints and data on a volume encrypted with a key only you hold (cryptsetup luksFormat on the data disk, or gpurent ckpt's age encryption for what leaves the machine); destroying the key at release is the one erase that works on SSDs, overlays and copy-on-write disks."

func (j *judger) storage() {
	c := check.Check{ID: "storage.encryption", Status: check.Pass, Expected: i18n.Textf("dm-crypt under your data"), Unit: ""}
	var plain, layered, network, enc, unknown []i18n.Text
	for _, v := range j.f.Volumes {
		desc := i18n.Textf("%s on %s (%s, %s)", v.Path, v.Mount, v.FSType, v.Source)
		switch {
		case v.Network:
			network = append(network, desc)
		case v.Overlay:
			layered = append(layered, desc)
		case v.Memory:
		case v.Encrypted != nil && *v.Encrypted:
			enc = append(enc, i18n.Textf("%s via %s", desc, v.Via))
		case v.Encrypted != nil:
			plain = append(plain, desc)
		default:
			unknown = append(unknown, desc)
		}
	}
	var parts []i18n.Text
	add := func(label i18n.Text, xs []i18n.Text) {
		if len(xs) > 0 {
			parts = append(parts, i18n.Textf("%s: %s", label, list(xs)))
		}
	}
	add(i18n.Textf("not encrypted"), plain)
	add(i18n.Textf("container overlay (the host disk beneath is not visible)"), layered)
	add(i18n.Textf("network file system (the data lives on the provider's servers)"), network)
	add(i18n.Textf("encrypted"), enc)
	add(i18n.Textf("cannot tell"), unknown)
	c.Measured = i18n.Textf("%d plain, %d encrypted", len(plain)+len(layered), len(enc))
	c.Evidence = i18n.Join(parts, "; ")
	if len(parts) == 0 {
		c.Status, c.Evidence = check.Skip, i18n.Textf("no mount table to read")
	} else if len(plain)+len(layered)+len(network) > 0 {
		c.Status = check.Warn
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf(". Encryption by the provider (EBS, instance store) is invisible from here and does not keep your data from the provider"))
		c.Advice = i18n.Textf("What you write here stays readable on the provider's disks after you leave, and deleting files does not erase them. %s", i18n.Textf(adviceCrypt))
	}
	j.add(c)
}

func (j *judger) swap() {
	c := check.Check{ID: "storage.swap", Status: check.Pass, Unit: ""}
	var plain, ok []i18n.Text
	for _, v := range j.f.Swap {
		switch {
		case v.Memory || (v.Encrypted != nil && *v.Encrypted):
			via := i18n.Plain(v.Via)
			if v.Via == "" {
				via = i18n.Textf("memory")
			}
			ok = append(ok, i18n.Textf("%s (%s)", v.Path, via))
		default:
			plain = append(plain, i18n.Plain(v.Path))
		}
	}
	c.Measured = len(plain)
	switch {
	case len(plain) > 0:
		c.Status = check.Warn
		c.Evidence = i18n.Textf("swap is not encrypted: %s", list(plain))
		c.Advice = i18n.Textf("Memory pages (model weights, tokens, keys) can be written to a swap disk that outlives the machine. Turn swap off (swapoff -a) if RAM allows, or use encrypted swap.")
	case len(ok) > 0:
		c.Evidence = i18n.Textf("swap is encrypted or in memory: %s", list(ok))
	case hasUnseen(j.f.Unseen, "swap: no /proc/swaps"):
		c.Status, c.Measured, c.Evidence = check.Skip, nil, i18n.Textf("swap not seen: no /proc/swaps")
	default:
		c.Evidence = i18n.Textf("no swap")
	}
	j.add(c)
}

func (j *judger) docker() {
	c := check.Check{ID: "docker.socket", Status: check.Pass, Unit: ""}
	var reach, closed []string
	for _, d := range j.f.Docker {
		if d.Reachable {
			reach = append(reach, d.Path)
		} else {
			closed = append(closed, d.Path)
		}
	}
	c.Measured = len(reach)
	switch {
	case len(reach) > 0:
		c.Status = check.Warn
		c.Evidence = i18n.Textf("the Docker daemon answers this user at %s", list(i18n.Plains(reach)))
		c.Advice = i18n.Textf("Whoever reaches the Docker socket is root on the host and can read every container's files; inside a container it means the walls between tenants are thin. Keep your data encrypted.")
	case len(closed) > 0:
		c.Evidence = i18n.Textf("a Docker socket exists but does not answer this user: %s", list(i18n.Plains(closed)))
	default:
		c.Evidence = i18n.Textf("no Docker socket")
	}
	j.add(c)
}

func (j *judger) visibility() {
	c := check.Check{ID: "audit.visibility", Status: check.Pass, Measured: len(j.f.Unseen), Unit: "blind spots"}
	if len(j.f.Unseen) > 0 {
		c.Status = check.Skip
		unseen := make([]i18n.Text, len(j.f.Unseen))
		for i, u := range j.f.Unseen {
			unseen[i] = i18n.Data(u)
		}
		c.Evidence = i18n.Textf("not seen: %s", i18n.Join(unseen, "; "))
		if j.f.UID != 0 {
			c.Advice = i18n.Textf("Run gpurent audit as root (sudo) to see other users' processes and sockets.")
		}
	} else {
		c.Evidence = i18n.Textf("everything the audit looks at was readable")
	}
	j.add(c)
}
