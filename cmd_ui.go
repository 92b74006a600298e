package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/control"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/state"
	"github.com/faber-run/faber/tui"
)

// uiRunsPerDir is how many runs of each state dir faber ui shows: the
// newest, active or not.
const uiRunsPerDir = 50

// uiRecent says which runs faber ui shows, on its help screen.
var uiRecent = fmt.Sprintf("the %d newest runs of each state dir faber knows (faber list --all lists every one)", uiRunsPerDir)

// UICmd is faber ui.
type UICmd struct{}

// Help explains ui.
func (c *UICmd) Help() string {
	return `A live terminal view of the runs of every state dir faber has used (its
registry, see faber list --all) and of this one: the ` + fmt.Sprint(uiRunsPerDir) + ` newest runs of each
dir, refreshed every second, with their status, progress (steps ended/total),
start and duration.

Keys: ↑/↓/j/k/pgup/pgdn/g/G move; / filters (run id, plan, dir or status;
esc clears); s cycles the sort (started, status, plan, dir) and S reverses
it; a shows active runs only; enter opens a run: the live view of an active
run (q comes back), the status of one that ended; l shows the log of the
run's failing step (or its last); x x stops an active run as faber stop
does (resumable); ? shows every key; q quits, and the runs go on.

Needs a terminal: without one, faber list --all prints the same runs.

Examples:
  faber ui
  FABER_REGISTRY=off faber ui        only this state dir's runs
  faber prune --forget ~/old/.faber  one dir less on the board`
}

// Run shows the board until q.
func (c *UICmd) Run(g *Globals) error {
	if !attachTerminal(g) {
		return withCode(exitUsage, errors.New("faber ui needs a terminal; faber list --all prints the same runs"))
	}
	l := &uiLoader{g: g, done: map[string]uiDone{}}
	b := tui.NewBoard(tui.BoardOptions{
		Styles: tui.NewStyles(useColor(g, g.stdout)),
		Load:   l.load,
		Detail: func(r tui.BoardRow) string { return uiDetail(g, r) },
		Logs:   func(r tui.BoardRow) (string, string) { return uiLogs(r) },
		Stop:   func(r tui.BoardRow) error { return uiStop(r) },
		Recent: uiRecent,
	})
	for {
		r, err := tui.RunBoard(b, g.stdout, g.stdin)
		if err != nil {
			return fmt.Errorf("the board stopped (%v); faber list --all prints the runs", err)
		}
		if r == nil {
			return nil
		}
		// enter on an active run: its live view, as faber attach shows it;
		// q there comes back to the board.
		ag := *g
		ag.StateDir = r.Dir
		ac := &AttachCmd{RunRef: RunRef{RunID: r.RunID}, fromUI: true}
		if err := ac.Run(&ag); err != nil {
			var xe *exitError
			if !errors.As(err, &xe) || xe.err != nil {
				b.Note(fmt.Sprintf("%s: %v", r.RunID, err))
			}
		}
	}
}

// uiDone is the progress of a run that has ended: it does not change, so
// the board reads it once.
type uiDone struct {
	status      string
	done, total int
}

// uiLoader reads the board's rows: run.List of each state dir (summaries
// for runs that ended), and the step counts of each run, read again each
// time only while the run is active.
type uiLoader struct {
	g    *Globals
	mu   sync.Mutex
	done map[string]uiDone // by state dir + run id
}

func (l *uiLoader) load() ([]tui.BoardRow, []string) {
	var warns []string
	warn := func(msg string) { warns = append(warns, msg) }
	var rows []tui.BoardRow
	for _, dir := range knownStateDirs(l.g, warn) {
		items, err := run.List(dir, run.ListFilter{Limit: uiRunsPerDir})
		if err != nil {
			warns = append(warns, fmt.Sprintf("skipped %s: %v", shortDir(dir), err))
			continue
		}
		for _, it := range items {
			r := tui.BoardRow{Dir: dir, DirText: shortDir(dir), RunID: it.RunID, Plan: it.Plan, Status: it.Status,
				Started: it.StartedAt, Finished: it.FinishedAt}
			r.Active = it.Status == exec.RunInProgress && run.OwnerAlive(dir, it.RunID)
			r.Done, r.Total = l.progress(dir, it.RunID, it.Status, r.Active)
			rows = append(rows, r)
		}
	}
	return rows, warns
}

// progress is a run's steps that ended, and all its steps (fan-out items
// count in their step).
func (l *uiLoader) progress(dir, id, status string, active bool) (done, total int) {
	key := dir + "\x00" + id
	l.mu.Lock()
	d, ok := l.done[key]
	l.mu.Unlock()
	if ok && d.status == status && !active {
		return d.done, d.total
	}
	v, _, err := run.LoadBrief(dir, id)
	if err != nil {
		return 0, 0
	}
	for _, st := range v.Steps {
		if st.FanOut != "" {
			continue
		}
		total++
		if exec.Status(st.Status).Terminal() {
			done++
		}
	}
	if !active && status != exec.RunInProgress {
		l.mu.Lock()
		l.done[key] = uiDone{status, done, total}
		l.mu.Unlock()
	}
	return done, total
}

// uiDetail is what enter shows of a run that has ended: faber status.
func uiDetail(g *Globals, r tui.BoardRow) string {
	var out, errs bytes.Buffer
	sg := *g
	sg.StateDir, sg.stdout, sg.stderr, sg.NoColor = r.Dir, &out, &errs, true
	err := (&StatusCmd{RunRef: RunRef{RunID: r.RunID}}).Run(&sg)
	text := out.String() + errs.String()
	if err != nil {
		text += "faber: " + err.Error() + "\n"
	}
	return text + "\nstate dir: " + r.Dir + "\n"
}

// uiLogs is what l shows: the output of the latest attempt of the run's
// first failing step, or of the step that started last, stdout then stderr.
func uiLogs(r tui.BoardRow) (title, text string) {
	v, err := run.View(r.Dir, r.RunID) // the brief view has no start times
	if err != nil {
		return "logs of " + r.RunID, err.Error()
	}
	var pick *exec.StepState
	for _, st := range v.Steps {
		if exec.Status(st.Status).Failed() && st.Attempt > 0 {
			pick = st
			break
		}
	}
	if pick == nil {
		for _, st := range v.Steps {
			if st.StartedAt != nil && st.Attempt > 0 && (pick == nil || st.StartedAt.After(*pick.StartedAt)) {
				pick = st
			}
		}
	}
	if pick == nil {
		return "logs of " + r.RunID, "no step of this run has started"
	}
	runDir := state.RunDir(r.Dir, r.RunID)
	title = fmt.Sprintf("%s · step %s (%s) · attempt %d", r.RunID, pick.ID, pick.Status, pick.Attempt)
	var b bytes.Buffer
	for _, stream := range []string{"out", "err"} {
		fmt.Fprintf(&b, "── std%s ──\n", stream)
		data, err := tail(exec.LogPath(runDir, pick.ID, "attempt", pick.Attempt, stream), 1<<20)
		switch {
		case err != nil:
			fmt.Fprintf(&b, "(%v)\n", err)
		case len(data) == 0:
			b.WriteString("(empty)\n")
		default:
			b.Write(data)
			if data[len(data)-1] != '\n' {
				b.WriteByte('\n')
			}
		}
	}
	fmt.Fprintf(&b, "── faber logs %s %s [--stderr] --state-dir %s prints them whole ──\n", r.RunID, pick.ID, r.DirText)
	return title, b.String()
}

// tail reads at most the last n bytes of a file.
func tail(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return exec.FileTail(f, n), nil
}

// uiStop is x x: what faber stop --no-wait does to a run whose owner is
// alive.
func uiStop(r tui.BoardRow) error {
	o, err := state.OwnerOf(r.Dir, r.RunID)
	if err != nil {
		return err
	}
	if !o.Alive {
		return fmt.Errorf("its faber is gone; faber stop %s --state-dir %s ends what it left", r.RunID, r.Dir)
	}
	rep, ok, err := control.Send(state.RunDir(r.Dir, r.RunID), control.Msg{Op: "stop"})
	switch {
	case err != nil:
		return err
	case !ok:
		return signalOwner(o.PID, false)
	case !rep.OK:
		return errors.New(rep.Error)
	}
	return nil
}
