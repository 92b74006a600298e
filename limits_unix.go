//go:build unix

package main

import (
	"fmt"
	"syscall"
)

// minOpenFiles is the least open-file limit a run or resume starts under:
// faber itself holds about 20 files (its store, the event log, the lock,
// the control socket) and opening the store needs about 10 more at once;
// below that, Badger would fail in ways that end the process, not the run.
const minOpenFiles = 40

// openFileLimit is faber's open-file limit (RLIMIT_NOFILE, soft), 0 when
// unknown. Go raises the soft limit to the hard one at start, so this is
// what `ulimit -n` set (both limits).
func openFileLimit() uint64 {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) != nil {
		return 0
	}
	return l.Cur
}

// checkOpenFiles refuses to open a run for writing under an open-file
// limit too low for faber's own files (exit 4, before anything is
// written): README, "Scarce resources".
func checkOpenFiles() error {
	if n := openFileLimit(); n > 0 && n < minOpenFiles {
		return withCode(exitState, fmt.Errorf("the open-file limit is %d (ulimit -n); faber needs at least %d to keep a run's record: raise it", n, minOpenFiles))
	}
	return nil
}
