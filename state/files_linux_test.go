package state

import (
	"errors"
	"strconv"
	"syscall"
	"testing"
)

// TestRotateOutOfFiles: a rotation of the memtable that comes while the
// run's steps hold nearly every file descriptor is refused with EMFILE
// before Badger is closed, instead of Badger ending the process halfway
// through reopening; the store stays whole and takes the same commit once
// descriptors are free again.
func TestRotateOutOfFiles(t *testing.T) {
	s := newRun(t, t.TempDir(), "r")
	if err := s.Commit(testChange(1)); err != nil {
		t.Fatal(err)
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	// Hold every descriptor under a low limit but one, as a run at its
	// limit does.
	lim := old
	lim.Cur = 256
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("cannot lower the open-file limit: %v", err)
	}
	var held []int
	release := func() {
		for _, fd := range held {
			syscall.Close(fd)
		}
		held = nil
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)
	}
	defer release()
	for {
		fd, err := syscall.Dup(0)
		if err != nil {
			break
		}
		held = append(held, fd)
	}
	syscall.Close(held[len(held)-1])
	held = held[:len(held)-1]

	s.memUsed = s.sizes.rotateAt()
	err := s.Commit(testChange(2))
	if !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("commit that rotates with one descriptor free: %v, want EMFILE", err)
	}
	release()
	if err := s.Commit(testChange(2)); err != nil {
		t.Fatalf("the same commit once descriptors are free: %v", err)
	}
	if snap, err := s.Load(); err != nil || snap.LastSeq != 2 {
		t.Fatalf("after: %v, last seq %v; want 2", err, snap)
	}
}

func testChange(seq int64) Change {
	return Change{Events: []Event{{Seq: seq, JSON: []byte(`{"seq":` + strconv.FormatInt(seq, 10) + `}`)}}}
}
