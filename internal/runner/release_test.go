//go:build unix

package runner

import (
	"testing"

	"github.com/gpurent/gpurent/internal/release"
	"github.com/gpurent/gpurent/internal/supervise"
)

// TestReleaseDecision: only a success releases (an idle stop is one),
// unless failures are asked for; a destroy never goes while the store
// lacks the newest checkpoint, and its refusal fails the run.
func TestReleaseDecision(t *testing.T) {
	for _, tc := range []struct {
		name               string
		whenDone           string
		onFailure          bool
		idle               bool
		ex                 supervise.Exit
		wantOK, wantRefuse bool
		wantAction         release.Action
	}{
		{"finished, stored", "stop", false, false, supervise.Exit{Code: 0, Stored: true}, true, false, release.Stop},
		{"finished, no checkpoint", "stop", false, false, supervise.Exit{Code: 0}, true, false, release.Stop},
		{"failed", "stop", false, false, supervise.Exit{Code: 1, Stored: true}, false, false, release.Stop},
		{"upload failed", "stop", false, false, supervise.Exit{Code: supervise.ExitNotStored}, false, false, release.Stop},
		{"preempted", "stop", false, false, supervise.Exit{Code: supervise.ExitStopped, Stored: true}, false, false, release.Stop},
		{"failed, on failure", "stop", true, false, supervise.Exit{Code: 1}, true, false, release.Stop},
		{"destroy, stored", "destroy", false, false, supervise.Exit{Code: 0, Stored: true}, true, false, release.Destroy},
		{"destroy, not stored", "destroy", false, false, supervise.Exit{Code: 0}, false, true, release.Destroy},
		{"destroy, upload failed, on failure", "destroy", true, false, supervise.Exit{Code: supervise.ExitNotStored}, false, true, release.Destroy},
		{"idle, stored", "", false, true, supervise.Exit{Code: supervise.ExitStopped, Idle: true, Stored: true}, true, false, release.Stop},
		{"idle, upload failed", "", false, true, supervise.Exit{Code: supervise.ExitNotStored, Idle: true}, false, false, release.Stop},
		{"idle, destroy, stored", "destroy", false, true, supervise.Exit{Code: supervise.ExitStopped, Idle: true, Stored: true}, true, false, release.Destroy},
	} {
		o := &Options{WhenDone: tc.whenDone, WhenDoneOnFailure: tc.onFailure}
		if tc.idle {
			o.IdleStop = 60e9
		}
		a, why, ok, refuse := releaseDecision(o, tc.ex)
		if a != tc.wantAction || ok != tc.wantOK || refuse != tc.wantRefuse || why.IsZero() {
			t.Errorf("%s: %s %v ok=%v refuse=%v", tc.name, a, why, ok, refuse)
		}
	}
}
