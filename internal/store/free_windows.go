package store

import "golang.org/x/sys/windows"

// freeSpace is the space this user may still write on the volume of dir
// (GetDiskFreeSpaceEx's free bytes available to the caller, which a quota
// lowers), or false when the call fails.
func freeSpace(dir string) (uint64, bool) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return 0, false
	}
	var avail, total, free uint64
	if windows.GetDiskFreeSpaceEx(p, &avail, &total, &free) != nil || total == 0 {
		return 0, false
	}
	return avail, true
}
