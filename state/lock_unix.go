//go:build unix

package state

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes a non-blocking flock on f: exclusive for the owner, shared for a
// reader that wants the owner kept out while it reads. flock belongs to the open
// file description, so the OS drops it when the process dies, however it dies —
// which is what makes "can I take the lock?" a liveness test that survives kill -9.
// It reports false, nil when someone else holds a conflicting lock.
func tryLock(f *os.File, exclusive bool) (bool, error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		default:
			return false, err
		}
	}
}

// unlock releases a lock taken by tryLock. Closing the file would release it too;
// doing it explicitly keeps the release from depending on when the fd is closed.
func unlock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

// pidAlive reports whether a process with this pid exists. Signal 0 checks
// existence and permission without sending anything; EPERM still means it exists.
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
