// Package tokens recognises credentials in text: audit names the kinds it
// finds in a history or a command line, and run takes them out of the
// command's last lines before they go to a chat channel.
package tokens

import (
	"regexp"
	"slices"
	"strings"
)

// token is a credential format: what to call it, and how it looks.
type token struct {
	name string
	re   *regexp.Regexp
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
//     the prefix so that names such as hf_hub_download do not match.
var tokens = []token{
	{name: "an AWS access key id", re: regexp.MustCompile(`\b(AKIA|ASIA)[A-Z0-9]{16}\b`)},
	{name: "a GitHub token", re: regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9_]{36,}|github_pat_[A-Za-z0-9_]{22,})`)},
	{name: "a Hugging Face token", re: regexp.MustCompile(`\bhf_[A-Za-z0-9]{30,}`)},
}

// assignment is NAME=value where NAME says it holds a secret
// (..._API_KEY, ..._TOKEN, ..._SECRET, ..._SECRET_KEY, ..._ACCESS_KEY,
// ..._PASSWORD) and value is a literal of 16 or more characters, not a
// reference ($VAR, $(cmd)): `export WANDB_API_KEY=...` typed in a shell,
// `env OPENAI_API_KEY=... python serve.py` in a process list. It names the
// keys whose format nothing tells apart (W&B's, OpenAI's, DashScope's).
var assignment = regexp.MustCompile(`\b([A-Z][A-Z0-9_]*(?:API_KEY|APIKEY|TOKEN|SECRET|SECRET_KEY|ACCESS_KEY|PASSWORD))=["']?([^\s"'$]{16,})`)

// Kinds names the kinds of token in b: by format, then secrets assigned to
// a variable whose value no format names.
func Kinds(b []byte) []string {
	var found []string
	for _, t := range tokens {
		if t.re.Match(b) {
			found = append(found, t.name)
		}
	}
	for _, m := range assignment.FindAllSubmatch(b, -1) {
		kind := "a secret assigned to " + string(m[1])
		if !known(m[2]) && !slices.Contains(found, kind) {
			found = append(found, kind)
		}
	}
	return found
}

func known(v []byte) bool {
	for _, t := range tokens {
		if t.re.Match(v) {
			return true
		}
	}
	return false
}

// urlPassword is the password in a URL's user information
// (https://user:PASSWORD@host), as a git remote or a proxy setting prints.
var urlPassword = regexp.MustCompile(`\b[a-z][a-z0-9+.-]*://[^/\s@:]*:([^/\s@]+)@`)

// Redact replaces each credential in s with its kind in brackets: a token
// of a known format, the value of a secret assigned to a variable, a
// URL's password. It cannot know a secret that looks like none of these.
func Redact(s string) string {
	for _, t := range tokens {
		s = t.re.ReplaceAllLiteralString(s, "["+t.name+"]")
	}
	s = replaceGroup(assignment, s, 2, "[redacted]")
	return replaceGroup(urlPassword, s, 1, "[redacted]")
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
