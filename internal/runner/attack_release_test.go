//go:build unix

package runner

import (
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/supervise"
)

// Security review: the ends of a run that are failures (SIGTERM 143, lease
// lost 1, budget or preemption 75 without Idle) never release without
// --when-done-on-failure. With it and destroy, they are refused because
// Exit.Stored is never set on those paths, and the reason given says the
// store lacks the checkpoint even when its upload was committed.
func TestAttackReleaseDecisionFailureEnds(t *testing.T) {
	for _, ex := range []supervise.Exit{{Code: 143}, {Code: 1}, {Code: supervise.ExitStopped}, {Code: 130}, {Code: 137}} {
		for _, wd := range []string{"stop", "destroy"} {
			o := &Options{WhenDone: wd}
			if _, why, ok, _ := releaseDecision(o, ex); ok {
				t.Errorf("%s after exit %d released: %v", wd, ex.Code, why)
			}
			o.WhenDoneOnFailure = true
			_, why, ok, refuse := releaseDecision(o, ex)
			t.Logf("on-failure %s, exit %d: ok=%v refuse=%v: %v", wd, ex.Code, ok, refuse, why)
			if wd == "destroy" && ok {
				t.Errorf("destroy without Stored")
			}
		}
	}
	// An idle stop whose code is 75 but Idle false (budget) is not "idle".
	if _, _, ok, _ := releaseDecision(&Options{IdleStop: 60e9}, supervise.Exit{Code: supervise.ExitStopped}); ok {
		t.Error("budget stop taken for idle")
	}
	_, why, _, _ := releaseDecision(&Options{WhenDone: "destroy", WhenDoneOnFailure: true}, supervise.Exit{Code: supervise.ExitStopped, Stored: false})
	if strings.Contains(why.String(), "does not hold") {
		t.Logf("note: after a preemption whose checkpoint was committed, the reason still says %q (Stored is only set on finish/idle)", why)
	}
}
