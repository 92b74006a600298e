package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/state"
)

const (
	// followContext is how many lines of output a step printed before the
	// follower came are shown for each running attempt (and stream).
	followContext = 200
	// followTailBytes bounds what is read back to find those lines.
	followTailBytes = 256 << 10
	// followReadMax bounds what one poll reads of one log file, so that a
	// step writing fast cannot hold up the view; the rest comes next poll.
	followReadMax = 1 << 20
)

// Logged is one event of a run's event log: parsed, and as stored.
type Logged struct {
	Event exec.Event
	Line  []byte // one JSON object without its newline
}

// EventLog reads a run's event log as it grows (faber events --follow, the
// follower).
type EventLog struct {
	stateDir, runID string
	after           int64 // seq of the last event read
	read            bool
	damaged         *state.DamagedError
}

// NewEventLog reads the event log of the run runID of stateDir from its
// first event on.
func NewEventLog(stateDir, runID string) *EventLog {
	return &EventLog{stateDir: stateDir, runID: runID}
}

// Read returns the events logged since the last Read, oldest first. A run
// that is not there, whose event log cannot be read, or that holds a line
// that is not an event is a StateError; the events before that line come
// with it.
func (l *EventLog) Read() ([]Logged, error) {
	log, err := state.ReadLog(l.stateDir, l.runID, l.after)
	if err != nil {
		return nil, StoreError(err, l.runID, l.stateDir)
	}
	if !l.read {
		l.read, l.damaged = true, log.Damaged
	}
	evs := make([]Logged, 0, len(log.Events))
	for _, line := range log.Events {
		var e exec.Event
		if err := json.Unmarshal(line, &e); err != nil {
			return evs, stateProblem(fmt.Errorf("run %s: bad event: %w", l.runID, err))
		}
		l.after = e.Seq
		evs = append(evs, Logged{Event: e, Line: line})
	}
	return evs, nil
}

// Damaged is set when, at the first Read, the run's store turned out damaged
// and its events come from events.jsonl.
func (l *EventLog) Damaged() *state.DamagedError { return l.damaged }

// Opened reports whether a Read got to read the log, so that Damaged tells.
func (l *EventLog) Opened() bool { return l.read }

// Collected is a sink that keeps the events it gets.
type Collected struct{ Events []exec.Event }

// Event keeps e.
func (c *Collected) Event(e exec.Event) { c.Events = append(c.Events, e) }

// Follower reads a run that another process owns, as its owner's live view
// sees it (faber attach): the events of its event log, and the output lines of its running
// steps, which are only in their log files.
type Follower struct {
	log      *EventLog
	runID    string
	runDir   string
	sink     exec.Sink
	subplans map[string]bool // sub-plan steps, from the plan

	steps    map[string]*followedStep
	order    []string // step ids, as first seen
	caughtUp bool     // the events there were when the follower came are read
	ended    bool     // the run's last session wrote its end event
	events   int
	last     time.Time // of the newest event
}

type followedStep struct {
	status  string
	attempt int
	subplan bool
	tails   []*logTail
}

// NewFollower follows the run runID of stateDir, handing what it reads to
// sink.
func NewFollower(stateDir, runID string, sink exec.Sink) *Follower {
	return &Follower{log: NewEventLog(stateDir, runID), runID: runID, runDir: state.RunDir(stateDir, runID), sink: sink,
		steps: map[string]*followedStep{}}
}

// SetSink hands what is read from now on to sink (the live view, once it is
// up, after the events the first poll collected).
func (f *Follower) SetSink(sink exec.Sink) { f.sink = sink }

// SetPlan tells the sub-plan steps from the run's plan (nil: none known),
// whose stdout carries their child run's events. Without it they are known
// by the child run id their status names.
func (f *Follower) SetPlan(plan *spec.Plan) {
	if plan == nil {
		return
	}
	f.subplans = map[string]bool{}
	for _, s := range plan.Steps {
		if s.PlanPath != "" {
			f.subplans[s.ID] = true
		}
	}
}

// Damaged is set when the run's store turned out damaged at the first poll
// and its events come from events.jsonl.
func (f *Follower) Damaged() *state.DamagedError { return f.log.Damaged() }

// Poll hands on the events logged since the last poll, then the lines the
// running steps wrote. The first poll reads every event there is, then the
// last lines each running step printed before.
func (f *Follower) Poll() error {
	evs, err := f.log.Read()
	for _, e := range evs {
		f.apply(e.Event)
	}
	if err != nil {
		return err
	}
	if !f.caughtUp {
		f.caughtUp = true
		for _, id := range f.order {
			f.startTails(id, f.steps[id], true)
		}
	}
	for _, id := range f.order {
		for _, t := range f.steps[id].tails {
			t.read(f.emitter(id, t), false)
		}
	}
	return nil
}

// apply hands on one event. A step that leaves the attempt, handler or
// recovery script it ran has that one's last lines handed on first; one that
// starts another gets its log files followed.
func (f *Follower) apply(e exec.Event) {
	f.events++
	if !e.Time.IsZero() {
		f.last = e.Time
	}
	switch e.Type {
	case exec.EvRunStarted, exec.EvRunResumed:
		f.ended = false
	case exec.EvWorkflowCompleted, exec.EvWorkflowFailed:
		f.ended = true
	}
	if e.Type != exec.EvStepStatus || e.StepID == "" {
		f.sink.Event(e)
		return
	}
	st := f.steps[e.StepID]
	if st == nil {
		st = &followedStep{subplan: f.subplans[e.StepID]}
		f.steps[e.StepID] = st
		f.order = append(f.order, e.StepID)
	}
	if d, ok := e.Data.(*exec.StepStatus); ok && d.ChildRunID != "" {
		st.subplan = true
	}
	attempt := e.Attempt
	if attempt == 0 {
		attempt = st.attempt
	}
	kind, n, running := runningLog(e.Status, attempt)
	okind, on, _ := runningLog(st.status, st.attempt)
	if len(st.tails) > 0 && (!running || kind != okind || n != on) {
		f.stopTails(e.StepID, st)
	}
	st.status, st.attempt = e.Status, attempt
	f.sink.Event(e)
	if f.caughtUp && running && len(st.tails) == 0 {
		f.startTails(e.StepID, st, false)
	}
}

// runningLog names the log files a step writes in a status: an attempt's
// while in_progress, the on_failure handler's (numbered by the failed
// attempt) while remediating, the recovery script's (the attempt before the
// reserved one) while retrying.
func runningLog(status string, attempt int) (kind string, n int, ok bool) {
	switch status {
	case exec.StatusInProgress:
		return "attempt", attempt, attempt > 0
	case exec.StatusRemediating:
		return "handler", attempt, attempt > 0
	case exec.StatusRetrying:
		return "recovery", attempt - 1, attempt > 1
	}
	return "", 0, false
}

// startTails follows the log files the step writes now. context: the step
// was running before the follower came; show its last followContext lines (all of
// a sub-plan step's stdout, which carries its child run's events, so that
// the child's steps show under it). A sub-plan step that is done has its last
// attempt's stdout read once, for the same reason.
func (f *Follower) startTails(id string, st *followedStep, context bool) {
	kind, n, running := runningLog(st.status, st.attempt)
	if !running {
		if context && st.subplan && st.attempt > 0 {
			t := &logTail{path: exec.LogPath(f.runDir, id, "attempt", st.attempt, "out"), stream: "stdout", kind: "attempt", n: st.attempt, child: true}
			t.read(f.emitter(id, t), true)
		}
		return
	}
	for _, stream := range []string{"stdout", "stderr"} {
		ext := "out"
		if stream == "stderr" {
			ext = "err"
		}
		child := st.subplan && kind == "attempt" && stream == "stdout"
		st.tails = append(st.tails, &logTail{path: exec.LogPath(f.runDir, id, kind, n, ext), stream: stream, kind: kind, n: n,
			child: child, context: context && !child, runID: f.runID, step: id})
	}
}

// stopTails hands on what the step's followed files still hold, and stops.
func (f *Follower) stopTails(id string, st *followedStep) {
	for _, t := range st.tails {
		t.read(f.emitter(id, t), true)
	}
	st.tails = nil
}

// Finish ends the following: the last lines of the steps that were running,
// and, when the run's owner died without writing the run's end, that end as
// the event log reads it (interrupted) for the view to show. It returns the
// run's status.
func (f *Follower) Finish() (string, error) {
	for _, id := range f.order {
		if st := f.steps[id]; len(st.tails) > 0 {
			f.stopTails(id, st)
		}
	}
	v, err := View(f.log.stateDir, f.runID)
	if err != nil {
		return "", err
	}
	if !f.ended && f.events > 0 && v.Run.Status != exec.RunInProgress {
		typ := exec.EvWorkflowFailed
		if v.Run.Status == exec.RunSuccess {
			typ = exec.EvWorkflowCompleted
		}
		f.sink.Event(exec.Event{Type: typ, RunID: f.runID, Status: v.Run.Status, Time: f.last})
	}
	return v.Run.Status, nil
}

// Close lets go of the files followed.
func (f *Follower) Close() {
	for _, st := range f.steps {
		for _, t := range st.tails {
			t.close()
		}
		st.tails = nil
	}
}

// emitter hands a line of t on as the runner would: an output line, or on a
// sub-plan step's stdout, an event of its child run.
func (f *Follower) emitter(id string, t *logTail) func([]byte) {
	return func(line []byte) {
		if t.child && len(line) > 0 && line[0] == '{' {
			var ce exec.Event
			if json.Unmarshal(line, &ce) == nil && ce.Type != "" && ce.RunID != "" {
				f.sink.Event(exec.Event{Type: exec.EvChildEvent, RunID: f.runID, StepID: id, Attempt: t.n, Child: &ce})
				return
			}
		}
		f.sink.Event(exec.Event{Type: exec.EvStepOutput, RunID: f.runID, StepID: id, Attempt: t.n, Line: line,
			Data: &exec.StepOutput{Stream: t.stream, Kind: t.kind}})
	}
}

// logTail follows one log file (stdout or stderr of an attempt, handler or
// recovery script) as it grows, handing on complete lines. A file that is
// not there yet (its process is starting) is looked for again next time.
type logTail struct {
	path, stream, kind string
	n                  int
	child              bool // a sub-plan step's stdout: its child run's events
	context            bool // start with the last followContext lines, not the whole file
	runID, step        string

	f     *os.File
	off   int64
	split exec.LineSplitter
	done  bool
}

// read hands on the complete lines written since the last read, at most
// followReadMax bytes of them; when final, everything left, including a
// last line without its end, and the file is closed.
func (t *logTail) read(emit func([]byte), final bool) {
	if t.done {
		return
	}
	if final {
		defer t.close()
	}
	if t.f == nil {
		f, err := os.Open(t.path)
		if err != nil {
			return
		}
		t.f = f
		if t.context {
			t.catchUp(emit)
		}
	}
	buf := make([]byte, 64<<10)
	for got := 0; final || got < followReadMax; {
		n, err := t.f.ReadAt(buf, t.off)
		if n > 0 {
			t.off += int64(n)
			got += n
			t.split.Write(buf[:n], emit)
		}
		if err != nil || n == 0 {
			break
		}
	}
	if final {
		t.split.Flush(emit)
	}
}

// catchUp starts a file that was written before the follower came at its last
// followContext lines, saying where the earlier ones are.
func (t *logTail) catchUp(emit func([]byte)) {
	fi, err := t.f.Stat()
	if err != nil {
		return
	}
	size := fi.Size()
	start := max(size-followTailBytes, 0)
	buf := make([]byte, size-start)
	n, err := t.f.ReadAt(buf, start)
	if err != nil && !errors.Is(err, io.EOF) {
		return
	}
	buf = buf[:n]
	t.off = start + int64(n)
	end := bytes.LastIndexByte(buf, '\n')
	t.split.Reset()
	t.split.Write(buf[end+1:], emit) // a line without its end yet
	buf = buf[:end+1]
	skipped := false
	if start > 0 {
		i := bytes.IndexByte(buf, '\n') // the first line is cut: drop it
		buf, skipped = buf[i+1:], true
	}
	var lines [][]byte
	if len(buf) > 0 {
		lines = bytes.Split(buf[:len(buf)-1], []byte("\n"))
	}
	if len(lines) > followContext {
		lines, skipped = lines[len(lines)-followContext:], true
	}
	if skipped {
		emit([]byte("… earlier lines: " + t.logsCommand()))
	}
	for _, l := range lines {
		emit(bytes.Clone(bytes.TrimSuffix(l, []byte("\r"))))
	}
}

// logsCommand is the faber logs command that prints the whole file.
func (t *logTail) logsCommand() string {
	parts := []string{"faber logs", t.runID, t.step, "--attempt", strconv.Itoa(t.n)}
	if t.kind != "attempt" {
		parts = append(parts, "--"+t.kind)
	}
	if t.stream == "stderr" {
		parts = append(parts, "--stderr")
	}
	return strings.Join(parts, " ")
}

func (t *logTail) close() {
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
	t.done = true
}

// StoredPlan is the run's plan as it was stored when the run started, parsed
// to be shown (no program checks), or nil when it cannot be read back.
func StoredPlan(stateDir, runID string, meta state.Meta) *spec.Plan {
	data, err := state.ReadPlan(stateDir, runID)
	if err != nil || meta.PlanFile == "" {
		return nil
	}
	opts := spec.Options{Sets: meta.Sets, NoProgramChecks: true}
	for k := range meta.Sets {
		opts.SetKeys = append(opts.SetKeys, k)
	}
	plan, err := spec.Parse(meta.PlanFile, data, opts)
	if err != nil {
		return nil
	}
	if plan, err = SelectPart(plan, meta.Part); err != nil {
		return nil
	}
	return plan
}

// OwnerAlive reports whether a live process owns the run: while it does, the
// run's event log may still grow.
func OwnerAlive(stateDir, runID string) bool {
	o, err := state.OwnerOf(stateDir, runID)
	return err == nil && o.Alive
}
