package state

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// preallocate allocates the first size bytes of a file that Badger has just
// created sparse and written only its header to, so that writes through its
// memory mapping there can never fault for want of space.
func preallocate(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	err = unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return zeroFill(f, size)
	}
	return err
}

// releaseTail gives back the space of a file from off on without changing
// its size or content (the range reads as zeros before and after). It
// reports whether it could.
func releaseTail(path string, off, end int64) bool {
	if off >= end {
		return true
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	return unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, end-off) == nil
}
