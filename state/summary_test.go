package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// finish commits an event that states the outcome, as a session's last
// commit does, and closes the store.
func finish(t *testing.T, s *Store, status string, at time.Time) {
	t.Helper()
	seq := s.lastSeq + 1
	if err := s.Commit(Change{Run: []byte(`{}`), Events: []Event{ev(seq, "workflow_failed")}, Outcome: &Outcome{Status: status, FinishedAt: &at}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func wantSummary(t *testing.T, dir, id, status string, lastSeq int64) Summary {
	t.Helper()
	sum, ok := ReadSummary(dir, id)
	if !ok {
		t.Fatalf("no current summary of %s", id)
	}
	if sum.Status != status || sum.LastSeq != lastSeq {
		t.Fatalf("summary says %q at seq %d, want %q at seq %d", sum.Status, sum.LastSeq, status, lastSeq)
	}
	return sum
}

func wantNoSummary(t *testing.T, dir, id string) {
	t.Helper()
	if sum, ok := ReadSummary(dir, id); ok {
		t.Fatalf("summary %+v taken for current", sum)
	}
}

func TestSummaryWrittenAtClose(t *testing.T) {
	dir, id := t.TempDir(), "p-20260101T000000-abcd"
	started := time.Date(2026, 1, 1, 0, 0, 0, 123456789, time.FixedZone("x", 3600))
	s, err := Create(dir, Meta{RunID: id, Plan: "p", StartedAt: started, Created: 42, ParentRunID: "q-1"}, []byte("name: p\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(Change{Events: []Event{ev(1, "run_started")}, Outcome: &Outcome{Status: "in_progress"}}); err != nil {
		t.Fatal(err)
	}
	wantNoSummary(t, dir, id) // not before the session ends
	at := time.Date(2026, 1, 1, 0, 1, 0, 987654321, time.UTC)
	finish(t, s, "failed", at)
	sum := wantSummary(t, dir, id, "failed", 2)
	if !sum.FinishedAt.Equal(at) || !sum.StartedAt.Equal(started) || sum.Created != 42 || sum.Plan != "p" || sum.ParentRunID != "q-1" {
		t.Fatalf("summary %+v", sum)
	}
	m, got, ok := ListEntry(dir, id)
	if !ok || got == nil || m.RunID != id || !m.StartedAt.Equal(started) {
		t.Fatalf("ListEntry = %+v, %v, %v", m, got, ok)
	}
	fi, err := os.Stat(filepath.Join(RunDir(dir, id), fileSummary))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("summary.json has mode %v, want 0600", fi.Mode().Perm())
	}
}

// A session that never stated an outcome (a run created and closed before
// its first event) leaves no summary: readers read the run.
func TestSummaryNeedsOutcome(t *testing.T) {
	dir, id := t.TempDir(), "p-20260101T000000-abcd"
	s := newRun(t, dir, id)
	if err := s.Commit(Change{Events: []Event{ev(1, "x")}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	wantNoSummary(t, dir, id)
	if _, sum, ok := ListEntry(dir, id); !ok || sum != nil {
		t.Fatalf("ListEntry: summary %v, ok %v", sum, ok)
	}
}

// A new owner removes the summary before it changes anything (resume,
// reset, classify all open the store); a session that commits without a new
// outcome (reset, classify) carries the old one over, one that resumes the
// run states its own.
func TestSummaryInvalidatedByNextOwner(t *testing.T) {
	dir, id := t.TempDir(), "p-20260101T000000-abcd"
	s := newRun(t, dir, id)
	finish(t, s, "pending_failed", time.Now())
	wantSummary(t, dir, id, "pending_failed", 1)

	// classify/reset: no new outcome.
	s, err := Open(dir, id, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(RunDir(dir, id), fileSummary)); !os.IsNotExist(err) {
		t.Fatalf("summary.json still there while the run is owned: %v", err)
	}
	if err := s.Commit(Change{Steps: map[string][]byte{"a": []byte(`{}`)}, Events: []Event{ev(2, "step_classified")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wantSummary(t, dir, id, "pending_failed", 2)

	// resume: in progress, then a crash (no Close): no summary.
	s, err = Open(dir, id, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(Change{Events: []Event{ev(3, "run_resumed")}, Outcome: &Outcome{Status: "in_progress"}}); err != nil {
		t.Fatal(err)
	}
	crash(s)
	wantNoSummary(t, dir, id)

	// The next owner, after the crash, knows no outcome until it states one.
	s, err = Open(dir, id, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	wantNoSummary(t, dir, id)
	s, err = Open(dir, id, Options{})
	if err != nil {
		t.Fatal(err)
	}
	finish(t, s, "success", time.Now())
	wantSummary(t, dir, id, "success", 4)
}

// crash ends the session as a killed owner would as far as the summary
// goes: the lock released, owner.json left, no summary written. (Badger is
// closed: in this process, an open one would keep its own lock.)
func crash(s *Store) {
	s.db.Close()
	s.mirror.Close()
	unlock(s.lock)
	s.lock.Close()
	s.lock, s.db, s.mirror = nil, nil, nil
}

// A summary is taken for current only while the files it was taken from are
// unchanged; reading the run (a read-only open of its store) changes none.
func TestSummaryStale(t *testing.T) {
	for name, change := range map[string]func(t *testing.T, dir string){
		"meta.json rewritten": func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, fileMeta), "{garbage")
		},
		"table scribbled": func(t *testing.T, dir string) {
			ssts, _ := filepath.Glob(filepath.Join(dir, dirDB, "*.sst"))
			if len(ssts) == 0 {
				t.Fatal("no table")
			}
			f, err := os.OpenFile(ssts[0], os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte("scribble"), 10)
			f.Close()
		},
		"store file removed": func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, dirDB, "MANIFEST"))
		},
		"store file replaced by a directory": func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, dirDB, "KEYREGISTRY"))
			os.Mkdir(filepath.Join(dir, dirDB, "KEYREGISTRY"), 0o700)
		},
		"store removed": func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, dirDB))
		},
		"summary larger than a read": func(t *testing.T, dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, fileSummary))
			writeFile(t, filepath.Join(dir, fileSummary), string(b[:len(b)-1])+`,"pad":"`+strings.Repeat("x", 5000)+`","run_id":"other"}`)
		},
		"summary corrupt": func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, fileSummary), `{"run_id":`)
		},
		"summary of another run": func(t *testing.T, dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, fileSummary))
			writeFile(t, filepath.Join(dir, fileSummary), string(b[:len(b)-1])+`,"run_id":"other"}`)
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir, id := t.TempDir(), "p-20260101T000000-abcd"
			s := newRun(t, dir, id)
			finish(t, s, "success", time.Now())
			if _, err := ReadEvents(dir, id, 0); err != nil {
				t.Fatal(err)
			}
			wantSummary(t, dir, id, "success", 1)
			time.Sleep(10 * time.Millisecond) // past the file system's clock tick
			change(t, RunDir(dir, id))
			wantNoSummary(t, dir, id)
		})
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// seqViewer is a Viewer that the test tells of commits by hand.
type seqViewer struct{ seq int64 }

func (v *seqViewer) LastSeq() int64 { return v.seq }
func (v *seqViewer) WriteView(w io.Writer) error {
	_, err := fmt.Fprintf(w, "view at %d", v.seq)
	return err
}

func wantView(t *testing.T, dir, id, content string) {
	t.Helper()
	b, _, ok := ReadView(dir, id)
	if content == "" {
		if ok {
			t.Fatalf("view %q taken for current", b)
		}
		return
	}
	if !ok || string(b) != content {
		t.Fatalf("view = %q, %v; want %q", b, ok, content)
	}
}

// bytesViewer is a Viewer whose view is b.
type bytesViewer struct {
	seq int64
	b   []byte
}

func (v *bytesViewer) LastSeq() int64 { return v.seq }
func (v *bytesViewer) WriteView(w io.Writer) error {
	_, err := w.Write(v.b)
	return err
}

// ReadViewHead reads a current view file's first bytes, as many as the
// caller asks for after the first 64 KiB, and no more; none when it asks
// for more than the file holds, for less than nothing, or when the file
// changed since the summary took its stamp.
func TestReadViewHead(t *testing.T) {
	dir, id := t.TempDir(), "p-20260101T000000-abcd"
	s := newRun(t, dir, id)
	content := make([]byte, 200<<10)
	rand.NewChaCha8([32]byte{1}).Read(content)
	s.SetViewer(&bytesViewer{seq: s.lastSeq + 1, b: content}) // finish's commit
	finish(t, s, "success", time.Now())
	for _, need := range []int{0, 1, 100, 64<<10 - 1, 64 << 10, 64<<10 + 1, 150 << 10, len(content)} {
		var first int
		b, _, ok := ReadViewHead(dir, id, func(head []byte) int {
			first = len(head)
			if !bytes.Equal(head, content[:len(head)]) {
				t.Errorf("need %d: the head handed over is not the file's", need)
			}
			return need
		})
		if first != 64<<10 || !ok || !bytes.Equal(b, content[:need]) {
			t.Errorf("need %d: handed %d bytes, then got %d bytes, %v; want the file's first %d", need, first, len(b), ok, need)
		}
	}
	for _, need := range []int{-1, len(content) + 1} {
		if b, _, ok := ReadViewHead(dir, id, func([]byte) int { return need }); ok {
			t.Errorf("need %d: got %d bytes", need, len(b))
		}
	}
	time.Sleep(10 * time.Millisecond) // past the file system's clock tick
	changed := append([]byte{}, content...)
	changed[0]++
	writeFile(t, filepath.Join(RunDir(dir, id), fileView), string(changed))
	if b, _, ok := ReadViewHead(dir, id, func([]byte) int { return 10 }); ok {
		t.Errorf("a view changed since its stamp was read: %q", b)
	}
}

// A view is left beside the summary, by an owner whose Viewer was told of
// every commit; an owner that commits without telling it, a crash, or a
// view file changed afterwards leave readers without one; an owner that
// commits nothing keeps the last one.
func TestViewLifecycle(t *testing.T) {
	dir, id := t.TempDir(), "p-20260101T000000-abcd"
	s := newRun(t, dir, id)
	v := &seqViewer{}
	s.SetViewer(v)
	if err := s.Commit(Change{Events: []Event{ev(1, "run_started")}, Outcome: &Outcome{Status: "in_progress"}}); err != nil {
		t.Fatal(err)
	}
	v.seq = 1
	wantView(t, dir, id, "") // not while owned
	finish(t, s, "failed", time.Now())
	wantView(t, dir, id, "") // the last commit was not told to the viewer
	if _, err := os.Stat(filepath.Join(RunDir(dir, id), fileView)); !os.IsNotExist(err) {
		t.Fatalf("a view that is not current left behind: %v", err)
	}

	open := func() *Store {
		t.Helper()
		s, err := Open(dir, id, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s = open()
	if _, _, ok := s.PriorView(); ok {
		t.Fatal("a prior view where none was left")
	}
	v = &seqViewer{seq: 2}
	s.SetViewer(v)
	s.Commit(Change{Events: []Event{ev(3, "x")}, Outcome: &Outcome{Status: "success"}})
	v.seq = 3
	s.Close()
	wantView(t, dir, id, "view at 3")

	// Opened and closed with nothing committed: the view stays current.
	s = open()
	if b, seq, ok := s.PriorView(); !ok || string(b) != "view at 3" || seq != 3 {
		t.Fatalf("PriorView = %q, %d, %v", b, seq, ok)
	}
	wantView(t, dir, id, "") // not while owned
	s.Close()
	wantView(t, dir, id, "view at 3")

	// A commit, then a crash: no summary, so no view.
	s = open()
	s.SetViewer(&seqViewer{seq: 4})
	s.Commit(Change{Events: []Event{ev(4, "run_resumed")}, Outcome: &Outcome{Status: "in_progress"}})
	crash(s)
	wantView(t, dir, id, "")
	s = open()
	if _, _, ok := s.PriorView(); ok {
		t.Fatal("a prior view after a crash")
	}
	s.SetViewer(&seqViewer{seq: 5})
	finish(t, s, "success", time.Now())
	wantView(t, dir, id, "view at 5")

	// The view file changed after the summary was taken.
	time.Sleep(10 * time.Millisecond) // past the file system's clock tick
	writeFile(t, filepath.Join(RunDir(dir, id), fileView), "view at 6")
	wantView(t, dir, id, "")
	if _, ok := ReadSummary(dir, id); !ok {
		t.Fatal("the summary is still current for list")
	}
}

// parseSummary reads what json.Unmarshal reads, whether a summary as
// writeSummary writes it (the quick way) or anything else.
func TestParseSummary(t *testing.T) {
	fin := time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("", -3600))
	base := Summary{RunID: "p-1", Plan: "p", StartedAt: time.Date(2026, 1, 1, 0, 0, 0, 1, time.UTC), Created: 42,
		Outcome: Outcome{Status: "success", FinishedAt: &fin}, LastSeq: 7,
		Files: []FileStamp{{Name: "db/000001.sst", Size: 514, MTime: 1764236420123456789}, {Name: "meta.json", Size: 0, MTime: -5}},
		View:  &FileStamp{Name: "view", Size: 10, MTime: 3}}
	var cases []Summary
	for i := range 8 {
		s := base
		if i&1 != 0 {
			s.ParentRunID = "q-2"
		}
		if i&2 != 0 {
			s.FinishedAt, s.View = nil, nil
		}
		if i&4 != 0 {
			s.Plan = `a "plan" <&> ü` // escapes and non-ASCII: json.Unmarshal's
		}
		cases = append(cases, s)
	}
	var inputs [][]byte
	for _, s := range cases {
		b, _ := json.Marshal(s)
		inputs = append(inputs, b)
		if _, ok := scanSummary(b); !ok && s.Plan == base.Plan {
			t.Errorf("the quick way did not read %s", b)
		}
	}
	inputs = append(inputs, []byte(`{"run_id":"p-1","files":[{"name":"a","size":01,"mtime":1}]}`), []byte(`{"RUN_ID":"x"}`),
		[]byte(`{"run_id":"p-1","plan":"p","started_at":"2026-01-01T00:00:00Z","created":1,"status":"s","finished_at":null,"last_seq":1,"files":[{"name":"a","size":1,"mtime":1}],"x":1}`))
	for _, b := range inputs {
		var want Summary
		werr := json.Unmarshal(b, &want)
		got, err := parseSummary(b)
		if (err != nil) != (werr != nil) {
			t.Errorf("%s: error %v, json.Unmarshal's %v", b, err, werr)
			continue
		}
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if !bytes.Equal(gb, wb) {
			t.Errorf("%s:\nread  %s\nwant %s", b, gb, wb)
		}
	}
}
