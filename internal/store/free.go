package store

// free is the space free on the file system of dir: Options.Free, or
// freeSpace.
func (s *Store) free(dir string) (uint64, bool) {
	if s.opt.Free != nil {
		return s.opt.Free(dir)
	}
	return freeSpace(dir)
}
