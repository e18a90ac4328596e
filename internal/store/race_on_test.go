//go:build race

package store

// raceEnabled: the race detector multiplies memory use, so memory limits
// are not judged under it (scripts/test.sh runs those tests without -race).
const raceEnabled = true
