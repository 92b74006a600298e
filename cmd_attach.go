package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/state"
	"github.com/faber-run/faber/tui"
)

const (
	// attachPoll is how often attach reads the run's event log and the log
	// files of its running steps.
	attachPoll = 150 * time.Millisecond
	// attachContext is how many lines of output a step printed before attach
	// came are shown for each running attempt (and stream).
	attachContext = 200
	// attachTailBytes bounds what is read back to find those lines.
	attachTailBytes = 256 << 10
	// attachReadMax bounds what one poll reads of one log file, so that a
	// step writing fast cannot hold up the view; the rest comes next poll.
	attachReadMax = 1 << 20
	// attachLongLine is the length past which a line without its end is
	// handed on in pieces (as the runner does).
	attachLongLine = 64 << 10
)

// AttachCmd shows the live view of a run that another faber process owns.
type AttachCmd struct {
	RunRef `embed:""`
}

// Help explains attach.
func (c *AttachCmd) Help() string {
	return `Shows the live view of a run that another faber process runs (after q in
its own live view, or started from another terminal), rebuilt from the run's
event log; the log pane follows the running step's output, read from its log
files. q or Ctrl-C leave the view and do nothing to the run (faber stop
stops it); leaving exits 0.

When the run ends, the view gives way to the run's summary and attach exits
with the run's code, as its owner does (0 success, 1 failed, 3
pending_failed, 130 interrupted). A run that has already ended shows its
summary at once. Needs a terminal: without one, 'faber events RUN --follow'
prints the same events as lines.

Examples:
  faber attach --last
  faber watch dataset-create-2026`
}

// Run shows the view until the run ends or the user leaves.
func (c *AttachCmd) Run(g *Globals) error {
	if err := c.resolve(g); err != nil {
		return err
	}
	id := c.RunID
	if !attachTerminal(g) {
		return withCode(exitUsage, fmt.Errorf("attach needs a terminal; use faber events %s --follow", id))
	}
	// meta.json gives the plan; without it (damaged) the event log still
	// tells the steps.
	meta, err := state.ReadMeta(g.StateDir, id)
	if err != nil && !errors.Is(err, state.ErrDamaged) {
		return run.StoreError(err, id, g.StateDir)
	}
	steps, subplans := attachSteps(g, meta, id)
	opt := tui.Options{Plan: meta.Plan, RunID: id, Steps: steps, Styles: tui.NewStyles(useColor(g, g.stdout)),
		Attached: true, ResumeHint: true, OnClassify: classifier(g, id)}

	// The owner is looked at before the log is read: once it is gone, that
	// read got every event the run will ever have.
	alive := ownerAlive(g, id)
	caught := &collectSink{}
	f := newFollower(g.StateDir, id, caught)
	f.subplans = subplans
	if err := f.poll(); err != nil {
		return err
	}
	warnDamaged(g, f.damaged)
	if !alive {
		status, err := f.finish(g)
		if err != nil {
			return err
		}
		fmt.Fprint(g.stdout, tui.SummaryOf(opt, caught.evs))
		return codeOnly(exitCodeFor(status))
	}

	t := tui.New(g.stdout, g.stdin, opt)
	for _, e := range caught.evs {
		t.Event(e)
	}
	f.sink = t
	// In raw mode Ctrl-C is a key; a signal (kill, or one that came before
	// the terminal was set up) leaves the view the same way.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	tick := time.NewTicker(attachPoll)
	defer tick.Stop()
	for {
		select {
		case <-t.Left():
			f.close()
			if err := t.Err(); err != nil && !t.Detached() {
				return fmt.Errorf("the live view stopped (%v); faber events %s --follow shows the run as lines", err, id)
			}
			fmt.Fprintf(g.stdout, "left the live view of run %s; the run goes on\n"+
				"  faber attach %s   shows it again\n"+
				"  faber stop %s     stops it (resumable)\n", id, id, id)
			return nil
		case <-sigs:
			t.Leave()
			continue
		case <-tick.C:
		}
		alive := ownerAlive(g, id)
		if err := f.poll(); err != nil {
			t.Leave()
			<-t.Left()
			f.close()
			return err
		}
		if alive {
			continue
		}
		status, err := f.finish(g)
		t.Close()
		if err != nil {
			return err
		}
		return codeOnly(exitCodeFor(status))
	}
}

// attachTerminal reports whether stdin and stdout are terminals. Unlike
// --ui auto, CI does not matter (a person asked for the view), but a dumb
// terminal cannot draw it.
func attachTerminal(g *Globals) bool {
	if os.Getenv("TERM") == "dumb" {
		return false
	}
	in, ok1 := g.stdin.(*os.File)
	out, ok2 := g.stdout.(*os.File)
	return ok1 && ok2 && isatty.IsTerminal(in.Fd()) && isatty.IsTerminal(out.Fd())
}

func ownerAlive(g *Globals, runID string) bool {
	o, err := state.OwnerOf(g.StateDir, runID)
	return err == nil && o.Alive
}

// attachSteps are the run's steps as its stored plan names them, with their
// handlers, and which of them are sub-plan steps. When the plan cannot be
// read back, the view takes the steps from the run_started event.
func attachSteps(g *Globals, meta state.Meta, runID string) ([]tui.StepDef, map[string]bool) {
	data, err := state.ReadPlan(g.StateDir, runID)
	if err != nil || meta.PlanFile == "" {
		return nil, nil
	}
	opts := spec.Options{Sets: meta.Sets, NoProgramChecks: true} // attach runs nothing
	for k := range meta.Sets {
		opts.SetKeys = append(opts.SetKeys, k)
	}
	plan, err := spec.Parse(meta.PlanFile, data, opts)
	if err != nil {
		return nil, nil
	}
	subplans := map[string]bool{}
	for _, s := range plan.Steps {
		if s.PlanPath != "" {
			subplans[s.ID] = true
		}
	}
	return stepDefs(plan), subplans
}

// collectSink keeps the events it gets.
type collectSink struct{ evs []exec.Event }

func (c *collectSink) Event(e exec.Event) { c.evs = append(c.evs, e) }

// follower reads a run that another process owns, as its owner's live view
// sees it: the events of its event log, and the output lines of its running
// steps, which are only in their log files.
type follower struct {
	stateDir, runID, runDir string
	sink                    exec.Sink
	subplans                map[string]bool // sub-plan steps, from the plan

	after    int64
	steps    map[string]*followedStep
	order    []string // step ids, as first seen
	caughtUp bool     // the events there were when attach came are read
	ended    bool     // the run's last session wrote its end event
	events   int
	last     time.Time // of the newest event
	damaged  *state.DamagedError
}

type followedStep struct {
	status  string
	attempt int
	subplan bool
	tails   []*logTail
}

func newFollower(stateDir, runID string, sink exec.Sink) *follower {
	return &follower{stateDir: stateDir, runID: runID, runDir: state.RunDir(stateDir, runID), sink: sink,
		steps: map[string]*followedStep{}}
}

// poll hands on the events logged since the last poll, then the lines the
// running steps wrote. The first poll reads every event there is, then the
// last lines each running step printed before.
func (f *follower) poll() error {
	log, err := state.ReadLog(f.stateDir, f.runID, f.after)
	if err != nil {
		if errors.Is(err, state.ErrDamaged) || errors.Is(err, state.ErrNotFound) {
			return run.StoreError(err, f.runID, f.stateDir)
		}
		return withCode(exitState, err)
	}
	if f.damaged == nil {
		f.damaged = log.Damaged
	}
	for _, l := range log.Events {
		var e exec.Event
		if err := json.Unmarshal(l, &e); err != nil {
			return withCode(exitState, fmt.Errorf("run %s: bad event: %w", f.runID, err))
		}
		f.after = e.Seq
		f.apply(e)
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
func (f *follower) apply(e exec.Event) {
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
// was running before attach came; show its last attachContext lines (all of
// a sub-plan step's stdout, which carries its child run's events, so that
// the child's steps show under it). A sub-plan step that is done has its last
// attempt's stdout read once, for the same reason.
func (f *follower) startTails(id string, st *followedStep, context bool) {
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
func (f *follower) stopTails(id string, st *followedStep) {
	for _, t := range st.tails {
		t.read(f.emitter(id, t), true)
	}
	st.tails = nil
}

// finish ends the following: the last lines of the steps that were running,
// and, when the run's owner died without writing the run's end, that end as
// the event log reads it (interrupted) for the view to show. It returns the
// run's status.
func (f *follower) finish(g *Globals) (string, error) {
	for _, id := range f.order {
		if st := f.steps[id]; len(st.tails) > 0 {
			f.stopTails(id, st)
		}
	}
	v, err := run.View(g.StateDir, f.runID)
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

// close lets go of the files followed.
func (f *follower) close() {
	for _, st := range f.steps {
		for _, t := range st.tails {
			t.close()
		}
		st.tails = nil
	}
}

// emitter hands a line of t on as the runner would: an output line, or on a
// sub-plan step's stdout, an event of its child run.
func (f *follower) emitter(id string, t *logTail) func([]byte) {
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
	context            bool // start with the last attachContext lines, not the whole file
	runID, step        string

	f       *os.File
	off     int64
	partial []byte
	split   bool // the current line was handed on in pieces already
	done    bool
}

// read hands on the complete lines written since the last read, at most
// attachReadMax bytes of them; when final, everything left, including a
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
	for got := 0; final || got < attachReadMax; {
		n, err := t.f.ReadAt(buf, t.off)
		if n > 0 {
			t.off += int64(n)
			got += n
			t.lines(buf[:n], emit)
		}
		if err != nil || n == 0 {
			break
		}
	}
	if final && len(t.partial) > 0 {
		emit(bytes.Clone(t.partial))
		t.partial = nil
	}
}

// catchUp starts a file that was written before attach came at its last
// attachContext lines, saying where the earlier ones are.
func (t *logTail) catchUp(emit func([]byte)) {
	fi, err := t.f.Stat()
	if err != nil {
		return
	}
	size := fi.Size()
	start := max(size-attachTailBytes, 0)
	buf := make([]byte, size-start)
	n, err := t.f.ReadAt(buf, start)
	if err != nil && !errors.Is(err, io.EOF) {
		return
	}
	buf = buf[:n]
	t.off = start + int64(n)
	end := bytes.LastIndexByte(buf, '\n')
	t.partial = append([]byte(nil), buf[end+1:]...)
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
	if len(lines) > attachContext {
		lines, skipped = lines[len(lines)-attachContext:], true
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

// lines splits a chunk into lines as the runner does: without their end
// (nor a \r before it), a very long line in pieces.
func (t *logTail) lines(chunk []byte, emit func([]byte)) {
	for {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			t.partial = append(t.partial, chunk...)
			if len(t.partial) > attachLongLine {
				emit(t.partial)
				t.partial, t.split = nil, true
			}
			return
		}
		line := chunk[:i]
		if len(t.partial) > 0 {
			line = append(t.partial, line...)
			t.partial = nil
		}
		if !t.split || len(line) > 0 {
			emit(bytes.Clone(bytes.TrimSuffix(line, []byte("\r"))))
		}
		t.split = false
		chunk = chunk[i+1:]
	}
}

func (t *logTail) close() {
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
	t.done = true
}
