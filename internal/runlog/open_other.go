//go:build !unix

package runlog

// Windows has neither flag: its symlinks need privilege to make, and its
// file system holds no FIFOs.
const (
	noFollow = 0
	nonBlock = 0
)
