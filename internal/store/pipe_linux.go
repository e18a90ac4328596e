package store

import (
	"os"
	"syscall"
)

// startWriteback asks the kernel to start writing n dirty bytes of f from
// off (sync_file_range with SYNC_FILE_RANGE_WRITE: it does not wait).
func startWriteback(f *os.File, off, n int64) {
	const syncFileRangeWrite = 2
	syscall.SyncFileRange(int(f.Fd()), off, n, syncFileRangeWrite)
}
