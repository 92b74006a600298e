package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/state"
	"github.com/faber-run/faber/tui"
)

// warnDamaged tells, on stderr, that what a reader shows comes from the event
// log because the run's store is damaged.
func warnDamaged(g *Globals, de *state.DamagedError) {
	if de != nil {
		fmt.Fprintf(g.stderr, "faber: warning: %s; shown from its event log (events.jsonl); it cannot be resumed, reset or classified\n", de)
	}
}

// ListCmd lists runs.
type ListCmd struct {
	JSON   bool     `name:"json" help:"Print a JSON array of {run_id, plan, status, started_at, finished_at}."`
	Status []string `name:"status" placeholder:"S" help:"Only runs with this status (repeatable, or a comma list)."`
	Plan   string   `name:"plan" placeholder:"NAME" help:"Only runs of the plan with this name."`
	Limit  int      `name:"limit" placeholder:"N" help:"At most N runs, newest first, after the other filters (child runs come along with their parent)."`
}

// Run lists the runs, newest first.
func (c *ListCmd) Run(g *Globals) error {
	filter, err := run.NewListFilter(c.Status, c.Plan, c.Limit)
	if err != nil {
		return err
	}
	items, err := run.List(g.StateDir, filter)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(g.stdout, items)
	}
	if len(items) == 0 {
		matching := ""
		if filter.Statuses != nil || filter.Plan != "" {
			matching = "matching "
		}
		fmt.Fprintf(g.stdout, "no %sruns in %s\n", matching, g.StateDir)
		return nil
	}
	s := tui.NewStyles(useColor(g, g.stdout))
	// tabwriter writes cell by cell: one write per cell of 10,000 rows
	// costs more than reading the runs.
	out := bufio.NewWriter(g.stdout)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tPLAN\tSTATUS\tSTARTED\tDURATION")
	// Child runs of sub-plan steps are listed under their parent.
	children := map[string][]run.ListItem{}
	known := map[string]bool{}
	for _, it := range items {
		known[it.RunID] = true
	}
	for _, it := range items {
		if it.ParentRunID != "" && known[it.ParentRunID] {
			children[it.ParentRunID] = append(children[it.ParentRunID], it)
		}
	}
	var row func(it run.ListItem, indent string)
	row = func(it run.ListItem, indent string) {
		dur := "-"
		if it.FinishedAt != nil {
			dur = it.FinishedAt.Sub(it.StartedAt).Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s %s\t%s\t%s\n", indent, it.RunID, it.Plan, s.Glyph(it.Status), it.Status, it.StartedAt.Local().Format("2006-01-02 15:04:05"), dur)
		for _, c := range children[it.RunID] {
			row(c, indent+"  └ ")
		}
	}
	for _, it := range items {
		if it.ParentRunID == "" || !known[it.ParentRunID] {
			row(it, "")
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return out.Flush()
}

func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return withCode(exitState, err)
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// StatusCmd shows one run.
type StatusCmd struct {
	RunRef `embed:""`
	JSON   bool `name:"json" help:"Print the run and every step as JSON."`
	All    bool `name:"all" help:"List every item of a fan-out step (by default those that did not succeed, at most 20)."`
}

// maxItemRows is how many items of one fan-out faber status lists.
const maxItemRows = 20

// Run prints the run's status. A run closed cleanly is read from the view
// its owner left (run.LoadBrief, run.StatusJSON), any other from its log.
func (c *StatusCmd) Run(g *Globals) error {
	if err := c.resolve(g); err != nil {
		return err
	}
	if c.JSON {
		b, de, err := run.StatusJSON(g.StateDir, c.RunID)
		if err != nil {
			return err
		}
		warnDamaged(g, de)
		out := run.IndentJSON(make([]byte, 0, len(b)+len(b)/2), b)
		_, err = g.stdout.Write(append(out, '\n'))
		return err
	}
	v, de, err := run.LoadBrief(g.StateDir, c.RunID)
	if err != nil {
		return err
	}
	warnDamaged(g, de)
	part := ""
	if meta, err := state.ReadMeta(g.StateDir, c.RunID); err == nil {
		part = run.PartText(meta.Part)
	}
	if err := printStatusUsage(g, v, c.All, part, run.Usage(g.StateDir, &v.Run)); err != nil {
		return err
	}
	if v.Run.Status == exec.RunInterrupted {
		jobsLeft(g, c.RunID) // batch jobs that may outlive the faber that died
	}
	return nil
}

// printStatus prints the status table of a view: every field of a step it
// shows must be one that run.LoadBrief keeps. part is the part of its plan
// the run runs, as run.PartText says it ("" for the whole plan).
func printStatus(g *Globals, v *exec.View, all bool, part string) error {
	return printStatusUsage(g, v, all, part, nil)
}

// printStatusUsage is printStatus with what the owner of an active run
// says of its capacity (u; nil: nothing): a capacity line, and in the
// ERROR column of a step that waits for resources, why.
func printStatusUsage(g *Globals, v *exec.View, all bool, part string, u *exec.Usage) error {
	out := run.StatusOf(v)
	why := run.Waiting(u)
	note := func(st *exec.StepState) string {
		n := stepNote(st)
		if w := why[st.ID]; w != "" {
			if n == "" {
				return w
			}
			return w + "; " + n
		}
		return n
	}
	steps := out.Steps
	s := tui.NewStyles(useColor(g, g.stdout))
	// tabwriter writes cell by cell: buffered, as list does.
	buf := bufio.NewWriter(g.stdout)
	fmt.Fprintf(buf, "run %s  plan %s  %s %s\n", out.RunID, out.Plan, s.Glyph(out.Status), s.Status(out.Status))
	if part != "" {
		fmt.Fprintf(buf, "part: %s (the other steps of the plan are left out)\n", part)
	}
	if u != nil {
		fmt.Fprintln(buf, u.CapacityText())
	}
	tw := tabwriter.NewWriter(buf, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tPHASE\tSTATUS\tATTEMPT\tEXIT\tDURATION\tPEAK MEM\tERROR")
	row := func(indent string, st *exec.StepState, errText string) {
		exit := "-"
		if st.ExitCode != nil {
			exit = strconv.Itoa(*st.ExitCode)
		}
		dur := "-"
		if st.FinishedAt != nil {
			dur = (time.Duration(st.DurationMs) * time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s %s\t%d\t%s\t%s\t%s\t%s\n", indent, st.ID, st.Phase, s.Glyph(st.Status), st.Status, st.Attempt, exit, dur, run.PeakText(st), errText)
		if st.ChildRunID != "" {
			fmt.Fprintf(tw, "%s  └ child run %s: %s\n", indent, st.ChildRunID, childSummary(g, st.ChildRunID))
		}
	}
	// Items of a fan-out show under their step, with counts; those that
	// succeeded only with --all.
	counts, items := run.FanOuts(steps)
	for _, st := range steps {
		if st.FanOut != "" {
			continue
		}
		n := counts[st.ID]
		if n == nil {
			row("", st, note(st))
			continue
		}
		text := n.String()
		if s := exec.Status(st.Status); s != exec.StatusPending && !s.Satisfies() && n.Failed == 0 {
			text += "; " + run.FirstLine(st.Error)
		}
		row("", st, text)
		shown, hidden := 0, 0
		for _, it := range items[st.ID] {
			switch {
			case all:
			case exec.Status(it.Status).Succeeded():
				continue
			case shown == maxItemRows:
				hidden++
				continue
			}
			shown++
			row("  ", it, note(it))
		}
		if hidden > 0 {
			fmt.Fprintf(tw, "  … %d more (faber status --all)\n", hidden)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return buf.Flush()
}

// EventsCmd prints the audit trail.
type EventsCmd struct {
	RunRef `embed:""`
	JSON   bool `name:"json" help:"One JSON object per line, exactly as stored."`
	Follow bool `short:"f" help:"Keep printing new events until the run ends."`
}

// Run prints events oldest first.
func (c *EventsCmd) Run(g *Globals) error {
	if err := c.resolve(g); err != nil {
		return err
	}
	// No meta.json needed: the event log is what is left to read of a run
	// whose meta.json is damaged.
	s := tui.NewStyles(useColor(g, g.stdout))
	out := bufio.NewWriter(g.stdout)
	log := run.NewEventLog(g.StateDir, c.RunID)
	warned := false
	for {
		lines, err := log.Read()
		if !warned && log.Opened() {
			warnDamaged(g, log.Damaged())
			warned = true
		}
		ended := false
		for _, l := range lines {
			e := l.Event
			if c.JSON {
				out.Write(l.Line)
				out.WriteByte('\n')
			} else if line := tui.PlainLine(e, s); line != "" {
				fmt.Fprintf(out, "%4d %s\n", e.Seq, line)
			} else {
				fmt.Fprintf(out, "%4d %s %s %s\n", e.Seq, e.Time.Local().Format("15:04:05"), e.Type, e.StepID)
			}
			if e.Type == exec.EvWorkflowCompleted || e.Type == exec.EvWorkflowFailed {
				ended = true
			}
		}
		if err != nil {
			return err
		}
		// A write error (a full disk, a closed pipe) ends the command.
		if err := out.Flush(); err != nil || !c.Follow {
			return err
		}
		if ended {
			if !run.OwnerAlive(g.StateDir, c.RunID) {
				return nil
			}
		} else if o, err := state.OwnerOf(g.StateDir, c.RunID); err == nil && !o.Alive && len(lines) == 0 {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// LogsCmd prints a step's logs.
type LogsCmd struct {
	RunRef   `embed:""`
	Step     string `arg:"" optional:"" name:"step" help:"The step id."`
	Attempt  int    `name:"attempt" placeholder:"N" help:"Which attempt (default: the latest); for --handler/--recovery, the failed attempt that triggered it."`
	Stderr   bool   `name:"stderr" help:"Print stderr instead of stdout."`
	Handler  bool   `name:"handler" help:"The on_failure handler's log."`
	Recovery bool   `name:"recovery" help:"The recovery script's log."`
	Follow   bool   `short:"f" help:"Keep printing as the log grows, until the attempt ends."`
}

// Run prints the log file.
func (c *LogsCmd) Run(g *Globals) error {
	if err := lastWithStep(c.Last, &c.RunID, &c.Step); err != nil {
		return err
	}
	if c.Handler && c.Recovery {
		return withCode(exitUsage, fmt.Errorf("--handler and --recovery exclude each other"))
	}
	v, err := c.view(g)
	if err != nil {
		return err
	}
	var st *exec.StepState
	for _, s := range v.Steps {
		if s.ID == c.Step {
			st = s
		}
	}
	if st == nil {
		return withCode(exitUsage, fmt.Errorf("run %s has no step %q", c.RunID, c.Step))
	}
	kind := "attempt"
	if c.Handler {
		kind = "handler"
	} else if c.Recovery {
		kind = "recovery"
	}
	stream := "out"
	if c.Stderr {
		stream = "err"
	}
	n := c.Attempt
	runDir := state.RunDir(g.StateDir, c.RunID)
	if n == 0 {
		n = latest(runDir, c.Step, kind, stream, st.Attempt)
	}
	if n == 0 {
		return withCode(exitUsage, fmt.Errorf("step %q has no %s log yet", c.Step, kind))
	}
	path := exec.LogPath(runDir, c.Step, kind, n, stream)
	f, err := os.Open(path)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("no %s log %d for step %q (%s)", kind, n, c.Step, filepath.Base(path)))
	}
	defer f.Close()
	for {
		if _, err := io.Copy(g.stdout, f); err != nil {
			return withCode(exitState, err)
		}
		if !c.Follow {
			return nil
		}
		v, err := run.View(g.StateDir, c.RunID)
		if err != nil {
			return err
		}
		running := false
		for _, s := range v.Steps {
			if s.ID == c.Step && s.Attempt == n && exec.Status(s.Status).Active() {
				running = true
			}
		}
		if !running || v.Run.Status != exec.RunInProgress {
			_, err := io.Copy(g.stdout, f)
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// latest finds the highest-numbered log of a kind, not above max for attempts.
func latest(runDir, step, kind, stream string, max int) int {
	best := 0
	entries, _ := os.ReadDir(filepath.Join(runDir, "logs", step))
	for _, e := range entries {
		var n int
		if _, err := fmt.Sscanf(e.Name(), kind+"-%d."+stream, &n); err == nil && e.Name() == fmt.Sprintf("%s-%d.%s", kind, n, stream) && n > best {
			best = n
		}
	}
	return best
}

// stepNote is the ERROR column of a step: its error, or for a cached step
// the earlier attempt it reuses.
func stepNote(st *exec.StepState) string {
	if st.Status == exec.StatusCached && st.CachedFrom != nil {
		return fmt.Sprintf("cached: run %s attempt %d exited 0", st.CachedFrom.RunID, st.CachedFrom.Attempt)
	}
	if st.Status == exec.StatusAwaitingApproval && st.Error == "" {
		// Only what the brief view keeps (no gate, no prompt): the table
		// must read the same from a view and from a replay of the log.
		return "awaiting approval (faber pending shows the prompt)"
	}
	return run.FirstLine(st.Error)
}

// childSummary is one line about a child run: its status and step counts.
func childSummary(g *Globals, runID string) string {
	v, _, err := run.LoadBrief(g.StateDir, runID)
	if err != nil {
		return "not started"
	}
	ok := 0
	for _, st := range v.Steps {
		if exec.Status(st.Status).Succeeded() {
			ok++
		}
	}
	return fmt.Sprintf("%s (%d/%d steps succeeded)", v.Run.Status, ok, len(v.Steps))
}
