package tui

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/faber-run/faber/exec"
)

const (
	// flushEvery is how often queued events reach the program, as one
	// message: events change the screen at most this often, so a burst of
	// thousands of transitions costs a few redraws, not thousands.
	flushEvery = 100 * time.Millisecond
	// maxPendingLines bounds the output lines waiting for the next flush;
	// past it lines are dropped (and counted). Transitions are never dropped.
	maxPendingLines = 5000
	// fps caps how often bubbletea repaints.
	fps = 20
	// stuckAfter is how long Close waits for a program that no longer
	// answers (a terminal that does not read) before it kills it.
	stuckAfter = 10 * time.Second
)

// TUI is the live terminal view of a run, as an exec.Sink: events are queued
// without blocking and handed to a bubbletea program in batches. Close ends
// the program, restores the terminal and prints the summary.
type TUI struct {
	out   io.Writer
	model *Model
	prog  *tea.Program

	mu       sync.Mutex
	queue    []exec.Event
	lines    int
	dropped  map[string]int
	closed   bool
	fallback *Plain // set when the program ended before the run did

	stop     chan struct{}
	pumpDone chan struct{}
	runDone  chan struct{}
	runErr   error
	once     sync.Once
	closeErr error

	// decisions is open while the session may wait for a decision here
	// (Decisions); nil when the view takes none.
	decisions   chan struct{}
	decidedOnce sync.Once
	summarized  bool // Close printed the summary, with its hints

	// foreground is set for the view of a run that a background process
	// owns for this one (NewForeground): q leaves it with nothing printed,
	// the caller says how to come back.
	foreground bool
}

// New starts the live view of a run on out, the terminal (in the alternate
// screen), reading keys from in (nil: no keys).
func New(out io.Writer, in io.Reader, opt Options) *TUI {
	t := &TUI{
		out:      out,
		model:    NewModel(opt),
		dropped:  map[string]int{},
		stop:     make(chan struct{}),
		pumpDone: make(chan struct{}),
		runDone:  make(chan struct{}),
	}
	if opt.WaitDecisions && !opt.Attached {
		t.decisions = make(chan struct{})
		t.model.decideLater = t.endDecisions
	}
	// Signals stay with main (SIGINT/SIGTERM stop the run, not the view);
	// in raw mode Ctrl-C is a key, handled by the model.
	t.prog = tea.NewProgram(t.model, tea.WithOutput(out), tea.WithInput(in), tea.WithAltScreen(),
		tea.WithoutSignalHandler(), tea.WithFPS(fps))
	go func() {
		defer close(t.runDone)
		_, t.runErr = t.prog.Run()
	}()
	go t.pump()
	return t
}

// Event queues an event; it never blocks. Output lines beyond
// maxPendingLines per flush are dropped; transitions never are.
func (t *TUI) Event(e exec.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fallback != nil {
		t.fallback.Event(e)
		return
	}
	if t.closed {
		return
	}
	if e.Type == exec.EvStepOutput {
		if t.lines >= maxPendingLines {
			t.dropped[e.StepID]++
			return
		}
		t.lines++
	}
	t.queue = append(t.queue, e)
}

// pump hands the queue to the program every flushEvery.
func (t *TUI) pump() {
	defer close(t.pumpDone)
	tk := time.NewTicker(flushEvery)
	defer tk.Stop()
	for {
		select {
		case <-tk.C:
			t.flush()
		case <-t.stop:
			t.flush()
			return
		case <-t.runDone:
			t.endDecisions() // nobody is left to decide
			t.toPlain()
			return
		}
	}
}

func (t *TUI) flush() {
	t.mu.Lock()
	evs, dropped := t.queue, t.dropped
	if len(evs) == 0 && len(dropped) == 0 {
		t.mu.Unlock()
		return
	}
	t.queue, t.lines = nil, 0
	if len(dropped) > 0 {
		t.dropped = map[string]int{}
	} else {
		dropped = nil
	}
	t.mu.Unlock()
	t.prog.Send(eventsMsg{events: evs, dropped: dropped})
}

// toPlain takes over when the program ended before the run (it could not
// set up the terminal): the rest of the run is shown as plain lines.
func (t *TUI) toPlain() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	switch {
	case t.model.opt.Attached, t.foreground && t.model.Detached():
		// faber attach, or q in faber run's view of its background
		// owner: leaving the view is all there is to do.
		t.closed = true
		t.queue = nil
		return
	case t.runErr != nil:
		fmt.Fprintf(t.out, "faber: the live view stopped (%v); plain progress follows\n", t.runErr)
	case t.model.Detached():
		id := t.model.opt.RunID
		fmt.Fprintf(t.out, "faber: left the live view; run %s goes on here (pid %d).\n"+
			"  back to it:  faber attach %s  (from any terminal)\n"+
			"  stop it:     faber stop %s, or Ctrl-C here\n", id, os.Getpid(), id, id)
	default:
		fmt.Fprintln(t.out, "faber: left the live view; plain progress follows")
	}
	t.fallback = NewPlain(t.out, t.model.st, true)
	for _, e := range t.queue {
		t.fallback.Event(e)
	}
	t.queue = nil
}

// Close lets the program draw the final state, ends it (which restores the
// terminal), then prints the summary on the normal screen. It returns once
// all of that is done.
func (t *TUI) Close() error {
	t.once.Do(func() {
		t.endDecisions()
		t.mu.Lock()
		fb := t.fallback
		t.closed = true
		t.mu.Unlock()
		if fb != nil {
			t.closeErr = fb.Close()
			return
		}
		close(t.stop)
		deadline := time.NewTimer(stuckAfter)
		defer deadline.Stop()
		select {
		case <-t.pumpDone:
		case <-deadline.C:
			t.prog.Kill()
			<-t.pumpDone
		}
		t.mu.Lock()
		fb = t.fallback
		t.mu.Unlock()
		if fb != nil {
			t.closeErr = fb.Close()
			return
		}
		go t.prog.Send(endMsg{})
		select {
		case <-t.runDone:
		case <-deadline.C:
			t.prog.Kill()
			<-t.runDone
		}
		sum := t.model.Summary()
		t.summarized = sum != ""
		_, t.closeErr = io.WriteString(t.out, sum)
	})
	return t.closeErr
}

// Left is closed when the live view has ended: the run's end, q, or a
// terminal that failed. faber attach waits on it.
func (t *TUI) Left() <-chan struct{} { return t.runDone }

// Decisions is for exec.Runner.WaitDecisions: open while a person at this
// view can decide on pending_failed steps (Options.WaitDecisions), closed
// when q leaves the decision for later or the view has ended (q while steps
// run, a terminal that failed, Close). Nil when the view takes no decision.
func (t *TUI) Decisions() <-chan struct{} { return t.decisions }

func (t *TUI) endDecisions() {
	if t.decisions != nil {
		t.decidedOnce.Do(func() { close(t.decisions) })
	}
}

// Summarized reports whether Close printed the summary, which ends with the
// log and classify hints (EndHints): the caller then does not repeat them.
// Valid once Close returned.
func (t *TUI) Summarized() bool { return t.summarized }
