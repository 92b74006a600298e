package state

import (
	"os"

	"golang.org/x/sys/unix"
)

// fsyncCoversMmap: on Linux a shared file mapping is the page cache, so an
// fsync of the file writes back what the mapping changed (msync(MS_SYNC) is
// the same call on a range).
const fsyncCoversMmap = true

func fdatasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}
