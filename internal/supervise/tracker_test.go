//go:build unix

package supervise

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// layout writes files (content "x", or the given content) under dir as a
// framework would have left them a minute ago: in the order of their
// names, a second apart, each directory as new as its newest file, so that
// global_step200 is newer than global_step100 whatever the map's order.
func layout(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	names := slices.Sorted(maps.Keys(files))
	for _, p := range names {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		content := files[p]
		if content == "" {
			content = "x"
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Now().Add(-time.Minute)
	for _, p := range names {
		at = at.Add(time.Second)
		for q := p; q != "." && q != "/"; q = filepath.Dir(q) {
			os.Chtimes(filepath.Join(dir, q), at, at)
		}
	}
}

// detectorIn is a detector of a new directory laid out with files.
func detectorIn(t *testing.T, files map[string]string) *Detector {
	dir := t.TempDir()
	layout(t, dir, files)
	return &Detector{Dir: dir, Quiet: 5 * time.Second, OpenForWrite: func(string) bool { return false }}
}

// DeepSpeed's save_dir: global_step<N>/ with each rank's files, and
// "latest", written by rank 0 once every rank has saved, naming the tag.
// A directory is whole once latest names it or a later step, however quiet
// a half-saved one is; "latest" and zero_to_fp32.py are no checkpoints.
func TestDetectorDeepSpeedDir(t *testing.T) {
	d := detectorIn(t, map[string]string{
		"global_step100/mp_rank_00_model_states.pt":                     "",
		"global_step100/zero_pp_rank_0_mp_rank_00_optim_states.pt":      "",
		"global_step200/mp_rank_00_model_states.pt":                     "",
		"global_step200/zero_pp_rank_0_mp_rank_00_optim_states.pt":      "",
		"global_step300/bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt": "", // rank 1 never finished: cut short
		"zero_to_fp32.py": "",
		"latest":          "global_step200\n",
	})
	dir := d.Dir
	got := completeness(t, d)
	if len(got) != 3 || !got["global_step100"] || !got["global_step200"] || got["global_step300"] {
		t.Fatalf("candidates %v: want 100 and 200 whole, 300 not, nothing else", got)
	}
	if c, ok, _ := d.Newest(); !ok || c.Name != "global_step200" || c.Kind != "deepspeed" {
		t.Errorf("newest %+v %v, want global_step200", c, ok)
	}
	// Before the first latest: nothing is whole yet, and says why.
	os.Remove(filepath.Join(dir, "latest"))
	cs, _ := d.Scan()
	for _, c := range cs {
		if c.Complete || !strings.Contains(c.Why, "not named by latest yet") {
			t.Errorf("without latest: %+v", c)
		}
	}
	// A tag of the script's own naming counts once latest names it.
	layout(t, dir, map[string]string{"best/mp_rank_00_model_states.pt": "", "latest": "best"})
	if got := completeness(t, d); !got["best"] || got["global_step100"] {
		t.Errorf("latest naming best: %v", got)
	}
}

// Megatron-LM's save directory: iter_%07d/ (mp_rank_XX/ inside, or
// torch.distributed.checkpoint shards) and latest_checkpointed_iteration.txt,
// written last with the iteration; verl's global_step_<N>/ with the same
// tracker.
func TestDetectorMegatronDir(t *testing.T) {
	d := detectorIn(t, map[string]string{
		"iter_0000100/mp_rank_00/model_optim_rng.pt": "",
		"iter_0000200/.metadata":                     "",
		"iter_0000200/__0_0.distcp":                  "",
		"iter_0000300/.metadata":                     "", // shards done, tracker not yet rewritten
		"iter_0000300/__0_0.distcp":                  "",
		"latest_checkpointed_iteration.txt":          "200",
		"progress.txt":                               "",
	})
	got := completeness(t, d)
	if len(got) != 3 || !got["iter_0000100"] || !got["iter_0000200"] || got["iter_0000300"] {
		t.Fatalf("candidates %v: want 100 and 200 whole, 300 not", got)
	}
	d = detectorIn(t, map[string]string{
		"global_step_5/actor/model_world_size_2_rank_0.pt":  "",
		"global_step_5/data.pt":                             "",
		"global_step_10/actor/model_world_size_2_rank_0.pt": "",
		"latest_checkpointed_iteration.txt":                 "5",
	})
	if got := completeness(t, d); len(got) != 2 || !got["global_step_5"] || got["global_step_10"] {
		t.Errorf("verl: %v, want global_step_5 whole, global_step_10 not", got)
	}
}

// On a new machine the pulled checkpoint is found by the framework only
// with its tracker file: RestoreTracker writes it, unless one names a
// checkpoint that is there, and leaves other layouts alone.
func TestRestoreTracker(t *testing.T) {
	for _, tc := range []struct {
		name, ckpt, inside, existing string // existing: a tracker already there, "file=content"
		wantFile, want               string
	}{
		{"deepspeed", "global_step200", "mp_rank_00_model_states.pt", "", "latest", "global_step200"},
		{"deepspeed stale latest", "global_step200", "mp_rank_00_model_states.pt", "latest=global_step900", "latest", "global_step200"},
		{"deepspeed latest names an older one here", "global_step200", "mp_rank_00_model_states.pt", "latest=global_step100", "latest", "global_step200"},
		{"deepspeed latest names a newer one here", "global_step200", "mp_rank_00_model_states.pt", "latest=global_step300", "latest", "global_step300"},
		{"deepspeed latest names a tag of its own", "global_step200", "mp_rank_00_model_states.pt", "latest=best", "latest", "best"},
		{"megatron tracker names an older one here", "iter_0000200", ".metadata", "latest_checkpointed_iteration.txt=100", "latest_checkpointed_iteration.txt", "200"},
		{"megatron tracker names a newer one here", "iter_0000200", ".metadata", "latest_checkpointed_iteration.txt=300", "latest_checkpointed_iteration.txt", "300"},
		{"megatron", "iter_0000200", "mp_rank_00/model_optim_rng.pt", "", "latest_checkpointed_iteration.txt", "200"},
		{"megatron dcp", "iter_0000200", ".metadata", "", "latest_checkpointed_iteration.txt", "200"},
		{"verl", "global_step_7", "actor/model_world_size_1_rank_0.pt", "", "latest_checkpointed_iteration.txt", "7"},
		{"plain", "step-200.pt.d", "weights.pt", "", "", ""},
		{"hf", "checkpoint-200", "trainer_state.json", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			layout(t, dir, map[string]string{tc.ckpt + "/" + tc.inside: ""})
			if tc.existing != "" {
				f, c, _ := strings.Cut(tc.existing, "=")
				layout(t, dir, map[string]string{f: c})
				switch c {
				case "global_step100", "global_step300", "best":
					layout(t, dir, map[string]string{c + "/mp_rank_00_model_states.pt": ""})
				case "100", "300":
					layout(t, dir, map[string]string{"iter_0000" + c + "/.metadata": ""})
				}
			}
			wrote, err := RestoreTracker(filepath.Join(dir, tc.ckpt))
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantFile == "" {
				if wrote != "" {
					t.Errorf("wrote %q for a layout without a tracker", wrote)
				}
				return
			}
			b, err := os.ReadFile(filepath.Join(dir, tc.wantFile))
			if err != nil || string(b) != tc.want {
				t.Errorf("%s = %q %v, want %q (wrote %q)", tc.wantFile, b, err, tc.want, wrote)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".gpurent-tracker*")); len(left) > 0 {
				t.Errorf("left %v", left)
			}
		})
	}
}

// A DeepSpeed run resumed on a new machine: the checkpoint is pulled, the
// tracker written beside it, and the command started from it; and the
// tracker does not turn into a checkpoint of its own.
func TestResumeDeepSpeedOnNewMachine(t *testing.T) {
	h := newHarness(t)
	first := t.TempDir()
	cfg := h.config(first, h.b)
	cfg.Glob = ""
	save := `mkdir -p %[1]q/global_step%[2]d && echo w > %[1]q/global_step%[2]d/mp_rank_00_model_states.pt && printf global_step%[2]d > %[1]q/latest`
	cfg.Cmd = []string{"sh", "-c", fmt.Sprintf(save+" && "+save, first, 10) + "; " + fmt.Sprintf(save, first, 20)}
	sup, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ex, err := sup.Run(context.Background(), nil); err != nil || !regexp.MustCompile(`^the command finished; newest complete checkpoint uploaded \(global_step20, as \d{8}T\d{6}\.\d{3}Z-[0-9a-f]{8}\)$`).MatchString(ex.Reason.String()) {
		t.Fatalf("%+v %v", ex, err)
	}
	ms, _ := h.store(h.b).List(context.Background(), "trial")
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	if len(names) == 0 || names[len(names)-1] != "global_step20" || strings.Contains(strings.Join(names, " "), "latest") {
		t.Fatalf("store has %q: want global_step20 newest and no latest", names)
	}
	second := t.TempDir()
	cfg = h.config(second, h.b)
	cfg.Glob = ""
	out := filepath.Join(t.TempDir(), "seen")
	cfg.Cmd = []string{"sh", "-c", fmt.Sprintf(`cat %q/latest > %q; echo " $GPURENT_RESUME_FROM" >> %q`, second, out, out)}
	logged := captureLog(&cfg)
	sup, _ = New(cfg)
	if ex, err := sup.Run(context.Background(), nil); err != nil || ex.Code != 0 {
		t.Fatalf("%+v %v", ex, err)
	}
	b, _ := os.ReadFile(out)
	if want := "global_step20 " + filepath.Join(second, "global_step20") + "\n"; string(b) != want {
		t.Errorf("the command saw %q, want %q\n%s", b, want, logged())
	}
	if !strings.Contains(logged(), "wrote "+filepath.Join(second, "latest")+" (global_step20)") {
		t.Errorf("log:\n%s", logged())
	}
}
