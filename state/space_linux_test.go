package state

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mountTmpfs mounts a tmpfs of size (e.g. "16m") on a fresh directory and
// unmounts it at cleanup: a file system that really fills up.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fill writes a file in dir until the file system is full, then gives back
// leave bytes of it; it returns the file's path.
func fill(t *testing.T, dir string, leave int64) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !IsNoSpace(err) {
				t.Fatal(err)
			}
			break
		}
	}
	if leave > 0 {
		fi, _ := f.Stat()
		if err := f.Truncate(max(fi.Size()-leave, 0)); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// TestFullDiskCommitAndClose: once a run's store is open, a full disk
// neither crashes a commit nor loses it: commits go on, Close completes
// events.jsonl (readers see every event while the disk is still full), a
// reopen on the full disk is refused with ErrNoSpace, and once space is
// freed every commit is there.
func TestFullDiskCommitAndClose(t *testing.T) {
	mnt := mountTmpfs(t, "16m")
	dir := filepath.Join(mnt, ".faber")
	s := newRun(t, dir, "r")
	pad := strings.Repeat("x", 2000)
	commit := func(seq int64) {
		t.Helper()
		rec := fmt.Appendf(nil, `{"seq":%d,"pad":%q}`, seq, pad)
		if err := s.Commit(Change{Steps: map[string][]byte{"s": rec}, Events: []Event{{Seq: seq, JSON: rec}}}); err != nil {
			t.Fatalf("commit %d: %v", seq, err)
		}
	}
	for seq := int64(1); seq <= 10; seq++ {
		commit(seq)
	}
	filler := fill(t, mnt, 0)
	for seq := int64(11); seq <= 60; seq++ {
		commit(seq)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close on a full disk: %v", err)
	}
	mirror, err := os.ReadFile(filepath.Join(RunDir(dir, "r"), fileEvents))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(mirror, []byte("\n")); n != 60 {
		t.Fatalf("events.jsonl has %d lines after close, want 60", n)
	}
	evs, err := ReadEvents(dir, "r", 0)
	if err != nil || len(evs) != 60 {
		t.Fatalf("reading on the full disk: %d events, %v; want 60", len(evs), err)
	}
	if s2, err := Open(dir, "r", Options{}); !errors.Is(err, ErrNoSpace) {
		if err == nil {
			s2.Close()
		}
		t.Fatalf("open on a full disk: %v, want ErrNoSpace", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	s3, err := Open(dir, "r", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	snap, err := s3.Load()
	if err != nil {
		t.Fatal(err)
	}
	if snap.LastSeq != 60 || !bytes.Contains(snap.Steps["s"], []byte(`"seq":60`)) {
		t.Fatalf("after freeing space: last seq %d, step %.20s; want 60", snap.LastSeq, snap.Steps["s"])
	}
}

// TestCreateWithTooLittleSpace: with a few pages free, creating a run fails
// with ErrNoSpace (Badger would fault writing its fresh files) and leaves
// nothing behind.
func TestCreateWithTooLittleSpace(t *testing.T) {
	mnt := mountTmpfs(t, "4m")
	fill(t, mnt, 24<<10)
	dir := filepath.Join(mnt, ".faber")
	meta := Meta{RunID: "r", Plan: "p", StartedAt: time.Now()}
	s, err := Create(dir, meta, []byte("name: p\n"), Options{})
	if err == nil {
		s.Close()
		t.Fatal("create succeeded on a full disk")
	}
	if !errors.Is(err, ErrNoSpace) || !strings.Contains(err.Error(), "state dir "+dir+": no space left on device") {
		t.Fatalf("create: %v; want a SpaceError naming %s", err, dir)
	}
	if _, err := os.Stat(RunDir(dir, "r")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a half-made run was left behind: %v", err)
	}
}

// TestFullDiskAtFirstRotation: a new run opens Badger small (firstSizes), so
// it starts with less free space than the full sizes need; when its memtable
// is full, the rotation to fullSizes finds no room and the commit fails
// cleanly with ErrNoSpace (checked ahead, not a fault in a mapped page),
// keeping every commit before it; with space freed, the run reopens whole.
func TestFullDiskAtFirstRotation(t *testing.T) {
	mnt := mountTmpfs(t, "16m")
	dir := filepath.Join(mnt, ".faber")
	s := newRun(t, dir, "r")
	if s.sizes != firstSizes {
		t.Fatalf("created with %+v, want %+v", s.sizes, firstSizes)
	}
	// Room for the small opening's log, not for what the full sizes reserve.
	filler := fill(t, mnt, 5<<20)
	pad := strings.Repeat("x", 2000)
	var last int64
	for seq := int64(1); seq <= 5000; seq++ {
		rec := fmt.Appendf(nil, `{"seq":%d,"pad":%q}`, seq, pad)
		err := s.Commit(Change{Steps: map[string][]byte{fmt.Sprint("s", seq%20): rec}, Events: []Event{{Seq: seq, JSON: rec}}})
		if err != nil {
			if !errors.Is(err, ErrNoSpace) {
				t.Fatalf("commit %d: %v, want ErrNoSpace", seq, err)
			}
			break
		}
		last = seq
	}
	if last == 0 || last == 5000 {
		t.Fatalf("%d commits went through; want the run to stop at its first rotation", last)
	}
	t.Logf("%d commits, then no space", last)
	if want := firstSizes.rotateAt() / 4096; last < want/2 {
		t.Fatalf("only %d commits before the disk was full; the first opening should take ~%d", last, want)
	}
	s.Close()
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	_, snap := reopen(t, dir, "r")
	if snap.LastSeq != last {
		t.Fatalf("after freeing space: last seq %d, want %d", snap.LastSeq, last)
	}
}
