package store

import "github.com/gpurent/gpurent/internal/fsspace"

// free is the space free on the file system of dir: Options.Free, or
// freeSpace.
func (s *Store) free(dir string) (uint64, bool) {
	if s.opt.Free != nil {
		return s.opt.Free(dir)
	}
	return freeSpace(dir)
}

// freeSpace is the space an unprivileged user may still write on the file
// system of dir, or false when that cannot be read.
func freeSpace(dir string) (uint64, bool) {
	free, size, err := fsspace.Of(dir)
	if err != nil || size == 0 {
		return 0, false
	}
	return free, true
}
