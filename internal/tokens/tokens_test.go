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

// Each format is found by its shape, in the places a secret turns up on a
// rented machine: a shell history, a command line, a printed config. The
// samples are the formats filled with repeated or counting characters.
func TestKindsFormats(t *testing.T) {
	r := strings.Repeat
	for _, c := range []struct{ text, want string }{
		{"export OPENAI_BASE=x; curl -H 'Authorization: Bearer sk-proj-" + r("A1b2", 15) + "T3BlbkFJ" + r("c3D4", 15) + "'", "an OpenAI API key"},
		{"client = OpenAI(api_key='sk-" + r("a", 20) + "T3BlbkFJ" + r("b", 20) + "')", "an OpenAI API key"},
		{"ANTHROPIC=sk-ant-api03-" + r("x_Y-", 23) + "zAA", "an Anthropic API key"},
		{"genai.configure(key=\"AIza" + r("S", 35) + "\")", "a Google API key"},
		{"git remote add origin https://oauth2:glpat-" + r("k", 20) + "@gitlab.com/a/b", "a GitLab token"},
		{"SLACK=xoxb-" + r("1", 12) + "-" + r("2", 13) + "-" + r("Ab", 12), "a Slack token"},
		{"//registry.npmjs.org/:_authToken=npm_" + r("n", 36), "an npm token"},
		{"twine upload -p pypi-AgEIcHlwaS5vcmc" + r("Q", 60) + " dist/*", "a PyPI token"},
		{"wandb_v1_" + r("w", 40), "a W&B API key"},
		{"curl -d @m.json https://hooks.slack.com/services/T0000000/B0000000/" + r("X", 24), "a Slack webhook URL"},
		{"https://discord.com/api/webhooks/123456789012345678/" + r("t", 68), "a Discord webhook URL"},
		{"https://open.feishu.cn/open-apis/bot/v2/hook/01234567-89ab-cdef-0123-456789abcdef", "a Feishu or Lark webhook URL"},
		{"https://oapi.dingtalk.com/robot/send?access_token=" + r("0a", 32), "a DingTalk webhook URL"},
		{"https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=01234567-89ab-cdef-0123-456789abcdef", "a WeCom webhook URL"},
		{"python train.py --wandb_api_key " + r("0f", 20) + " --epochs 3", "a secret passed as --wandb_api_key"},
		{"python serve.py --api-key=" + r("k9", 12), "a secret passed as --api-key"},
		{"mysql -h db --password " + r("pw7", 6), "a secret passed as --password"},
		{"jupyter-lab --allow-root --ServerApp.token=" + r("3fa9", 12) + " --port 8888", "a secret passed as --ServerApp.token"},
		{"wandb login " + r("0123456789", 4), "a W&B API key given to wandb login"},
		{`curl -H "Authorization: Bearer ` + r("eyJ0", 8) + `" https://api.example.com/v1/models`, "a secret in an Authorization header"},
		{`headers={'authorization': 'token ` + r("a1", 12) + `'}`, "a secret in an Authorization header"},
		{"wandb login --relogin local-" + r("abcdef0123", 4), "a W&B API key given to wandb login"},
		{`{'lr': 0.0003, 'wandb_api_key': '` + r("e5", 20) + `', 'epochs': 3}`, "a secret under the key wandb_api_key"},
		{"model: llama\ndb_password: " + r("Zz9", 6) + "\n", "a secret under the key db_password"},
	} {
		if got := strings.Join(Kinds([]byte(c.text)), "; "); got != c.want {
			t.Errorf("Kinds(%q) = %q, want %q", c.text, got, c.want)
		}
		if red := Redact(c.text); Kinds([]byte(red)) != nil {
			t.Errorf("Redact(%q) = %q still holds %q", c.text, red, Kinds([]byte(red)))
		}
	}
}

// What a training run prints and a shell history holds without any
// secret: names that contain "token" or "key", tokenizer special tokens,
// references to variables, paths, placeholders, short values.
func TestKindsNoFalseAlarm(t *testing.T) {
	text := strings.Join([]string{
		"from huggingface_hub import hf_hub_download",
		"python train.py --tokenizer_name meta-llama/Llama-3.1-8B --max-tokens 4096 --hub_token $HF_TOKEN",
		"python train.py --api-key ${OPENAI_API_KEY} --token-file /root/.cache/huggingface/token --secret /run/secrets/db",
		"python eval.py --metric-key validation_loss_total --sort-key epoch_and_step_0001",
		`{"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>", "pad_token": "<|finetune_right_pad_id|>"}`,
		"tokenizer_config: {'model_max_length': 131072, 'additional_special_tokens': ['<|im_start|>']}",
		"api_key: os.environ/OPENAI_API_KEY",
		"openai_api_key: your-openai-api-key",
		"hf_token: ${HF_TOKEN}",
		"max_new_tokens: 1024",
		"TOKENIZERS_PARALLELISM=false python train.py",
		"Epoch 3: 100%|██████████| 1563/1563 [02:11<00:00, 11.9it/s, loss=0.231, tokens_per_second=48213.7]",
		"wandb login",
		`curl -H "Authorization: Bearer $OPENAI_API_KEY" https://api.openai.com/v1/models`,
		"sk-learn is not a package; pip install scikit-learn",
	}, "\n")
	if k := Kinds([]byte(text)); len(k) != 0 {
		t.Errorf("false alarms: %q", k)
	}
	if got := Redact(text); got != text {
		t.Errorf("Redact changed text without a secret:\n%s", got)
	}
}

// Whatever the text, what Redact leaves holds no credential Kinds names.
func FuzzRedact(f *testing.F) {
	f.Add("export WANDB_API_KEY=" + strings.Repeat("0f", 20))
	f.Add("python train.py --hub_token hf_" + strings.Repeat("a", 34) + " --api-key=k9k9k9k9k9k9k9k9k9")
	f.Add(`{"api_key": "sk-proj-` + strings.Repeat("A1", 12) + "T3BlbkFJ" + strings.Repeat("b2", 12) + `"}`)
	f.Add("https://alice:pw@host/x https://hooks.slack.com/services/T0/B0/" + strings.Repeat("X", 24))
	f.Add("wandb login --relogin " + strings.Repeat("0123456789", 4))
	f.Fuzz(func(t *testing.T, s string) {
		r := Redact(s)
		if k := Kinds([]byte(r)); len(k) > 0 {
			t.Fatalf("Redact(%q) = %q still holds %q", s, r, k)
		}
	})
}
