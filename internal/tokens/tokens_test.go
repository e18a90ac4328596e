package tokens

import (
	"strings"
	"testing"
)

// The example credentials are the providers' own documented examples or
// made of repeated letters: none is real.
func TestKinds(t *testing.T) {
	text := []byte("aws configure set aws_access_key_id AKIAIOSFODNN7EXAMPLE\n" +
		"git clone https://ghp_" + strings.Repeat("a", 36) + "@github.com/x/y\n" +
		"export WANDB_API_KEY=" + strings.Repeat("0123456789", 4) + "\n" +
		"export HF_TOKEN=hf_" + strings.Repeat("B", 34) + "\n" +
		"from huggingface_hub import hf_hub_download\n")
	got := strings.Join(Kinds(text), "; ")
	want := "an AWS access key id; a GitHub token; a Hugging Face token; a secret assigned to WANDB_API_KEY"
	if got != want {
		t.Errorf("Kinds = %q, want %q", got, want)
	}
	if k := Kinds([]byte("export WANDB_API_KEY=$KEY; TOKEN_LIMIT=4096\n")); len(k) != 0 {
		t.Errorf("a reference and a short value: %q", k)
	}
}

// Redact takes each credential out and says what was there; the rest of
// the line, which tells what failed, stays.
func TestRedact(t *testing.T) {
	hf := "hf_" + strings.Repeat("B", 34)
	for _, c := range []struct{ in, want string }{
		{"requests.exceptions.HTTPError: 401 for url https://huggingface.co/api/models (token " + hf + ")",
			"requests.exceptions.HTTPError: 401 for url https://huggingface.co/api/models (token [a Hugging Face token])"},
		{"botocore: AKIAIOSFODNN7EXAMPLE is not valid", "botocore: [an AWS access key id] is not valid"},
		{`env: WANDB_API_KEY="` + strings.Repeat("f", 40) + `" python train.py`, `env: WANDB_API_KEY="[redacted]" python train.py`},
		{"fatal: unable to access 'https://alice:s3cr3t-pass@git.example.com/x.git/'", "fatal: unable to access 'https://alice:[redacted]@git.example.com/x.git/'"},
		{"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB", "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"},
		{"see https://pytorch.org/docs/stable/notes/cuda.html#memory-management", "see https://pytorch.org/docs/stable/notes/cuda.html#memory-management"},
	} {
		if got := Redact(c.in); got != c.want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}
