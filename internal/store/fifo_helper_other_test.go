//go:build !unix

package store

// canFIFO: no FIFOs here.
const canFIFO = false

// pusherMain is TestKill9WithSharedObjects's pusher, which needs SIGKILL:
// there is none to run here.
func pusherMain() { panic("no pusher on this system") }
