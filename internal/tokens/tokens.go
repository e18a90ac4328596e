// Package tokens recognises credentials in text: audit names the kinds it
// finds in a history or a command line, and run takes them out of the
// command's last lines before they go to a chat channel.
package tokens

import (
	"regexp"
	"slices"
	"sort"
	"strings"
)

// token is a credential format: what to call it, and how it looks.
type token struct {
	name string
	re   *regexp.Regexp
	// hints are literals one of which every match contains: text without
	// any is passed over without running the expression, which is what
	// keeps a 16 MiB history quick to search.
	hints []string
}

// mayBeIn: s holds one of t's hints, so t.re may match.
func (t token) mayBeIn(s string) bool {
	for _, h := range t.hints {
		if strings.Contains(s, h) {
			return true
		}
	}
	return false
}

// tokens are credentials whose format tells them apart from any
// other text, so a history can be searched for them without guessing:
//   - AWS access key ids: AKIA (long-term) or ASIA (temporary) and 16 more
//     capitals and digits (AWS STS GetAccessKeyInfo: "Access key IDs
//     beginning with AKIA are long-term credentials ... ASIA are temporary
//     credentials"; its example AKIAIOSFODNN7EXAMPLE);
//   - GitHub tokens: ghp_, gho_, ghu_, ghs_, ghr_ and 36 or more letters,
//     digits and underscores (github.blog changelog 2021-03-31, "Authentication
//     token format updates are generally available"), github_pat_ for
//     fine-grained ones;
//   - Hugging Face user access tokens, hf_... (huggingface.co/docs/hub/
//     security-tokens), taken with 30 or more letters and digits after
//     the prefix so that names such as hf_hub_download do not match;
//   - OpenAI API keys: sk-, sk-proj-, sk-svcacct- or sk-admin- with
//     "T3BlbkFJ" (base64 of "OpenAI") between two runs of 20 or more key
//     characters, the shape secret scanners key on (gitleaks' rule
//     openai-api-key, which the samples in its tests follow);
//   - Anthropic API and admin keys: sk-ant-api03-... and sk-ant-admin01-...
//     (gitleaks' anthropic-api-key rules: 93 key characters then "AA"),
//     taken here as 40 or more after the version so that a new version
//     is still found;
//   - Google API keys (Gemini's among them): AIza and 35 letters, digits,
//     "_" and "-" (the shape of gitleaks' GCP API key rule and of other
//     public secret scanners');
//   - GitLab personal access tokens: glpat- and 20 or more (GitLab's
//     "Token prefixes" page, as gitleaks' gitlab-pat rule cites it);
//   - Slack tokens: xoxb- (bot), xoxp- (user), xoxe-, xoxa-, xoxr-, xoxs-,
//     xoxo- followed by a number and more (Slack's "Token types", as
//     gitleaks' Slack rules cite it);
//   - npm access tokens: npm_ and 36 letters and digits, and PyPI API
//     tokens: pypi- and a macaroon whose base64 begins AgEIcHlwaS5vcmc
//     (the encoded "pypi.org" location), as several public secret
//     scanners' rule sets match them (read 2026-12-01);
//   - W&B's newer API keys, wandb_v1_... (older ones are 40 hexadecimal
//     digits, told apart only by a name: see the named secrets below);
//   - chat webhook URLs, whose path or query is the credential: Slack
//     (hooks.slack.com/services/T.../B.../...), Discord (/api/webhooks/ID/
//     TOKEN), Feishu and Lark (/open-apis/bot/v2/hook/UUID), DingTalk
//     (/robot/send?access_token=...) and WeCom (/cgi-bin/webhook/send?key=
//     ...): anyone holding one posts to the channel, and a log shipped to
//     that very channel (gpurent run --notify) must not carry it.
var tokens = []token{
	{name: "an AWS access key id", re: regexp.MustCompile(`\b(AKIA|ASIA)[A-Z0-9]{16}\b`), hints: []string{"AKIA", "ASIA"}},
	{name: "a GitHub token", re: regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9_]{36,}|github_pat_[A-Za-z0-9_]{22,})`), hints: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}},
	{name: "a Hugging Face token", re: regexp.MustCompile(`\bhf_[A-Za-z0-9]{30,}`), hints: []string{"hf_"}},
	{name: "an OpenAI API key", re: regexp.MustCompile(`\bsk-(?:(?:proj|svcacct|admin)-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}`), hints: []string{"T3BlbkFJ"}},
	{name: "an Anthropic API key", re: regexp.MustCompile(`\bsk-ant-(?:api|admin)\d\d-[A-Za-z0-9_-]{40,}`), hints: []string{"sk-ant-"}},
	{name: "a Google API key", re: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`), hints: []string{"AIza"}},
	{name: "a GitLab token", re: regexp.MustCompile(`\bglpat-[0-9A-Za-z_.-]{20,}`), hints: []string{"glpat-"}},
	{name: "a Slack token", re: regexp.MustCompile(`\bxox[abeoprs]-\d{6,}-[0-9A-Za-z-]{8,}`), hints: []string{"xox"}},
	{name: "an npm token", re: regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}\b`), hints: []string{"npm_"}},
	{name: "a PyPI token", re: regexp.MustCompile(`\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}`), hints: []string{"pypi-AgEIcHlwaS5vcmc"}},
	{name: "a W&B API key", re: regexp.MustCompile(`\bwandb_v1_[A-Za-z0-9_]{20,}`), hints: []string{"wandb_v1_"}},
	{name: "a Slack webhook URL", re: regexp.MustCompile(`https://hooks\.slack\.com/services/[A-Za-z0-9_/-]{20,}`), hints: []string{"hooks.slack.com/services/"}},
	{name: "a Discord webhook URL", re: regexp.MustCompile(`https://(?:[a-z]+\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{20,}`), hints: []string{"/api/webhooks/"}},
	{name: "a Feishu or Lark webhook URL", re: regexp.MustCompile(`https://open\.(?:feishu\.cn|larksuite\.com)/open-apis/bot/v2/hook/[A-Za-z0-9-]{16,}`), hints: []string{"/open-apis/bot/v2/hook/"}},
	{name: "a DingTalk webhook URL", re: regexp.MustCompile(`https://oapi\.dingtalk\.com/robot/send\?\S*access_token=[A-Za-z0-9]{16,}`), hints: []string{"oapi.dingtalk.com/robot/send"}},
	{name: "a WeCom webhook URL", re: regexp.MustCompile(`https://qyapi\.weixin\.qq\.com/cgi-bin/webhook/send\?\S*key=[A-Za-z0-9-]{16,}`), hints: []string{"qyapi.weixin.qq.com/cgi-bin/webhook/send"}},
}

// secretName ends a name that says its value is a secret: an API key,
// a token, a secret (key), an access key, a password.
const secretName = `(?:API_?KEY|APIKEY|TOKEN|SECRET|SECRET_?KEY|ACCESS_?KEY|PASSWORD|PASSWD)`

// A named secret is a literal of 16 or more characters given to a name
// that says it is a secret, in the five ways a secret is handed over
// that no format tells apart (W&B's keys, OpenAI-compatible gateways',
// DashScope's, a database password):
//   - assignment, NAME=value: `export WANDB_API_KEY=...` typed in a shell,
//     `env OPENAI_API_KEY=... python serve.py` in a process list;
//   - a flag, --name value or --name=value: `python train.py --wandb_api_key
//     ...`, `--api_key=...`, Jupyter's `--ServerApp.token=...` on a command
//     line, which every account on the machine can read in /proc;
//   - a key, "name": "value" or name: value on a line of its own: a config
//     printed as JSON, a Python dict or YAML at the top of a training log;
//   - an HTTP Authorization header's credentials (`curl -H "Authorization:
//     Bearer ..."` in a history, a request dumped to a log);
//   - `wandb login KEY`, whose key is 40 hexadecimal digits, after a
//     prefix and a dash for a self-hosted server (wandb's apikey.py:
//     "Normal API keys are 40-character hex strings").
//
// The value must be a literal: not a reference ($VAR, ${VAR}, $(cmd)), a
// path or a placeholder in angle brackets, which is also what keeps a
// tokenizer's "<|endoftext|>" (printed as eos_token) out.
var (
	assignment = regexp.MustCompile(`\b([A-Z][A-Z0-9_]*` + secretName + `)=["']?([^\s"'$]{16,})`)
	flag       = regexp.MustCompile(`(?:^|\s)(--?(?i:[a-z0-9][a-z0-9_.-]*?[_.-])?(?i:api[_-]?key|apikey|token|secret|secret[_-]key|access[_-]key|password|passwd))(?:=|\s+)["']?([^\s"'$<{/~.][^\s"']{15,})`)
	authHeader = regexp.MustCompile(`(?i:\bauthorization["']?\s*[:=]\s*["']?(?:bearer|token|basic)\s+)([A-Za-z0-9._~+/=-]{16,})`)
	wandbLogin = regexp.MustCompile(`\bwandb\s+login\s+(?:--?[a-z-]+(?:=\S+)?\s+)*((?:[a-z]+-)?[0-9a-f]{40})\b`)
	key        = regexp.MustCompile(`(?m)(?:["']((?i:[a-z0-9_]*(?:api_?key|apikey|token|secret|secret_key|access_key|password|passwd)))["']\s*:\s*["']|^\s*((?i:[a-z0-9_]*(?:api_?key|apikey|token|secret|secret_key|access_key|password|passwd)))\s*[:=]\s*["']?)([A-Za-z0-9_+=-][A-Za-z0-9_.+/=-]{15,})`)
)

// random: v has a letter and a digit, as a generated key or token
// almost always does (a 16-character one lacks a digit 6% of the time)
// and the names flags and config keys also take do not: a setting such as
// os.environ/OPENAI_API_KEY (LiteLLM's reference to a variable), a
// placeholder such as your-api-key-here, a model or file name. The cost:
// a password of letters only, given as a flag or a key, is not found.
func random(v string) bool {
	return strings.ContainsFunc(v, func(r rune) bool { return r >= '0' && r <= '9' }) &&
		strings.ContainsFunc(v, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' })
}

// named is one secret found by its name: the kind to report and where
// the value lies in the text.
type named struct {
	kind       string
	start, end int
}

// namedSecrets finds the named secrets in s, each value once. A value
// never spans lines, and most lines name no secret: only the lines that
// hold one of the names' words (in any case) are searched.
func namedSecrets(s string) []named {
	var out []named
	for start := 0; start < len(s); {
		end := strings.IndexByte(s[start:], '\n')
		if end < 0 {
			end = len(s)
		} else {
			end += start
		}
		if line := s[start:end]; namesASecret(line) {
			out = append(out, namedInLine(line, start)...)
		}
		start = end + 1
	}
	// One value can answer to two ways (an assignment inside a flag's
	// value): keep the first of those that overlap.
	sort.SliceStable(out, func(i, j int) bool { return out[i].start < out[j].start })
	var kept []named
	for _, n := range out {
		if len(kept) > 0 && n.start < kept[len(kept)-1].end {
			continue
		}
		kept = append(kept, n)
	}
	return kept
}

// secretWords are in every name a named secret can have, in lower case.
var secretWords = []string{"key", "token", "secret", "passw", "wandb", "authorization"}

// namesASecret: line holds one of secretWords, in any case.
func namesASecret(line string) bool {
	var lower []byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		if 'A' <= c && c <= 'Z' {
			if lower == nil {
				lower = []byte(line)
			}
			lower[i] = c + 'a' - 'A'
		}
	}
	l := line
	if lower != nil {
		l = string(lower)
	}
	for _, w := range secretWords {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// namedInLine finds the named secrets in one line that begins at offset
// off of the text.
func namedInLine(s string, off int) []named {
	var out []named
	for _, m := range assignment.FindAllStringSubmatchIndex(s, -1) {
		out = append(out, named{"a secret assigned to " + s[m[2]:m[3]], off + m[4], off + m[5]})
	}
	for _, m := range flag.FindAllStringSubmatchIndex(s, -1) {
		if random(s[m[4]:m[5]]) {
			out = append(out, named{"a secret passed as " + s[m[2]:m[3]], off + m[4], off + m[5]})
		}
	}
	for _, m := range authHeader.FindAllStringSubmatchIndex(s, -1) {
		out = append(out, named{"a secret in an Authorization header", off + m[2], off + m[3]})
	}
	for _, m := range wandbLogin.FindAllStringSubmatchIndex(s, -1) {
		out = append(out, named{"a W&B API key given to wandb login", off + m[2], off + m[3]})
	}
	for _, m := range key.FindAllStringSubmatchIndex(s, -1) {
		name := ""
		if m[2] >= 0 {
			name = s[m[2]:m[3]]
		} else {
			name = s[m[4]:m[5]]
		}
		if random(s[m[6]:m[7]]) {
			out = append(out, named{"a secret under the key " + name, off + m[6], off + m[7]})
		}
	}
	return out
}

// Kinds names the kinds of token in b: by format, then named secrets
// whose value no format names.
func Kinds(b []byte) []string {
	var found []string
	s := string(b)
	for _, t := range tokens {
		if t.mayBeIn(s) && t.re.MatchString(s) {
			found = append(found, t.name)
		}
	}
	for _, n := range namedSecrets(s) {
		if !known(s[n.start:n.end]) && !slices.Contains(found, n.kind) {
			found = append(found, n.kind)
		}
	}
	return found
}

func known(v string) bool {
	for _, t := range tokens {
		if t.mayBeIn(v) && t.re.MatchString(v) {
			return true
		}
	}
	return false
}

// urlPassword is the password in a URL's user information
// (https://user:PASSWORD@host), as a git remote or a proxy setting prints.
var urlPassword = regexp.MustCompile(`\b[a-z][a-z0-9+.-]*://[^/\s@:]*:([^/\s@]+)@`)

// Redact replaces each credential in s with its kind in brackets: a token
// of a known format, the value of a named secret, a URL's password. It
// cannot know a secret that looks like none of these.
func Redact(s string) string {
	for _, t := range tokens {
		if t.mayBeIn(s) {
			s = t.re.ReplaceAllLiteralString(s, "["+t.name+"]")
		}
	}
	var b strings.Builder
	last := 0
	for _, n := range namedSecrets(s) {
		b.WriteString(s[last:n.start])
		b.WriteString("[redacted]")
		last = n.end
	}
	b.WriteString(s[last:])
	return replaceGroup(urlPassword, b.String(), 1, "[redacted]")
}

// replaceGroup replaces group g of each match of re in s with with.
func replaceGroup(re *regexp.Regexp, s string, g int, with string) string {
	var b strings.Builder
	last := 0
	for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
		b.WriteString(s[last:m[2*g]])
		b.WriteString(with)
		last = m[2*g+1]
	}
	b.WriteString(s[last:])
	return b.String()
}
