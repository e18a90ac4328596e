package probe

import "golang.org/x/sys/windows"

// fsSpace is what this user may still write on the volume of dir, and its
// size, in bytes (GetDiskFreeSpaceEx).
func fsSpace(dir string) (free, size uint64, err error) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return 0, 0, err
	}
	var all uint64
	if err := windows.GetDiskFreeSpaceEx(p, &free, &size, &all); err != nil {
		return 0, 0, err
	}
	return free, size, nil
}
