package state

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a log that Badger's goroutines and the store may share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestMemtableLogStaysReserved: however much is committed, the memtable's
// write-ahead log that commits write to is allocated for its whole
// reservation — the store rotates memtables itself instead of letting
// Badger start a sparse log, which a full disk turns into a SIGBUS — level 0
// is compacted though Badger runs no compactors, and nothing is lost across
// the rotations.
func TestMemtableLogStaysReserved(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("no reservation on " + runtime.GOOS)
	}
	dir := t.TempDir()
	var log lockedBuffer
	meta := Meta{RunID: "r", Plan: "p", StartedAt: time.Now()}
	s, err := Create(dir, meta, []byte("name: p\n"), Options{Logger: &log})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dbDir := filepath.Join(RunDir(dir, "r"), dirDB)
	pad := strings.Repeat("x", 4000)
	const commits = 4500 // about 37 MiB as counted: seven rotations, one compaction
	for seq := int64(1); seq <= commits; seq++ {
		c := Change{
			Steps:  map[string][]byte{fmt.Sprint("s", seq%50): fmt.Appendf(nil, `{"seq":%d,"pad":%q}`, seq, pad)},
			Events: []Event{{Seq: seq, JSON: fmt.Appendf(nil, `{"seq":%d,"pad":%q}`, seq, pad)}},
		}
		if err := s.Commit(c); err != nil {
			t.Fatalf("commit %d: %v", seq, err)
		}
		names, _ := memFiles(dbDir)
		if len(names) == 0 {
			t.Fatalf("commit %d: no memtable log in %s", seq, dbDir)
		}
		fi, err := os.Stat(names[len(names)-1])
		if err != nil {
			t.Fatal(err)
		}
		if got, want := allocated(fi), s.sizes.walReserve(); got < want {
			t.Fatalf("after commit %d, %s has %d bytes allocated, want its whole reservation of %d: Badger started a log of its own",
				seq, filepath.Base(names[len(names)-1]), got, want)
		}
	}
	if n := strings.Count(log.String(), "rotating the memtable"); n < maxLevel0+1 {
		t.Fatalf("%d rotations, want at least %d (log:\n%s)", n, maxLevel0+1, log.String())
	}
	l0 := 0
	for _, ti := range s.db.Tables() {
		if ti.Level == 0 {
			l0++
		}
	}
	if l0 > maxLevel0 {
		t.Fatalf("%d tables on level 0 after the rotations: nothing compacts them", l0)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(dir, "r", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	snap, err := s2.Load()
	if err != nil {
		t.Fatal(err)
	}
	if snap.LastSeq != commits || len(snap.Steps) != 50 {
		t.Fatalf("after reopening: last seq %d, %d steps; want %d, 50", snap.LastSeq, len(snap.Steps), commits)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := ReadEvents(dir, "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	checkContiguous(t, evs, 1)
	if len(evs) != commits {
		t.Fatalf("%d events, want %d", len(evs), commits)
	}
}

func TestSpaceErrorMessage(t *testing.T) {
	cases := []struct {
		err  *SpaceError
		want string
	}{
		{&SpaceError{Dir: "/s", Doing: "opening run r", Need: 9 << 20, Avail: 20 << 10},
			"state dir /s: no space left on device (opening run r needs 9.0 MiB free, 20 KiB are)"},
		{&SpaceError{Dir: "/s", Doing: "less than 64 KiB left", Avail: 10},
			"state dir /s: no space left on device (less than 64 KiB left)"},
		{&SpaceError{Dir: "/s"}, "state dir /s: no space left on device"},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
		if !IsNoSpace(fmt.Errorf("wrapped: %w", c.err)) {
			t.Errorf("IsNoSpace(%q) = false", c.want)
		}
	}
	if IsNoSpace(os.ErrPermission) || IsNoSpace(nil) {
		t.Error("IsNoSpace true for an unrelated error")
	}
	// Badger flattens the OS error into its text.
	if !IsNoSpace(fmt.Errorf("while opening memtable err: write x: no space left on device")) {
		t.Error("IsNoSpace false for Badger's flattened error")
	}
}

// childAbandon commits five events, says "ready", and when its stdin closes
// closes the store after a (simulated) failed Badger write.
func childAbandon() int {
	s, err := Open(os.Getenv(childDirEnv), os.Getenv(childRunEnv), Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	snap, err := s.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for seq := snap.LastSeq + 1; seq <= snap.LastSeq+5; seq++ {
		if err := s.Commit(Change{Events: []Event{ev(seq, "child")}}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	s.broken = errors.New("simulated failed write")
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestCloseAfterFailedWrite: after a Badger write failed, Close does not ask
// Badger to write its memtable out (it may be unable to, or fault) but
// leaves the store as a crash would; readers and the next owner find every
// committed event.
func TestCloseAfterFailedWrite(t *testing.T) {
	dir := t.TempDir()
	s := newRun(t, dir, "r")
	for seq := int64(1); seq <= 3; seq++ {
		if err := s.Commit(Change{Events: []Event{ev(seq, "parent")}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	cmd, stdin := startChild(t, "abandon", dir, "r")
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	dbDir := filepath.Join(RunDir(dir, "r"), dirDB)
	if names, _ := memFiles(dbDir); len(names) == 0 {
		t.Fatal("the memtable was written out after a failed write; want the store left as a crash leaves it")
	}
	evs, err := ReadEvents(dir, "r", 0)
	if err != nil || len(evs) != 8 {
		t.Fatalf("readers: %d events, %v; want 8", len(evs), err)
	}
	s2, err := Open(dir, "r", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	snap, err := s2.Load()
	if err != nil {
		t.Fatal(err)
	}
	if snap.LastSeq != 8 {
		t.Fatalf("next owner: last seq %d, want 8", snap.LastSeq)
	}
}
