package state

import "os"

// preallocate allocates the first size bytes of a file that Badger has just
// created sparse and written only its header to, so that writes through its
// memory mapping there can never fault for want of space.
func preallocate(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return zeroFill(f, size)
}

// releaseTail cannot give space back here (no hole punching through the
// standard interfaces): closing a store on a full disk leaves it to its next
// owner instead.
func releaseTail(path string, off, end int64) bool { return off >= end }
