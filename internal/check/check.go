// Package check is the judgement bench and audit both report: checks, each
// with a status and its evidence, and the verdict they add up to. It is
// kept apart so that a command that only reports checks needs none of the
// code that makes them.
package check

import "github.com/gpurent/gpurent/internal/i18n"

// Statuses of a check, from best to worst; Skip is a check that could not
// be made (missing facts), which is never a pass.
const (
	Pass = "pass"
	Warn = "warn"
	Fail = "fail"
	Skip = "skip"
)

// Check is one judgement with its evidence.
type Check struct {
	ID       string    `json:"id"`
	Status   string    `json:"status"`
	Measured any       `json:"measured"`
	Expected any       `json:"expected"`
	Unit     string    `json:"unit"`
	Evidence i18n.Text `json:"evidence"`
	Advice   i18n.Text `json:"advice"`
}

// Rank orders statuses for the verdict: fail 2, warn 1, pass and skip 0.
func Rank(status string) int {
	switch status {
	case Warn:
		return 1
	case Fail:
		return 2
	}
	return 0
}

// Verdict is the worst status among checks: fail over warn over pass;
// skips do not count.
func Verdict(checks []Check) string {
	v := Pass
	for _, c := range checks {
		if Rank(c.Status) > Rank(v) {
			v = c.Status
		}
	}
	return v
}
