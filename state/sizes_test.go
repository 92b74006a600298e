package state

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4/options"
)

// newestSize returns the size of the newest dbDir file ending in ext.
func newestSize(t *testing.T, dbDir, ext string) int64 {
	t.Helper()
	names, _ := numberedFiles(dbDir, ext)
	if len(names) == 0 {
		t.Fatalf("no %s file in %s", ext, dbDir)
	}
	fi, err := os.Stat(names[len(names)-1])
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestFirstOpeningIsSmall: a run with a small plan is created with Badger's
// files at firstSizes (the kernel's read-around of each new mapping is then
// clipped to a small file), a tiny plan's at tinySizes, a plan of a few
// steps at miniSizes; a big plan's run, and every later opening, at
// fullSizes; so is the run of a small plan with many steps (a fan-out),
// which would rotate to fullSizes soon.
func TestFirstOpeningIsSmall(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		id    string
		plan  []byte
		steps int
		want  storeSizes
	}{
		{"small", []byte("name: p\n"), 0, firstSizes},
		{"one step", []byte("name: p\n"), 1, miniSizes},
		{"mini edge", bytes.Repeat([]byte("#"), miniPlan), miniSteps, miniSizes},
		{"past mini steps", []byte("name: p\n"), miniSteps + 1, tinySizes},
		{"past mini plan", bytes.Repeat([]byte("#"), miniPlan+1), 1, tinySizes},
		{"tiny edge", bytes.Repeat([]byte("#"), tinyPlan), tinySteps, tinySizes},
		{"past tiny steps", []byte("name: p\n"), tinySteps + 1, firstSizes},
		{"past tiny plan", bytes.Repeat([]byte("#"), tinyPlan+1), 1, firstSizes},
		{"edge", bytes.Repeat([]byte("#"), smallPlan), fewSteps, firstSizes},
		{"big", bytes.Repeat([]byte("#"), smallPlan+1), 1, fullSizes},
		{"fan-out", []byte("name: p\n"), fewSteps + 1, fullSizes},
	} {
		s, err := Create(dir, Meta{RunID: tc.id, Plan: "p", StartedAt: time.Now()}, tc.plan, Options{Steps: tc.steps})
		if err != nil {
			t.Fatal(err)
		}
		dbDir := filepath.Join(RunDir(dir, tc.id), dirDB)
		if s.sizes != tc.want {
			t.Errorf("%s: created with %+v, want %+v", tc.id, s.sizes, tc.want)
		}
		if got := newestSize(t, dbDir, ".mem"); got != 2*tc.want.mem {
			t.Errorf("%s: memtable log of %d bytes, want %d", tc.id, got, 2*tc.want.mem)
		}
		if got := newestSize(t, dbDir, ".vlog"); got != 2*tc.want.vlog {
			t.Errorf("%s: value log of %d bytes, want %d", tc.id, got, 2*tc.want.vlog)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s, err = Open(dir, tc.id, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if s.sizes != fullSizes || newestSize(t, dbDir, ".mem") != 2*fullSizes.mem {
			t.Errorf("%s: reopened with %+v, want %+v", tc.id, s.sizes, fullSizes)
		}
		snap, err := s.Load()
		if err != nil || !bytes.Equal(snap.Plan, tc.plan) {
			t.Fatalf("%s: Load after reopening: %d bytes of plan, %v", tc.id, len(snap.Plan), err)
		}
		s.Close()
	}
}

// TestFirstOpeningGrows: a value bigger than the first opening's value log
// files takes (a record, an event, a new plan) makes the store reopen Badger
// at fullSizes first, instead of failing the commit; all of it reads back,
// in this process and the next.
func TestFirstOpeningGrows(t *testing.T) {
	dir := t.TempDir()
	var log lockedBuffer
	s, err := Create(dir, Meta{RunID: "r", Plan: "p", StartedAt: time.Now()}, []byte("name: p\n"), Options{Logger: &log})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.sizes != firstSizes {
		t.Fatalf("created with %+v, want %+v", s.sizes, firstSizes)
	}
	big := `{"pad":"` + strings.Repeat("x", int(firstSizes.vlog)) + `"}`
	if err := s.Commit(Change{Steps: map[string][]byte{"a": []byte(big)}, Events: []Event{ev(1, "big")}}); err != nil {
		t.Fatalf("commit of a %d-byte record: %v", len(big), err)
	}
	if s.sizes != fullSizes || !strings.Contains(log.String(), "reopening the store with bigger files") {
		t.Fatalf("after a %d-byte record the store is at %+v (log:\n%s)", len(big), s.sizes, log.String())
	}
	plan := bytes.Repeat([]byte("#"), int(firstSizes.vlog)*3)
	if err := s.SetPlan(plan); err != nil {
		t.Fatalf("SetPlan of %d bytes: %v", len(plan), err)
	}
	check := func(s *Store) {
		t.Helper()
		snap, err := s.Load()
		if err != nil {
			t.Fatal(err)
		}
		if string(snap.Steps["a"]) != big || !bytes.Equal(snap.Plan, plan) || snap.LastSeq != 1 {
			t.Fatalf("read back %d bytes of record, %d of plan, last seq %d", len(snap.Steps["a"]), len(snap.Plan), snap.LastSeq)
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, "r", Options{})
	if err != nil {
		t.Fatal(err)
	}
	check(s)

	// A big event on a second new run.
	s2, err := Create(dir, Meta{RunID: "e", Plan: "p", StartedAt: time.Now()}, []byte("name: p\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	bigEv := Event{Seq: 1, JSON: []byte(`{"seq":1,"pad":"` + strings.Repeat("y", int(firstSizes.vlog)) + `"}`)}
	if err := s2.Commit(Change{Events: []Event{bigEv}}); err != nil {
		t.Fatalf("commit of a %d-byte event: %v", len(bigEv.JSON), err)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := ReadEvents(dir, "e", 0)
	if err != nil || len(evs) != 1 || !bytes.Equal(evs[0], bigEv.JSON) {
		t.Fatalf("events read back: %d, %v", len(evs), err)
	}
}

// TestMiniSizes: a run of a few steps opens Badger at miniSizes, whose
// memtable is too small for valueThreshold: a value over its threshold goes
// to the value log, values just under it that do not fit one transaction
// take the staged path, and all of it reads back in this process, in the
// next owner's and in a reader's; its table is written uncompressed (no
// block cache) and read back by an opening that compresses.
func TestMiniSizes(t *testing.T) {
	dir := t.TempDir()
	var log lockedBuffer
	s, err := Create(dir, Meta{RunID: "r", Plan: "p", StartedAt: time.Now()}, []byte("name: p\n"), Options{Steps: 1, Logger: &log})
	if err != nil {
		t.Fatal(err)
	}
	if s.sizes != miniSizes || miniSizes.threshold() >= valueThreshold {
		t.Fatalf("created with %+v (threshold %d), want %+v under %d", s.sizes, s.sizes.threshold(), miniSizes, valueThreshold)
	}
	th := int(miniSizes.threshold())
	pad := func(c string, n int) []byte { return []byte(`{"pad":"` + strings.Repeat(c, n) + `"}`) }
	recs := map[string][]byte{"over": pad("o", 2*th)}
	evs := []Event{{Seq: 1, JSON: []byte(`{"seq":1,"pad":"` + strings.Repeat("e", th+100) + `"}`)}}
	if err := s.Commit(Change{Steps: recs, Events: evs}); err != nil {
		t.Fatalf("commit of a record of %d bytes at threshold %d: %v", 2*th, th, err)
	}
	if s.sizes != miniSizes {
		t.Fatalf("the store rotated to %+v for a value under its value log's size (log:\n%s)", s.sizes, log.String())
	}
	// Two values just under the threshold do not fit one transaction
	// (the store may rotate to fullSizes meanwhile: it counts them whole).
	near := map[string][]byte{"near1": pad("a", th-200), "near2": pad("b", th-200)}
	evs = append(evs, ev(2, "small"))
	if err := s.Commit(Change{Steps: near, Events: evs[1:]}); err != nil {
		t.Fatalf("commit of two records of %d bytes at threshold %d: %v", th-200, th, err)
	}
	maps.Copy(recs, near)
	check := func(s *Store) {
		t.Helper()
		snap, err := s.Load()
		if err != nil {
			t.Fatal(err)
		}
		for id, v := range recs {
			if !bytes.Equal(snap.Steps[id], v) {
				t.Fatalf("record %s read back as %d bytes, want %d", id, len(snap.Steps[id]), len(v))
			}
		}
		if snap.LastSeq != 2 {
			t.Fatalf("last seq %d, want 2", snap.LastSeq)
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	dbDir := filepath.Join(RunDir(dir, "r"), dirDB)
	mf, err := readManifest(dbDir)
	if err != nil || len(mf.Tables) == 0 {
		t.Fatalf("manifest: %d tables, %v", len(mf.Tables), err)
	}
	// The first table is the miniSizes opening's memtable (written at the
	// rotation the second commit made, or at Close); any later one was
	// written at fullSizes, with Snappy: Load above read both kinds.
	first := slices.Min(slices.Collect(maps.Keys(mf.Tables)))
	if c := mf.Tables[first].Compression; c != options.None {
		t.Errorf("table %d written with compression %v at miniSizes, want none", first, c)
	}
	for id, tm := range mf.Tables {
		if id != first && tm.Compression != options.Snappy {
			t.Errorf("table %d written with compression %v at fullSizes, want Snappy", id, tm.Compression)
		}
	}
	got, err := ReadEvents(dir, "r", 0)
	if err != nil || len(got) != 2 || !bytes.Equal(got[0], evs[0].JSON) || !bytes.Equal(got[1], evs[1].JSON) {
		t.Fatalf("a reader read %d events back, %v", len(got), err)
	}
	s, err = Open(dir, "r", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.sizes != fullSizes {
		t.Fatalf("reopened with %+v, want %+v", s.sizes, fullSizes)
	}
	check(s)
}

// TestNoBadgerLock: Badger's own LOCK file is not made (the run's lock keeps
// a second Badger off the store), and the run's lock still does: a second
// owner is refused while the first is open.
func TestNoBadgerLock(t *testing.T) {
	dir := t.TempDir()
	s, err := Create(dir, Meta{RunID: "r", Plan: "p", StartedAt: time.Now()}, []byte("name: p\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(RunDir(dir, "r"), dirDB, "LOCK")
	if _, err := os.Stat(lock); err == nil {
		t.Fatalf("%s exists while the store is open", lock)
	}
	if s2, err := Open(dir, "r", Options{}); err == nil {
		s2.Close()
		t.Fatal("a second owner opened the store while the first had it")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lock); err == nil {
		t.Fatalf("%s exists after Close", lock)
	}
}
