package state

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// damagedRun makes a closed run with 5 events, a step record and a plan too
// big for the LSM tree (so it lives in the value log), and returns its dir.
func damagedRun(t *testing.T, stateDir string) string {
	t.Helper()
	plan := []byte("name: p\n# " + strings.Repeat("x", 100<<10) + "\n")
	s, err := Create(stateDir, Meta{RunID: "r", Plan: "p"}, plan, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for seq := int64(1); seq <= 5; seq++ {
		c := Change{Events: []Event{ev(seq, "x")}, Steps: map[string][]byte{"a": []byte(`{"n":1}`)}}
		if err := s.Commit(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return s.Dir()
}

// scribble overwrites n bytes of the file at off (negative: from the end)
// with random bytes from a fixed seed; n < 0 means the whole file.
func scribble(t *testing.T, path string, off int64, n int) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if n < 0 {
		off, n = 0, int(fi.Size())
	}
	if off < 0 {
		off += fi.Size()
	}
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// dbFiles returns the paths of the store's files that match a glob.
func dbFiles(t *testing.T, runDir, glob string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(runDir, dirDB, glob))
	if len(m) == 0 {
		t.Fatalf("no %s in the store", glob)
	}
	return m
}

func listDir(dir string) []string {
	var names []string
	for n := range dirNames(dir) {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// TestDamagedStore damages a run's Badger store in each way it can be
// damaged and checks that Open (or Load) says so with a *DamagedError —
// never a panic, never a fresh empty store — that a failed Open leaves the
// files as they were, and that readers still get the events from
// events.jsonl, told that the store is damaged.
func TestDamagedStore(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, runDir string)
		cause  string // in the error
		atLoad bool   // Open succeeds; Load finds it
	}{
		{"tables overwritten", func(t *testing.T, d string) {
			for _, f := range dbFiles(t, d, "*.sst") {
				scribble(t, f, 0, -1) // Badger panics on this in a goroutine of its own
			}
		}, "table 00000", false},
		{"table footer", func(t *testing.T, d string) { scribble(t, dbFiles(t, d, "*.sst")[0], -8, 8) }, "is corrupt", false},
		{"table middle", func(t *testing.T, d string) {
			f := dbFiles(t, d, "*.sst")[0]
			fi, _ := os.Stat(f)
			scribble(t, f, fi.Size()/3, 64)
		}, "is corrupt", false},
		{"value log header", func(t *testing.T, d string) { scribble(t, dbFiles(t, d, "*.vlog")[0], 0, 16) }, "000001.vlog is corrupt", false},
		{"value in the value log", func(t *testing.T, d string) { scribble(t, dbFiles(t, d, "*.vlog")[0], 50<<10, 64) }, "the stored plan is missing or unreadable", true},
		{"MANIFEST overwritten", func(t *testing.T, d string) { scribble(t, dbFiles(t, d, "MANIFEST")[0], 0, -1) }, "MANIFEST is corrupt", false},
		{"MANIFEST deleted", func(t *testing.T, d string) { os.Remove(filepath.Join(d, dirDB, "MANIFEST")) }, "MANIFEST is missing", false},
		{"KEYREGISTRY overwritten", func(t *testing.T, d string) { scribble(t, dbFiles(t, d, "KEYREGISTRY")[0], 0, -1) }, "KEYREGISTRY is corrupt", false},
		{"KEYREGISTRY empty", func(t *testing.T, d string) { os.Truncate(filepath.Join(d, dirDB, "KEYREGISTRY"), 0) }, "KEYREGISTRY is corrupt", false},
		{"store deleted", func(t *testing.T, d string) { os.RemoveAll(filepath.Join(d, dirDB)) }, "the store is missing", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stateDir := t.TempDir()
			runDir := damagedRun(t, stateDir)
			tc.damage(t, runDir)
			dbDir := filepath.Join(runDir, dirDB)
			before := listDir(dbDir)

			s, err := Open(stateDir, "r", Options{})
			if err == nil {
				if !tc.atLoad {
					s.Close()
					t.Fatal("Open of a damaged store succeeded")
				}
				_, err = s.Load()
				s.Close()
			} else if tc.atLoad {
				t.Fatalf("Open: %v; want it to succeed and Load to fail", err)
			}
			var de *DamagedError
			if !errors.As(err, &de) || !errors.Is(err, ErrDamaged) {
				t.Fatalf("err = %v (%T), want a *DamagedError", err, err)
			}
			if de.RunID != "r" || !strings.Contains(de.Cause, tc.cause) || !strings.HasPrefix(de.Path, dbDir) {
				t.Errorf("got run %q, cause %q, path %q; want run r, cause with %q, path in %s", de.RunID, de.Cause, de.Path, tc.cause, dbDir)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "run r: store damaged (") {
				t.Errorf("error %q: want one line, run r: store damaged (...)", msg)
			}
			if !tc.atLoad {
				if after := listDir(dbDir); !slices.Equal(after, before) {
					t.Errorf("a failed Open changed the store's files:\n%v\nwant\n%v", after, before)
				}
			}

			log, err := ReadLog(stateDir, "r", 0)
			if err != nil {
				t.Fatalf("ReadLog: %v", err)
			}
			checkContiguous(t, log.Events, 1)
			if len(log.Events) != 5 {
				t.Errorf("ReadLog: %d events, want 5", len(log.Events))
			}
			if !tc.atLoad && log.Damaged == nil {
				t.Error("ReadLog did not report the damaged store")
			}
		})
	}
}

// TestDamagedBeside covers the files beside the store: meta.json and
// events.jsonl. A run that lost them is damaged, not "not found", and List
// still shows it.
func TestDamagedBeside(t *testing.T) {
	t.Run("meta.json deleted", func(t *testing.T) {
		stateDir := t.TempDir()
		runDir := damagedRun(t, stateDir)
		os.Remove(filepath.Join(runDir, fileMeta))
		for name, err := range map[string]error{
			"Open":     func() error { _, err := Open(stateDir, "r", Options{}); return err }(),
			"ReadMeta": func() error { _, err := ReadMeta(stateDir, "r"); return err }(),
			"ReadLog":  func() error { _, err := ReadLog(stateDir, "r", 0); return err }(),
		} {
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "meta.json is missing") {
				t.Errorf("%s: %v, want damaged: meta.json is missing", name, err)
			}
		}
		metas, err := List(stateDir)
		if err != nil || len(metas) != 1 || metas[0].RunID != "r" || metas[0].Damaged == nil {
			t.Fatalf("List: %+v, %v; want run r, damaged", metas, err)
		}
	})
	t.Run("meta.json garbage", func(t *testing.T) {
		stateDir := t.TempDir()
		runDir := damagedRun(t, stateDir)
		os.WriteFile(filepath.Join(runDir, fileMeta), []byte("{garbage"), 0o644)
		s, err := Open(stateDir, "r", Options{})
		if err == nil {
			_, err = s.Load()
			s.Close()
		}
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "meta.json is not valid JSON") {
			t.Errorf("Open and Load: %v", err)
		}
		metas, _ := List(stateDir)
		if len(metas) != 1 || metas[0].Damaged == nil {
			t.Errorf("List: %+v; want run r, damaged", metas)
		}
	})
	t.Run("events.jsonl deleted, store damaged", func(t *testing.T) {
		stateDir := t.TempDir()
		runDir := damagedRun(t, stateDir)
		os.Remove(filepath.Join(runDir, fileEvents))
		os.Truncate(filepath.Join(runDir, dirDB, "KEYREGISTRY"), 0)
		_, err := ReadLog(stateDir, "r", 0)
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "events.jsonl is missing") {
			t.Errorf("ReadLog: %v", err)
		}
	})
	t.Run("events.jsonl deleted, store intact", func(t *testing.T) {
		stateDir := t.TempDir()
		runDir := damagedRun(t, stateDir)
		os.Remove(filepath.Join(runDir, fileEvents))
		log, err := ReadLog(stateDir, "r", 0)
		if err != nil || len(log.Events) != 5 || log.Damaged != nil {
			t.Errorf("ReadLog: %d events, damaged %v, err %v; want 5 from the store", len(log.Events), log.Damaged, err)
		}
	})
}

// TestGuard: a panic inside guard comes back as an error, and is damage.
func TestGuard(t *testing.T) {
	err := guard(func() error { panic("slice bounds out of range") })
	if err == nil || !strings.Contains(err.Error(), "slice bounds out of range") {
		t.Fatalf("guard: %v", err)
	}
	de := damaged("r", "/db", "", err)
	if !errors.Is(de, ErrDamaged) || !strings.Contains(de.Error(), "Badger failed reading it") {
		t.Errorf("damaged(panic) = %v", de)
	}
	if err := guard(func() error { return nil }); err != nil {
		t.Errorf("guard(nil) = %v", err)
	}
}

// TestDamagedClassifies: what the system refuses is not damage; the rest is,
// with a cause naming the file where Badger says which.
func TestDamagedClassifies(t *testing.T) {
	tests := []struct {
		err   string
		cause string // "" = not damage
	}{
		{"open /x/db/000001.vlog: no space left on device", ""},
		{"while opening memtables err: open 00001.mem: permission denied", ""},
		{"write MANIFEST: read-only file system", ""},
		{"read 000002.sst: input/output error", ""},
		{"Opening table: \"/x/db/000002.sst\" err: failed to initialize table", "000002.sst is corrupt"},
		{"while opening memtables err: While opening memtable: /x/00003.mem err: bad", "00003.mem is corrupt"},
		{"During db.vlog.open err: Open existing file: \"/x/000001.vlog\" err: Invalid datakey id", "000001.vlog is corrupt"},
		{"manifest has bad magic", "MANIFEST is corrupt"},
		{"Error while reading IV for key registry. err: EOF", "KEYREGISTRY is corrupt"},
		{"Encryption key mismatch", "KEYREGISTRY is corrupt"},
		{"event log has a gap: seq 7 follows 5", "Badger cannot read it"},
	}
	for _, tc := range tests {
		err := damaged("r", "/db", "", errors.New(tc.err))
		var de *DamagedError
		switch {
		case tc.cause == "" && errors.As(err, &de):
			t.Errorf("%q: damaged (%s), want the error as it is", tc.err, de.Cause)
		case tc.cause != "" && !errors.As(err, &de):
			t.Errorf("%q: not damaged, want %q", tc.err, tc.cause)
		case tc.cause != "" && de.Cause != tc.cause:
			t.Errorf("%q: cause %q, want %q", tc.err, de.Cause, tc.cause)
		}
	}
	if damaged("r", "/db", "", nil) != nil {
		t.Error("damaged(nil) != nil")
	}
}
