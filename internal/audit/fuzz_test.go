package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/check"
	"github.com/gpurent/gpurent/internal/mutate"
	"github.com/gpurent/gpurent/internal/report"
)

// FuzzJudgeFields judges the planted machine's facts changed field by field
// (mutate.Fields): an empty user name, a login with no host, a key with no
// fingerprint, a listener on port 0, a volume with no type must give
// checks with evidence, and advice where they warn or fail, never a panic.
func FuzzJudgeFields(f *testing.F) {
	facts := Gather(context.Background(), newFake(f).env())
	seed, err := json.Marshal(facts)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint16(0), []byte{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	f.Add(uint16(10), []byte{2, 3, 0, 2, 255, 3, 1, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 3})
	f.Add(uint16(60), []byte{1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3})
	f.Fuzz(func(t *testing.T, skip uint16, stream []byte) {
		var facts Facts
		if err := json.Unmarshal(seed, &facts); err != nil {
			t.Fatal(err)
		}
		mutate.Fields(&facts, int(skip), stream)
		r := Judge(facts)
		if r.Verdict != check.Verdict(r.Checks) {
			t.Errorf("verdict %s, its checks say %s", r.Verdict, check.Verdict(r.Checks))
		}
		for _, c := range r.Checks {
			if (c.Status == check.Warn || c.Status == check.Fail) && c.Advice.String() == "" {
				t.Errorf("%s is %s without advice", c.ID, c.Status)
			}
			if c.Evidence.String() == "" {
				t.Errorf("%s has no evidence", c.ID)
			}
			if s := fmt.Sprint(c.Measured, " ", c.Evidence.String()); strings.Contains(s, "NaN") || strings.Contains(s, "+Inf") || strings.Contains(s, "-Inf") {
				t.Errorf("%s: %s", c.ID, s)
			}
		}
		if err := report.WriteJSON(io.Discard, r); err != nil {
			t.Errorf("the report cannot be written as JSON: %v", err)
		}
	})
}
