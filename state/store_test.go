package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

func newRun(t testing.TB, stateDir, id string) *Store {
	t.Helper()
	meta := Meta{RunID: id, Plan: "p", PlanFile: "/plans/p.yaml", StartedAt: time.Now()}
	s, err := Create(stateDir, meta, []byte("name: p\n"), Options{Sync: false})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// reopen opens run id of stateDir again, once its owner has closed it, and
// loads it; the store is closed when the test ends.
func reopen(t *testing.T, stateDir, id string) (*Store, *Snapshot) {
	t.Helper()
	s, err := Open(stateDir, id, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	snap, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	return s, snap
}

func ev(seq int64, typ string) Event {
	return Event{Seq: seq, JSON: fmt.Appendf(nil, `{"seq":%d,"type":%q}`, seq, typ)}
}

// eventSeq parses the "seq" field the tests put in every event.
func eventSeq(t *testing.T, b []byte) int64 {
	t.Helper()
	var e struct{ Seq int64 }
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("event %q: %v", b, err)
	}
	return e.Seq
}

// checkContiguous fails unless evs are the events first, first+1, ...
func checkContiguous(t *testing.T, evs [][]byte, first int64) {
	t.Helper()
	for i, e := range evs {
		if got := eventSeq(t, e); got != first+int64(i) {
			t.Fatalf("event %d of %d has seq %d, want %d", i, len(evs), got, first+int64(i))
		}
	}
}

func TestCreateCommitLoadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	started := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	meta := Meta{
		RunID: "p-20260301T120000-abcd", Plan: "p", PlanFile: "/plans/p.yaml",
		StartedAt: started, Sets: map[string]string{"k": "v"},
		ParentRunID: "parent-1", ParentStep: "sub",
	}
	plan := []byte("name: p\nsteps: []\n")
	s, err := Create(dir, meta, plan, Options{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Dir() != RunDir(dir, meta.RunID) {
		t.Errorf("Dir() = %q, want %q", s.Dir(), RunDir(dir, meta.RunID))
	}
	err = s.Commit(Change{
		Run:    []byte(`{"status":"running"}`),
		Steps:  map[string][]byte{"a": []byte(`{"status":"in_progress"}`), "b": []byte(`{"status":"pending"}`)},
		Events: []Event{ev(1, "run_started"), ev(2, "step_status")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(Change{Steps: map[string][]byte{"a": []byte(`{"status":"success"}`)}, Events: []Event{ev(3, "step_status")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	s, err = Open(dir, meta.RunID, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	snap, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if !snap.Meta.StartedAt.Equal(started) || snap.Meta.Created == 0 || snap.Meta.Sets["k"] != "v" ||
		snap.Meta.ParentRunID != "parent-1" || snap.Meta.ParentStep != "sub" || snap.Meta.PlanFile != "/plans/p.yaml" {
		t.Errorf("meta = %+v", snap.Meta)
	}
	if !bytes.Equal(snap.Plan, plan) {
		t.Errorf("plan = %q", snap.Plan)
	}
	if string(snap.Run) != `{"status":"running"}` {
		t.Errorf("run = %q", snap.Run)
	}
	want := map[string]string{"a": `{"status":"success"}`, "b": `{"status":"pending"}`}
	if len(snap.Steps) != len(want) {
		t.Errorf("steps = %q", snap.Steps)
	}
	for id, w := range want {
		if string(snap.Steps[id]) != w {
			t.Errorf("step %s = %q, want %q", id, snap.Steps[id], w)
		}
	}
	if snap.LastSeq != 3 {
		t.Errorf("LastSeq = %d, want 3", snap.LastSeq)
	}
	if p, err := ReadPlan(dir, meta.RunID); err != nil || !bytes.Equal(p, plan) {
		t.Errorf("ReadPlan = %q, %v", p, err)
	}
	if m, err := ReadMeta(dir, meta.RunID); err != nil || m.RunID != meta.RunID || !m.StartedAt.Equal(started) {
		t.Errorf("ReadMeta = %+v, %v", m, err)
	}
	// The next commit continues where the reopened log ends.
	if err := s.Commit(Change{Events: []Event{ev(4, "resumed")}}); err != nil {
		t.Fatal(err)
	}
}

func TestCreateExisting(t *testing.T) {
	dir := t.TempDir()
	s := newRun(t, dir, "r1")
	s.Close()
	_, err := Create(dir, Meta{RunID: "r1"}, nil, Options{})
	if err == nil || !strings.Contains(err.Error(), `run "r1" already exists`) {
		t.Fatalf("Create of an existing run: %v", err)
	}
	if _, err := Create(dir, Meta{RunID: "../x"}, nil, Options{}); err == nil {
		t.Fatal("Create accepted run id ../x")
	}
}

func TestCommitEnforcesSeq(t *testing.T) {
	s := newRun(t, t.TempDir(), "r")
	step := map[string][]byte{"a": []byte(`{"x":1}`)}
	bad := []struct {
		name string
		evs  []Event
	}{
		{"first is not 1", []Event{ev(2, "x")}},
		{"zero", []Event{ev(0, "x")}},
		{"gap inside", []Event{ev(1, "x"), ev(3, "x")}},
		{"repeat inside", []Event{ev(1, "x"), ev(1, "x")}},
		{"multi-line JSON", []Event{{Seq: 1, JSON: []byte("{\n}")}}},
		{"invalid JSON", []Event{{Seq: 1, JSON: []byte(`{"a":`)}}},
		{"not an object", []Event{{Seq: 1, JSON: []byte(`[1]`)}}},
		{"not an object, called well formed", []Event{{Seq: 1, JSON: []byte(`[1]`), WellFormed: true}}},
	}
	for _, tc := range bad {
		if err := s.Commit(Change{Steps: step, Events: tc.evs}); err == nil {
			t.Errorf("%s: Commit succeeded", tc.name)
		}
	}
	if err := s.Commit(Change{Events: []Event{ev(1, "x"), ev(2, "x")}}); err != nil {
		t.Fatal(err)
	}
	for _, seq := range []int64{2, 4, 1} {
		err := s.Commit(Change{Steps: step, Events: []Event{ev(seq, "x")}})
		if err == nil || !strings.Contains(err.Error(), `run "r"`) {
			t.Errorf("seq %d after 2: err = %v", seq, err)
		}
	}
	snap, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Steps) != 0 || snap.LastSeq != 2 {
		t.Errorf("rejected commits wrote something: steps %q, last seq %d", snap.Steps, snap.LastSeq)
	}
	evs, err := ReadEvents(filepath.Dir(filepath.Dir(s.Dir())), "r", 0)
	if err != nil || len(evs) != 2 {
		t.Errorf("ReadEvents = %d events, %v; want 2", len(evs), err)
	}
}

func TestNotFound(t *testing.T) {
	dir := t.TempDir()
	newRun(t, dir, "exists")
	os.MkdirAll(RunDir(dir, "half-made"), 0o755) // a run dir without meta.json
	for _, id := range []string{"nope", "half-made", "../runs/exists", "", "."} {
		checks := map[string]error{}
		_, checks["Open"] = Open(dir, id, Options{})
		_, checks["ReadMeta"] = ReadMeta(dir, id)
		_, checks["ReadPlan"] = ReadPlan(dir, id)
		_, checks["ReadEvents"] = ReadEvents(dir, id, 0)
		_, checks["OwnerOf"] = OwnerOf(dir, id)
		for name, err := range checks {
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("%s(%q): err = %v, want ErrNotFound", name, id, err)
				continue
			}
			if want := fmt.Sprintf("run %q not found in %s", id, dir); err.Error() != want {
				t.Errorf("%s(%q): err = %q, want %q", name, id, err, want)
			}
		}
	}
}

func TestOpenOwnedInSameProcess(t *testing.T) {
	dir := t.TempDir()
	newRun(t, dir, "r")
	start := time.Now()
	_, err := Open(dir, "r", Options{})
	var le *LockedError
	if !errors.As(err, &le) || le.PID != os.Getpid() || !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want *LockedError with pid %d", err, os.Getpid())
	}
	if want := fmt.Sprintf("run r is active in process %d", os.Getpid()); err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	// A live owner is recognised at once, not after the wait meant for readers.
	if d := time.Since(start); d >= lockWait {
		t.Errorf("LockedError took %v", d)
	}
}

func TestOpenOwnedByOtherProcess(t *testing.T) {
	dir := t.TempDir()
	s := newRun(t, dir, "r")
	if err := s.Commit(Change{Events: []Event{ev(1, "x")}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	child, stdin := startChild(t, "hold", dir, "r")

	start := time.Now()
	_, err := Open(dir, "r", Options{})
	var le *LockedError
	if !errors.As(err, &le) || le.PID != child.Process.Pid || le.RunID != "r" {
		t.Fatalf("Open of a run held by pid %d: %v", child.Process.Pid, err)
	}
	if d := time.Since(start); d >= lockWait {
		t.Errorf("LockedError took %v", d)
	}
	o, err := OwnerOf(dir, "r")
	if err != nil || !o.Alive || o.PID != child.Process.Pid || o.Since.IsZero() {
		t.Errorf("OwnerOf while held = %+v, %v", o, err)
	}
	if evs, err := ReadEvents(dir, "r", 0); err != nil || len(evs) != 1 {
		t.Errorf("ReadEvents while held = %q, %v", evs, err)
	}

	// A clean exit of the owner frees the run and removes owner.json.
	stdin.Close()
	if err := child.Wait(); err != nil {
		t.Fatal(err)
	}
	o, err = OwnerOf(dir, "r")
	if err != nil || o.Alive || o.PID != 0 {
		t.Errorf("OwnerOf after close = %+v, %v", o, err)
	}

	// kill -9 of the owner frees it too, leaving a stale owner.json.
	child, _ = startChild(t, "hold", dir, "r")
	child.Process.Kill()
	child.Wait()
	o, err = OwnerOf(dir, "r")
	if err != nil || o.Alive || o.PID != child.Process.Pid {
		t.Errorf("OwnerOf after kill = %+v, %v", o, err)
	}
	s, err = Open(dir, "r", Options{})
	if err != nil {
		t.Fatalf("Open after the owner was killed: %v", err)
	}
	s.Close()
}

// A reader's shared lock delays Open instead of failing it.
func TestOpenWaitsForReader(t *testing.T) {
	dir := t.TempDir()
	s := newRun(t, dir, "r")
	s.Close()
	f, free, err := readerLock(s.Dir())
	if err != nil || !free {
		t.Fatalf("readerLock = %v, %v", free, err)
	}
	time.AfterFunc(200*time.Millisecond, func() { releaseReaderLock(f, true) })
	start := time.Now()
	s, err = Open(dir, "r", Options{})
	if err != nil {
		t.Fatalf("Open while a reader held its lock: %v", err)
	}
	s.Close()
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("Open did not wait for the reader (%v)", d)
	}
}

func TestList(t *testing.T) {
	dir := t.TempDir()
	if runs, err := List(dir); err != nil || runs == nil || len(runs) != 0 {
		t.Fatalf("List of an empty state dir = %v, %v", runs, err)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, m := range []Meta{
		{RunID: "a", StartedAt: t0, Created: 100},
		{RunID: "c", StartedAt: t0.Add(time.Second), Created: 50},
		{RunID: "b", StartedAt: t0, Created: 200},
		{RunID: "d", StartedAt: t0.Add(-time.Nanosecond), Created: 300},
	} {
		s, err := Create(dir, m, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	os.MkdirAll(RunDir(dir, "being-created"), 0o755)
	runs, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range runs {
		got = append(got, m.RunID)
	}
	if strings.Join(got, " ") != "c b a d" {
		t.Errorf("List order = %v, want [c b a d]", got)
	}
}

func TestReadEvents(t *testing.T) {
	dir := t.TempDir()
	s := newRun(t, dir, "r")
	for seq := int64(1); seq <= 5; seq++ {
		if err := s.Commit(Change{Events: []Event{ev(seq, "x")}}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string, after int64, want int) {
		t.Helper()
		evs, err := ReadEvents(dir, "r", after)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if len(evs) != want {
			t.Fatalf("%s: ReadEvents(%d) = %d events, want %d", when, after, len(evs), want)
		}
		checkContiguous(t, evs, after+1)
	}
	check("owned", 0, 5)
	check("owned", 3, 2)
	check("owned", 5, 0)
	check("owned", 9, 0)

	// The owner's mirror: a line being written (no newline yet) is not an event.
	mirror := filepath.Join(s.Dir(), fileEvents)
	f, err := os.OpenFile(mirror, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":6,"ty`)
	f.Close()
	check("owned, torn mirror", 0, 5)
	// The owner repairs a mirror it lost track of before the next append.
	s.mirrorOK = false
	if err := s.Commit(Change{Events: []Event{ev(6, "x")}}); err != nil {
		t.Fatal(err)
	}
	check("owned, repaired", 0, 6)

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// With the owner gone, events come from Badger: the mirror is not needed.
	if err := os.Remove(mirror); err != nil {
		t.Fatal(err)
	}
	check("closed", 0, 6)
	check("closed", 4, 2)
	// A reader must not leave the run locked or recreate files.
	if _, err := os.Stat(mirror); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("reader recreated events.jsonl: %v", err)
	}
	s, err = Open(dir, "r", Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

func TestMirrorRepairOnOpen(t *testing.T) {
	var full []byte
	for seq := int64(1); seq <= 5; seq++ {
		full = append(append(full, ev(seq, "x").JSON...), '\n')
	}
	lines := bytes.SplitAfter(full, []byte("\n"))
	tests := []struct {
		name   string
		mirror []byte // nil: no file
	}{
		{"complete", full},
		{"missing", nil},
		{"empty", []byte{}},
		{"lagging", bytes.Join(lines[:3], nil)},
		{"torn last line", append(bytes.Join(lines[:3], nil), `{"seq":4,"ty`...)},
		{"torn after complete", append(bytes.Clone(full), `{"seq":6`...)},
		{"ahead of the store", append(bytes.Clone(full), ev(6, "x").JSON...)},
		{"lines ahead of the store", append(append(bytes.Clone(full), ev(6, "x").JSON...), '\n')},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := newRun(t, dir, "r")
			for seq := int64(1); seq <= 5; seq++ {
				if err := s.Commit(Change{Events: []Event{ev(seq, "x")}}); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			path := filepath.Join(s.Dir(), fileEvents)
			os.Remove(path)
			if tc.mirror != nil {
				os.WriteFile(path, tc.mirror, 0o644)
			}
			s, err := Open(dir, "r", Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got, _ := os.ReadFile(path)
			if !bytes.Equal(got, full) {
				t.Errorf("events.jsonl after Open:\n%s\nwant:\n%s", got, full)
			}
			if err := s.Commit(Change{Events: []Event{ev(6, "y")}}); err != nil {
				t.Fatal(err)
			}
			got, _ = os.ReadFile(path)
			if want := append(bytes.Clone(full), ev(6, "y").JSON...); !bytes.Equal(got, append(want, '\n')) {
				t.Errorf("events.jsonl after a commit:\n%s", got)
			}
		})
	}
}

func bigChange(n int, seq int64, val string) Change {
	c := Change{Run: []byte(val), Steps: make(map[string][]byte, n), Events: []Event{ev(seq, "big")}}
	for i := range n {
		c.Steps[fmt.Sprintf("step-%05d", i)] = []byte(val)
	}
	return c
}

// stagedLeft counts staged keys and the marker left in the store.
func stagedLeft(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixStage})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		if _, err := txn.Get(keyStaged); err == nil {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func checkSteps(t *testing.T, snap *Snapshot, n int, val string) {
	t.Helper()
	if len(snap.Steps) != n {
		t.Fatalf("%d steps, want %d", len(snap.Steps), n)
	}
	for id, v := range snap.Steps {
		if string(v) != val {
			t.Fatalf("step %s = %q, want %q", id, v, val)
		}
	}
	if n > 0 && string(snap.Run) != val {
		t.Fatalf("run = %q, want %q", snap.Run, val)
	}
}

// A Change too big for one Badger transaction is still committed whole.
func TestCommitBigChange(t *testing.T) {
	s := newRun(t, t.TempDir(), "r")
	val := `{"status":"pending","attempt":0,"padding":"` + strings.Repeat("x", 400) + `"}`
	c := bigChange(4000, 1, val)
	if err := s.commitTxn(c, 1); !errors.Is(err, badger.ErrTxnTooBig) {
		t.Fatalf("the test change fits in one transaction (%v); make it bigger", err)
	}
	if err := s.Commit(c); err != nil {
		t.Fatal(err)
	}
	snap, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	checkSteps(t, snap, 4000, val)
	if snap.LastSeq != 1 || stagedLeft(t, s) != 0 {
		t.Errorf("LastSeq %d, %d staged keys left", snap.LastSeq, stagedLeft(t, s))
	}
}

// A staged commit stopped (as by a crash) before its commit point leaves no
// trace; one stopped after it is completed by Open.
func TestStagedCommitInterrupted(t *testing.T) {
	pad := strings.Repeat("x", 400)
	for _, point := range []string{"staged", "marked"} {
		t.Run(point, func(t *testing.T) {
			dir := t.TempDir()
			s := newRun(t, dir, "r")
			if err := s.Commit(bigChange(10, 1, `"old`+pad+`"`)); err != nil {
				t.Fatal(err)
			}
			crash := errors.New("crash")
			s.testHook = func(p string) error {
				if p == point {
					return crash
				}
				return nil
			}
			if err := s.Commit(bigChange(4000, 2, `"new`+pad+`"`)); !errors.Is(err, crash) {
				t.Fatalf("Commit = %v, want the simulated crash", err)
			}
			s.Close()
			s, snap := reopen(t, dir, "r")
			if point == "staged" {
				checkSteps(t, snap, 10, `"old`+pad+`"`)
				if snap.LastSeq != 1 {
					t.Errorf("LastSeq = %d, want 1", snap.LastSeq)
				}
			} else {
				checkSteps(t, snap, 4000, `"new`+pad+`"`)
				if snap.LastSeq != 2 {
					t.Errorf("LastSeq = %d, want 2", snap.LastSeq)
				}
			}
			if n := stagedLeft(t, s); n != 0 {
				t.Errorf("%d staged keys left after Open", n)
			}
			evs, err := ReadEvents(dir, "r", 0)
			if err != nil || int64(len(evs)) != snap.LastSeq {
				t.Errorf("ReadEvents = %d events, %v; want %d", len(evs), err, snap.LastSeq)
			}
		})
	}
}

func TestOwnerRecord(t *testing.T) {
	dir := t.TempDir()
	s := newRun(t, dir, "r")
	o, err := OwnerOf(dir, "r")
	if err != nil || !o.Alive || o.PID != os.Getpid() {
		t.Fatalf("OwnerOf own run = %+v, %v", o, err)
	}
	if st := procStartTime(os.Getpid()); o.StartTime != st {
		t.Errorf("StartTime = %q, want %q", o.StartTime, st)
	}
	s.Close()
	if _, err := os.Stat(filepath.Join(s.Dir(), fileOwner)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("owner.json after Close: %v", err)
	}
}

func TestBadgerLogsGoToLogger(t *testing.T) {
	var buf bytes.Buffer
	meta := Meta{RunID: "r"}
	s, err := Create(t.TempDir(), meta, nil, Options{Logger: &buf})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if !strings.Contains(buf.String(), "badger ") {
		t.Errorf("nothing logged to Options.Logger: %q", buf.String())
	}
}

func TestNewRunID(t *testing.T) {
	format := regexp.MustCompile(`^[a-z0-9._-]+-\d{8}T\d{6}-[0-9a-f]{4}$`)
	now := time.Date(2026, 7, 8, 1, 2, 3, 0, time.FixedZone("x", 5*3600))
	tests := []struct{ plan, prefix string }{
		{"dataset-create", "dataset-create-20260707T200203-"},
		{"My Plan", "my-plan-20260707T200203-"},
		{"a/b\\c:d", "a-b-c-d-20260707T200203-"},
		{"..hidden", "hidden-20260707T200203-"},
		{"v1.2_x", "v1.2_x-20260707T200203-"},
		{"Über  plan!", "ber-plan-20260707T200203-"},
		{"", "run-20260707T200203-"},
		{"!!!", "run-20260707T200203-"},
		{strings.Repeat("a", 100), strings.Repeat("a", 64) + "-20260707T200203-"},
	}
	dir := t.TempDir()
	for _, tc := range tests {
		id := NewRunID(dir, tc.plan, now)
		if !format.MatchString(id) || !strings.HasPrefix(id, tc.prefix) || len(id) != len(tc.prefix)+4 {
			t.Errorf("NewRunID(%q) = %q, want %q + 4 hex", tc.plan, id, tc.prefix)
		}
		if !validRunID(id) {
			t.Errorf("NewRunID(%q) = %q is not a valid run id", tc.plan, id)
		}
	}
	seen := map[string]bool{}
	for range 50 {
		id := NewRunID(dir, "p", now)
		os.MkdirAll(RunDir(dir, id), 0o755)
		if seen[id] {
			t.Fatalf("NewRunID returned %q twice although its dir exists", id)
		}
		seen[id] = true
	}
}

func TestLoad10kSteps(t *testing.T) {
	s := newRun(t, t.TempDir(), "r")
	want := map[string][]byte{}
	for i := range 10000 {
		want["step-"+strconv.Itoa(i)] = fmt.Appendf(nil, `{"status":"success","attempt":%d}`, i)
	}
	if err := s.Commit(Change{Steps: want, Events: []Event{ev(1, "x")}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	snap, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Load of 10,000 steps: %v", time.Since(start))
	if !maps.EqualFunc(snap.Steps, want, bytes.Equal) {
		t.Fatal("Load returned different step records")
	}
}

func BenchmarkCommit(b *testing.B) {
	for _, sync := range []bool{true, false} {
		b.Run(fmt.Sprintf("sync=%v", sync), func(b *testing.B) {
			s, err := Create(b.TempDir(), Meta{RunID: "r"}, nil, Options{Sync: sync})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			rec := []byte(`{"status":"in_progress","attempt":1,"started_at":"2026-01-01T00:00:00Z"}`)
			b.ResetTimer()
			for i := range b.N {
				seq := int64(i + 1)
				c := Change{
					Steps:  map[string][]byte{"step": rec},
					Events: []Event{{Seq: seq, JSON: fmt.Appendf(nil, `{"seq":%d,"type":"step_status","step_id":"step","status":"in_progress","attempt":1}`, seq)}},
				}
				if err := s.Commit(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkLoad10k(b *testing.B) {
	s, err := Create(b.TempDir(), Meta{RunID: "r"}, nil, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	steps := map[string][]byte{}
	for i := range 10000 {
		steps["step-"+strconv.Itoa(i)] = []byte(`{"status":"success","attempt":1,"exit_code":0}`)
	}
	if err := s.Commit(Change{Steps: steps}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := s.Load(); err != nil {
			b.Fatal(err)
		}
	}
}

// A plan of MaxPlanSize is kept whole; one byte more is refused with a
// message (not Badger's, which dumps the value), by Create before it makes
// anything and by SetPlan before it changes anything.
func TestPlanSizeLimit(t *testing.T) {
	dir := t.TempDir()
	edge := bytes.Repeat([]byte("#"), MaxPlanSize)
	meta := Meta{RunID: "p-edge", Plan: "p", StartedAt: time.Now()}
	s, err := Create(dir, meta, edge, Options{})
	if err != nil {
		t.Fatalf("a plan of exactly %d bytes: %v", MaxPlanSize, err)
	}
	defer s.Close()
	snap, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snap.Plan, edge) {
		t.Fatalf("Load returned %d bytes of plan, want the %d stored", len(snap.Plan), len(edge))
	}

	over := append(edge, '#')
	want := fmt.Sprintf("the plan is %d bytes; a run can keep a plan of at most %d bytes (16 MiB)", len(over), MaxPlanSize)
	if err := s.SetPlan(over); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "Value") {
		t.Fatalf("SetPlan of %d bytes: %v, want an error saying %q", len(over), err, want)
	}
	if snap, err := s.Load(); err != nil || !bytes.Equal(snap.Plan, edge) {
		t.Fatalf("after a refused SetPlan the plan changed (%d bytes, %v)", len(snap.Plan), err)
	}

	_, err = Create(dir, Meta{RunID: "p-over", Plan: "p", StartedAt: time.Now()}, over, Options{})
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "Value") {
		t.Fatalf("Create with %d bytes of plan: %v, want an error saying %q", len(over), err, want)
	}
	if _, err := os.Stat(RunDir(dir, "p-over")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused Create left %s behind (%v)", RunDir(dir, "p-over"), err)
	}
}

// EventsAt reads the events of the seqs asked, in their order, and a seq
// with no event is a damaged store.
func TestEventsAt(t *testing.T) {
	dir := t.TempDir()
	s := newRun(t, dir, "p-20260101T000000-e0a7")
	if err := s.Commit(Change{Events: []Event{ev(1, "a"), ev(2, "b"), ev(3, "c"), ev(4, "d")}}); err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	err := s.EventsAt([]int64{1, 3, 4}, func(i int, b []byte) error {
		seqs = append(seqs, eventSeq(t, b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seqs) != "[1 3 4]" {
		t.Errorf("EventsAt(1, 3, 4) read seqs %v", seqs)
	}
	none := func(int, []byte) error { return nil }
	if err := s.EventsAt(nil, none); err != nil {
		t.Errorf("EventsAt(): %v", err)
	}
	if err := s.EventsAt([]int64{2, 5}, none); !errors.Is(err, ErrDamaged) {
		t.Errorf("EventsAt(2, 5) past the log: %v, want a damaged store", err)
	}
	if err := s.EventsAt([]int64{3, 2}, none); err == nil || errors.Is(err, ErrDamaged) {
		t.Errorf("EventsAt(3, 2): %v, want a caller's error", err)
	}
	stop := errors.New("stop")
	if err := s.EventsAt([]int64{1, 2}, func(int, []byte) error { return stop }); err != stop {
		t.Errorf("EventsAt with fn failing: %v, want fn's error as it is", err)
	}
}
