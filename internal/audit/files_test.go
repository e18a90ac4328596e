package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Tokens are told by their formats; names that merely look alike, and git
// remotes with a user name alone, are not.
func TestTokenFormats(t *testing.T) {
	dir := t.TempDir()
	for text, want := range map[string]string{
		"aws s3 ls # AKIAIOSFODNN7EXAMPLE":                                           "an AWS access key id",
		"export AWS_ACCESS_KEY_ID=ASIAY34FZKBOKMUTVV7A":                              "an AWS access key id",
		"git clone https://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@github.com/x/y":  "a GitHub token",
		"huggingface-cli login --token hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789":      "a Hugging Face token",
		"from huggingface_hub import hf_hub_download":                                "",
		"echo AKIA_IS_A_PREFIX":                                                      "",
		"ghp_short":                                                                  "",
		"export WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567":              "a secret assigned to WANDB_API_KEY",
		"AWS_SECRET_ACCESS_KEY='wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' aws s3 ls": "a secret assigned to AWS_SECRET_ACCESS_KEY",
		"export OPENAI_API_KEY=$(cat ~/.openai)":                                     "",
		"export HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789":                    "a Hugging Face token",
		"export MY_TOKEN=short":                                                      "",
		"CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 torchrun train.py":                     "",
	} {
		p := filepath.Join(dir, "h")
		if err := os.WriteFile(p, []byte(text+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(tokensIn(p, 1<<20), ", "); got != want {
			t.Errorf("%q: %q, want %q", text, got, want)
		}
	}
	// A long history is read from its end, where the newest lines are.
	p := filepath.Join(dir, "long")
	if err := os.WriteFile(p, []byte(strings.Repeat("ls\n", 1<<20)+"export HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := tokensIn(p, 1<<20); len(got) != 1 {
		t.Errorf("a token at the end of a 3 MiB history: %v", got)
	}
	for url, want := range map[string]bool{
		"https://me:s3cret@github.com/me/x.git":                                true,
		"https://oauth2:glpat-xxxxxxxx@gitlab.com/me/x.git":                    true,
		"https://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@github.com/me/x.git": true,
		"https://me@github.com/me/x.git":                                       false,
		"git@github.com:me/x.git":                                              false,
		"ssh://git@github.com/me/x.git":                                        false,
	} {
		if got := remoteWithPassword.MatchString("[remote \"origin\"]\n\turl = " + url + "\n"); got != want {
			t.Errorf("%s: %v, want %v", url, got, want)
		}
	}
}

// A token on a command line: a warning when nobody else was seen, a failure
// when others use the machine, and no concern where /proc hides processes.
func TestTokenArgsJudged(t *testing.T) {
	args := []TokenArg{{PID: 9, Name: "python", Kind: "a GitHub token"}}
	for _, tc := range []struct {
		name string
		f    Facts
		want string
	}{
		{"alone", Facts{TokenArgs: args}, "warn"},
		{"others here", Facts{TokenArgs: args, Processes: []Proc{{PID: 5, UID: 1001, User: "mallory", Name: "sh"}}}, "fail"},
		{"hidepid", Facts{TokenArgs: args, ProcHidden: true, Processes: []Proc{{PID: 5, UID: 1001, User: "mallory", Name: "sh"}}}, "pass"},
		{"none", Facts{}, "pass"},
	} {
		if c := checkByID(t, Judge(tc.f), "secrets.cmdline"); c.Status != tc.want {
			t.Errorf("%s: %s (%s)", tc.name, c.Status, c.Evidence.String())
		}
	}
}
