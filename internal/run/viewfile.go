package run

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/state"
)

// A run's view file (state.Viewer) holds what 'faber status' shows of the
// run, so that readers of a run closed cleanly need not replay its event
// log: a header, the status table's fields of every step (what the plain
// view shows, read without decoding the rest), then the JSON object that
// 'faber status --json' prints, unindented, which also holds everything
// else readers take from a run (Load).
//
//	"faber-view 1\n"
//	uvarint last seq, varint end step's place in the replay order (-1 none)
//	uvarint length of the table, the table (see appendTable)
//	the JSON of Status, to the end of the file
const viewMagic = "faber-view 1\n"

// viewer is the state.Viewer of a run's owner: an exec.Replayer that the
// Recorder tells of every commit. It is made in the background (PrepareView)
// and ready before the first commit: rep is then set, or nil if no view
// could be had (the last owner's did not read back, the log did not
// replay), and the store leaves none.
type viewer struct {
	ready chan struct{}
	rep   *exec.Replayer
}

func (v *viewer) LastSeq() int64 {
	<-v.ready
	if v.rep == nil {
		return -1
	}
	return v.rep.LastSeq()
}

func (v *viewer) WriteView(w io.Writer) error {
	<-v.ready
	if v.rep == nil {
		return errors.New("no view")
	}
	return writeView(w, v.rep.View(), v.rep.EndAt())
}

// PrepareView starts making the run's view for the commits to come (see
// viewerOf) while the caller does other work: a resumed run of 10,000
// steps reads its last view (4 MB of JSON) meanwhile.
func PrepareView(store *state.Store) { viewerOf(store) }

// viewerOf returns the store's viewer, giving it one first if it has none:
// from the view its last owner left, if current, else from a replay of its
// log (after a crash, or a run of a faber without views). The caller waits
// for it to be ready before it commits.
func viewerOf(store *state.Store) *viewer {
	if v, ok := store.Viewer().(*viewer); ok {
		return v
	}
	v := &viewer{ready: make(chan struct{})}
	store.SetViewer(v)
	go func() {
		defer close(v.ready)
		v.rep = replayerOf(store)
	}()
	return v
}

func replayerOf(store *state.Store) *exec.Replayer {
	if b, seq, ok := store.PriorView(); ok {
		if f, err := parseView(b); err == nil && f.lastSeq == seq {
			if v, err := f.full(); err == nil {
				return exec.ReplayerOf(v, f.endAt)
			}
		}
	}
	rep := exec.NewReplayer()
	if err := store.Events(0, rep.Read); err != nil {
		return nil
	}
	return rep
}

// writeView writes a view file of v.
func writeView(w io.Writer, v *exec.View, endAt int) error {
	b := []byte(viewMagic)
	b = binary.AppendUvarint(b, uint64(v.LastSeq))
	b = binary.AppendVarint(b, int64(endAt))
	table := appendTable(nil, v)
	b = binary.AppendUvarint(b, uint64(len(table)))
	if _, err := w.Write(b); err != nil {
		return err
	}
	if _, err := w.Write(table); err != nil {
		return err
	}
	return writeStatusJSON(w, v)
}

// writeStatusJSON writes json.Marshal(StatusOf(v)) a step at a time, so that
// the JSON of a big run is never all in memory.
func writeStatusJSON(w io.Writer, v *exec.View) error {
	head, err := json.Marshal(Status{RunState: v.Run, Steps: []*exec.StepState{}})
	if err != nil {
		return err
	}
	head, ok := bytes.CutSuffix(head, []byte("[]}"))
	if !ok {
		return errors.New("status JSON does not end with its steps")
	}
	if _, err := w.Write(append(head, '[')); err != nil {
		return err
	}
	var b []byte // one buffer for every step: w does not keep it
	for i, st := range v.Steps {
		b = b[:0]
		if i > 0 {
			b = append(b, ',')
		}
		b, err = exec.AppendStepJSON(b, st)
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	_, err = w.Write([]byte("]}"))
	return err
}

// viewFile is a parsed view file.
type viewFile struct {
	lastSeq int64
	endAt   int
	table   []byte
	json    []byte // the JSON of Status
}

func parseView(b []byte) (*viewFile, error) {
	f, head, n, err := parseViewHead(b)
	if err != nil || n > len(b)-head {
		return nil, errors.New("not a view file")
	}
	f.table, f.json = b[head:head+n], b[head+n:]
	return f, nil
}

// parseViewHead parses the header of a view file, all of it or its first
// bytes: the header is b[:head], the table the n bytes after it (f has
// neither the table nor the JSON).
func parseViewHead(b []byte) (f *viewFile, head, n int, err error) {
	bad := errors.New("not a view file")
	rest, ok := bytes.CutPrefix(b, []byte(viewMagic))
	if !ok {
		return nil, 0, 0, bad
	}
	r := &reader{b: rest}
	f = &viewFile{lastSeq: int64(r.uvarint()), endAt: int(r.varint())}
	size := r.uvarint()
	if r.err != nil || size > uint64(math.MaxInt-len(b)) {
		return nil, 0, 0, bad
	}
	return f, len(b) - len(r.b), int(size), nil
}

// full is the whole view, from its JSON.
func (f *viewFile) full() (*exec.View, error) {
	var st Status
	if err := json.Unmarshal(f.json, &st); err != nil {
		return nil, err
	}
	if len(st.Steps) == 0 {
		st.Steps = nil // as Replay leaves a run without steps
	}
	return &exec.View{Run: st.RunState, Steps: st.Steps, LastSeq: f.lastSeq}, nil
}

// head is the view without its steps, from the table.
func (f *viewFile) head() (*exec.View, *reader) {
	r := &reader{b: f.table}
	v := &exec.View{LastSeq: f.lastSeq}
	v.Run = exec.RunState{RunID: r.str(), Plan: r.str(), Status: r.str(), StartedAt: r.time()}
	if r.byte() == 1 {
		t := r.time()
		v.Run.FinishedAt = &t
	}
	return v, r
}

// brief is the view with only what the status table shows of each step
// (see appendTable), from the table.
func (f *viewFile) brief() (*exec.View, error) {
	v, r := f.head()
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		return nil, errors.New("view table damaged")
	}
	if n > 0 {
		// One allocation for each kind of thing the steps point to, and
		// their strings cut from one copy of the table.
		r.s = string(r.b)
		v.Steps = make([]*exec.StepState, n)
		all := make([]exec.StepState, n)
		ends := make([]exec.AttemptEnd, n)
		lasts := make([]*exec.AttemptEnd, n)
		var res []exec.Resources
		codes := make([]int, 0, 2*n)
		times := make([]time.Time, 0, n)
		for i := range all {
			st := &all[i]
			flags := r.byte()
			st.ID, st.Phase, st.Status, st.Error, st.FanOut, st.ChildRunID = r.str(), r.str(), r.str(), r.str(), r.str(), r.str()
			st.Attempt = int(r.varint())
			st.DurationMs = r.varint()
			if flags&rowStory != 0 {
				st.Story = r.str()
			}
			if flags&rowExit != 0 {
				codes = append(codes, int(r.varint()))
				st.ExitCode = &codes[len(codes)-1]
			}
			if flags&rowFinished != 0 {
				times = append(times, r.time())
				st.FinishedAt = &times[len(times)-1]
			}
			if flags&rowCached != 0 {
				st.CachedFrom = &exec.CachedFrom{RunID: r.str(), Attempt: int(r.varint()), Seq: r.varint()}
			}
			if flags&rowAttempt != 0 {
				a := &ends[i]
				a.Attempt, a.Cause = int(r.varint()), r.str()
				if code := int(r.varint()); flags&rowNoProcess == 0 {
					codes = append(codes, code)
					a.ExitCode = &codes[len(codes)-1]
				}
				if flags&rowResources != 0 {
					if res == nil {
						res = make([]exec.Resources, 0, n)
					}
					res = append(res, exec.Resources{PeakRSSBytes: r.varint(), MemoryLimitBytes: r.varint()})
					a.Resources = &res[len(res)-1]
					if flags&rowSource != 0 {
						a.Resources.Source = r.str()
					}
				}
				lasts[i] = a
				st.Attempts = lasts[i : i+1 : i+1]
			}
			v.Steps[i] = st
		}
	}
	if r.err != nil || len(r.b) != 0 {
		return nil, errors.New("view table damaged")
	}
	return v, nil
}

// Flags of a table row: which of the optional fields follow.
const (
	rowExit = 1 << iota
	rowFinished
	rowCached
	rowAttempt   // the last attempt's end
	rowResources // ... with its resources
	rowSource    // ... and where they come from (Resources.Source)
	rowStory     // how it got there, with more than one attempt (Story)
	// rowNoProcess: the last attempt ran no process, so it has no exit
	// code (the 0 written in its place, which a faber before this flag
	// reads as the code, is not one).
	rowNoProcess
)

// appendTable appends the table of a view file: the run's id, plan, status,
// start and finish, then for each step the fields 'faber status' shows
// (StatusCmd, AppendPeak, FanOuts): id, phase, status, error, fan-out, child
// run, attempt, duration, exit code, finish time, the run and attempt a
// cached step reuses, and the last attempt's end (its cause, exit code,
// peak memory and memory limit).
func appendTable(b []byte, v *exec.View) []byte {
	w := writer{b: b}
	w.str(v.Run.RunID)
	w.str(v.Run.Plan)
	w.str(v.Run.Status)
	w.time(v.Run.StartedAt)
	if v.Run.FinishedAt != nil {
		w.b = append(w.b, 1)
		w.time(*v.Run.FinishedAt)
	} else {
		w.b = append(w.b, 0)
	}
	w.b = binary.AppendUvarint(w.b, uint64(len(v.Steps)))
	for _, st := range v.Steps {
		var flags byte
		var last *exec.AttemptEnd
		if st.ExitCode != nil {
			flags |= rowExit
		}
		if st.FinishedAt != nil {
			flags |= rowFinished
		}
		if st.CachedFrom != nil {
			flags |= rowCached
		}
		if n := len(st.Attempts); n > 0 && st.Attempts[n-1] != nil {
			last = st.Attempts[n-1]
			flags |= rowAttempt
			if last.ExitCode == nil {
				flags |= rowNoProcess
			}
			if last.Resources != nil {
				flags |= rowResources
				if last.Resources.Source != "" {
					flags |= rowSource
				}
			}
		}
		story := Story(st)
		if story != "" {
			flags |= rowStory
		}
		w.b = append(w.b, flags)
		w.str(st.ID)
		w.str(st.Phase)
		w.str(st.Status)
		w.str(st.Error)
		w.str(st.FanOut)
		w.str(st.ChildRunID)
		w.varint(int64(st.Attempt))
		w.varint(st.DurationMs)
		if story != "" {
			w.str(story)
		}
		if st.ExitCode != nil {
			w.varint(int64(*st.ExitCode))
		}
		if st.FinishedAt != nil {
			w.time(*st.FinishedAt)
		}
		if c := st.CachedFrom; c != nil {
			w.str(c.RunID)
			w.varint(int64(c.Attempt))
			w.varint(c.Seq)
		}
		if last != nil {
			w.varint(int64(last.Attempt))
			w.str(last.Cause)
			code := 0
			if last.ExitCode != nil {
				code = *last.ExitCode
			}
			w.varint(int64(code))
			if r := last.Resources; r != nil {
				w.varint(r.PeakRSSBytes)
				w.varint(r.MemoryLimitBytes)
				if r.Source != "" {
					w.str(r.Source)
				}
			}
		}
	}
	return w.b
}

type writer struct{ b []byte }

func (w *writer) str(s string) {
	w.b = binary.AppendUvarint(w.b, uint64(len(s)))
	w.b = append(w.b, s...)
}

func (w *writer) varint(n int64) { w.b = binary.AppendVarint(w.b, n) }

// time keeps an instant (the table's readers show durations, never the
// zone).
func (w *writer) time(t time.Time) {
	w.varint(t.Unix())
	w.varint(int64(t.Nanosecond()))
}

// reader reads what writer wrote; the first error sticks. Its strings
// are cut from s when set, a copy of all of b (the strings then share
// it), else copied from b one by one.
type reader struct {
	b   []byte
	s   string
	err error
}

func (r *reader) fail() {
	if r.err == nil {
		r.err = fmt.Errorf("view table damaged")
	}
	r.b = nil
}

func (r *reader) uvarint() uint64 {
	n, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[k:]
	return n
}

func (r *reader) varint() int64 {
	n, k := binary.Varint(r.b)
	if k <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[k:]
	return n
}

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		r.fail()
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) str() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail()
		return ""
	}
	var s string
	if r.s != "" {
		at := len(r.s) - len(r.b)
		s = r.s[at : at+int(n)]
	} else {
		s = string(r.b[:n])
	}
	r.b = r.b[n:]
	return s
}

func (r *reader) time() time.Time {
	sec := r.varint()
	ns := r.varint()
	return time.Unix(sec, ns).UTC()
}
