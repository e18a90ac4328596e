package probe

import (
	"os"
	"syscall"
)

// oDirect bypasses the page cache, so the disk test measures the disk.
const oDirect = syscall.O_DIRECT

// dropCache asks the kernel to forget the file's cached pages
// (posix_fadvise POSIX_FADV_DONTNEED = 4), so reads come from the disk.
func dropCache(f *os.File) {
	const fadviseDontNeed = 4
	syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadviseDontNeed, 0, 0)
}
