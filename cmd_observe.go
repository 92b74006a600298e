package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	// The table is padded by display width: the status cell is coloured.
	out := bufio.NewWriter(g.stdout)
	tw := tui.NewTable(out)
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
	buf := bufio.NewWriter(g.stdout)
	fmt.Fprintf(buf, "run %s  plan %s  %s %s\n", out.RunID, out.Plan, s.Glyph(out.Status), s.Status(out.Status))
	if part != "" {
		fmt.Fprintf(buf, "part: %s (the other steps of the plan are left out)\n", part)
	}
	if u != nil {
		fmt.Fprintln(buf, u.CapacityText())
	}
	tw := tui.NewTable(buf) // padded by display width: the status cells are coloured
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
		row("", fanRow(st, n, items[st.ID], v.Run.Status == exec.RunInProgress), text)
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
	Raw      bool   `name:"raw" help:"A sub-plan step's log as it is: its child run's events, one JSON object per line (by default, its progress as plain lines)."`
	JSON     bool   `name:"json" help:"Same as --raw."`
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
	var out io.Writer = g.stdout
	if st.ChildRunID != "" && kind == "attempt" && stream == "out" && !c.Raw && !c.JSON {
		// A sub-plan step's output is its child run's events (--ui json):
		// shown as faber run --ui plain shows them.
		cp := &childProgress{w: g.stdout, s: tui.NewStyles(useColor(g, g.stdout)), runDir: state.RunDir(g.StateDir, st.ChildRunID)}
		defer func() {
			cp.flush()
			fmt.Fprintf(g.stderr, "faber: step %s ran its sub-plan as run %s: faber status %s shows its steps, faber logs %s STEP their output (--raw: the events)\n",
				c.Step, st.ChildRunID, st.ChildRunID, st.ChildRunID)
		}()
		out = cp
	}
	for {
		if _, err := io.Copy(out, f); err != nil {
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
			_, err := io.Copy(out, f)
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

// fanRow is a fan-out's join step as its row shows it: in_progress while
// its items run (the join stays pending until they are done), and once it
// ended, the span of its items as its duration (the join runs nothing: its
// own is 0 ms). active: the run goes on.
func fanRow(st *exec.StepState, n *exec.ItemCounts, items []*exec.StepState, active bool) *exec.StepState {
	shown := *st
	if st.Status == exec.StatusPending && (n.Running > 0 || active && n.Pending < n.Total) {
		shown.Status = exec.StatusInProgress
	}
	if st.FinishedAt == nil {
		return &shown
	}
	var first, last time.Time
	for _, it := range items {
		if it.FinishedAt == nil {
			continue
		}
		// from what run.LoadBrief keeps of an item: no start time
		start := it.FinishedAt.Add(-time.Duration(it.DurationMs) * time.Millisecond)
		if first.IsZero() || start.Before(first) {
			first = start
		}
		if it.FinishedAt.After(last) {
			last = *it.FinishedAt
		}
	}
	if !first.IsZero() {
		if d := last.Sub(first).Milliseconds(); d > shown.DurationMs {
			shown.DurationMs = d
		}
	}
	return &shown
}

// childProgress turns the log of a sub-plan step, its child run's events
// as JSON lines, into the plain progress lines faber run --ui plain prints:
// each step's output lines (from the child run's log files, once its
// attempt ended) before the line that ends the attempt; a grandchild run's
// lines prefixed with the step that runs it. A line that is no event is
// printed as it is.
type childProgress struct {
	w      io.Writer
	s      tui.Styles
	runDir string // the child run's
	buf    []byte
}

func (c *childProgress) Write(p []byte) (int, error) {
	c.buf = append(c.buf, p...)
	var out []byte
	for {
		i := bytes.IndexByte(c.buf, '\n')
		if i < 0 {
			break
		}
		out = c.line(out, c.buf[:i])
		c.buf = c.buf[i+1:]
	}
	if _, err := c.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// flush prints an unfinished last line.
func (c *childProgress) flush() {
	if len(c.buf) > 0 {
		c.w.Write(c.line(nil, c.buf))
		c.buf = nil
	}
}

func (c *childProgress) line(out, l []byte) []byte {
	var e exec.Event
	if len(l) == 0 || l[0] != '{' || json.Unmarshal(l, &e) != nil || e.Type == "" {
		return append(append(out, l...), '\n')
	}
	if e.ParentStepID != "" { // a grandchild run's event
		if pl := tui.PlainLine(e, c.s); pl != "" {
			out = append(out, c.s.Render(c.s.Dim, e.ParentStepID+" ↳ "+e.RunID)+" "+pl+"\n"...)
		}
		return out
	}
	if e.Type == exec.EvStepStatus {
		if d, ok := e.Data.(*exec.StepStatus); ok && d.AttemptEnd != nil {
			out = c.output(out, e.StepID, d.AttemptEnd.Attempt)
		}
	}
	if pl := tui.PlainLine(e, c.s); pl != "" {
		out = append(out, pl+"\n"...)
	}
	return out
}

// output appends the output lines of a child step's attempt, as plain
// progress shows them: "<step> | line", "<step> ! line" for stderr.
func (c *childProgress) output(out []byte, step string, attempt int) []byte {
	for _, stream := range []string{"out", "err"} {
		b, err := os.ReadFile(exec.LogPath(c.runDir, step, "attempt", attempt, stream))
		if err != nil || len(b) == 0 {
			continue
		}
		mark := " |"
		if stream == "err" {
			mark = " !"
		}
		prefix := c.s.Render(c.s.Dim, step+mark) + " "
		for _, l := range strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n") {
			out = append(out, prefix+strings.TrimSuffix(l, "\n")+"\n"...)
		}
	}
	return out
}
