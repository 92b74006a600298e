package state

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// spareFiles fails with EMFILE when fewer than n file descriptors are free
// under the process's open-file limit. Reopening Badger (rotate) must not
// run out of them halfway: Badger then ends the process (y.Check) instead
// of returning an error. The steps of a run at its limit hold the rest.
func spareFiles(n int) error {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) != nil || l.Cur > 1<<20 {
		return nil
	}
	f, err := os.Open("/proc/self/fd")
	if err != nil {
		return nil // a failure here is no proof of want
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return nil
	}
	if free := int64(l.Cur) - int64(len(names)); free < int64(n) {
		return fmt.Errorf("%d file descriptors free, %d needed: %w", max(free, 0), n, syscall.EMFILE)
	}
	return nil
}

// writableDir asks the kernel whether dir can be written (faccessat with
// the effective ids): EROFS for a read-only mount, ENOENT for a directory
// gone, EACCES for one this process may not write. ok is always true here.
func writableDir(dir string) (ok bool, err error) {
	if err := unix.Faccessat(unix.AT_FDCWD, dir, unix.W_OK, unix.AT_EACCESS); err != nil {
		return true, &os.PathError{Op: "access", Path: dir, Err: err}
	}
	return true, nil
}
