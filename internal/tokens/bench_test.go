package tokens

import (
	"strings"
	"testing"
)

// history is a shell history as audit reads it (up to 16 MiB from the
// end): training commands, navigation, and every twentieth line one that
// names a key or token without holding a secret (a reference, a keygen).
func history(size int) []byte {
	lines := []string{
		"python train.py --model_name_or_path meta-llama/Llama-3.1-8B --output_dir /root/autodl-tmp/out --per_device_train_batch_size 4 --learning_rate 2e-5",
		"cd /root/autodl-tmp && ls -la && nvidia-smi",
		"torchrun --nproc_per_node 8 train.py --config configs/sft.yaml",
		"tail -f logs/train.log",
		"pip install -U transformers accelerate datasets",
	}
	special := []string{"export HF_TOKEN=$HF_TOKEN", "ssh-keygen -t ed25519 -C me@laptop", "huggingface-cli login --token $(cat ~/.hf)"}
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		if i%20 == 19 {
			b.WriteString(special[i%len(special)])
		} else {
			b.WriteString(lines[i%len(lines)])
		}
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// BenchmarkKinds compares Kinds (literal hints first, named secrets only
// on the lines that hold a name's word) with every expression run over the
// whole text, as Kinds did before the hints, on 1 MiB of history.
func BenchmarkKinds(b *testing.B) {
	text := history(1 << 20)
	b.Run("hinted", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			if k := Kinds(text); len(k) != 0 {
				b.Fatal(k)
			}
		}
	})
	b.Run("every-expression", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			n := 0
			for _, t := range tokens {
				if t.re.Match(text) {
					n++
				}
			}
			for _, re := range []interface{ Match([]byte) bool }{assignment, flag, authHeader, wandbLogin, key} {
				if re.Match(text) {
					n++
				}
			}
			if n != 0 {
				b.Fatal(n)
			}
		}
	})
}
