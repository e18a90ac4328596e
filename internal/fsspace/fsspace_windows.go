package fsspace

import "golang.org/x/sys/windows"

// Of is the space this user may still write on the volume of dir
// (GetDiskFreeSpaceEx's bytes available to the caller, which a quota
// lowers) and the volume's size, in bytes.
func Of(dir string) (free, size uint64, err error) {
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
