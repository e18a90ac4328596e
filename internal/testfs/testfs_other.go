//go:build !linux

package testfs

import (
	"errors"
	"runtime"
)

func mount(dir, size string) error { return errors.New("no tmpfs mounts on " + runtime.GOOS) }

func unmount(dir string) {}
