//go:build !linux

package probe

import "os"

// oDirect is 0 where O_DIRECT does not exist; the disk test then writes,
// fsyncs and reads through the page cache, and reports that method.
const oDirect = 0

// dropCache has no portable form outside Linux.
func dropCache(*os.File) {}
