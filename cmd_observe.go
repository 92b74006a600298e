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
	"github.com/faber-run/faber/internal/report"
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
	Status []string `name:"status" placeholder:"S" predictor:"runstatus" help:"Only runs with this status (repeatable, or a comma list)."`
	Plan   string   `name:"plan" placeholder:"NAME" help:"Only runs of the plan with this name."`
	Limit  int      `name:"limit" placeholder:"N" help:"At most N runs, newest first, after the other filters (child runs come along with their parent)."`
	All    bool     `name:"all" help:"Runs of every state dir faber has used (its registry) and this one, with a DIR column (--json: state_dir)."`
	Since  string   `name:"since" placeholder:"AGE|DATE" help:"Only runs started since then: an age (36h, 7d, 2w) or a date (2026-11-01, or an RFC 3339 time)."`
}

// Help explains list.
func (c *ListCmd) Help() string {
	return `Lists the runs of the state dir (--all: of every state dir faber has used),
newest first: id, plan, status, start and duration; child runs of sub-plan
steps under their parent. Filters combine: --status, --plan, --since, then
--limit.

Examples:
  faber list --status failed,pending_failed --since 7d
  faber list --plan build --limit 5
  faber list --all --since 2026-11-01
  faber list --json | jq -r '.[] | select(.status == "failed") | .run_id'`
}

// Run lists the runs, newest first.
func (c *ListCmd) Run(g *Globals) error {
	filter, err := run.NewListFilter(c.Status, c.Plan, c.Limit)
	if err != nil {
		return err
	}
	if c.Since != "" {
		if filter.Since, err = run.ParseSince(c.Since, time.Now()); err != nil {
			return err
		}
	}
	if c.All {
		return c.listAll(g, filter)
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
		if filter.Statuses != nil || filter.Plan != "" || !filter.Since.IsZero() {
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
			dur = exec.FormatDuration(it.FinishedAt.Sub(it.StartedAt))
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

// Help explains status, and what its columns measure.
func (c *StatusCmd) Help() string {
	return `The run's status comes first, then a row per step: its status, attempt,
exit code, duration, peak memory and error (a fan-out's items under it).
When the plan sets a budget, a Budgets block follows: each budget's
spending against its limits ($2.25/$5.00 · 12/20 turns), SPENT once one is
reached (--json: budgets, and spent on each step and attempt).

PEAK MEM is the last attempt's peak memory, with its limit when one was set
(164MiB/256MiB) and oom or timeout when that ended it. Unmarked, it is the
attempt's own (its cgroup, or Slurm's accounting); marked ≤ (≤38MiB) it is
an upper bound: without a cgroup it comes from wait4, which on Linux counts
faber's own memory until the step's program starts. Give a step memory: to
measure it exactly (README "Resources").

Examples:
  faber status --last
  faber status build-20260501T100000-1a2b --all      every item of a fan-out
  faber status --last --json | jq '.steps[] | select(.status != "success") | .id'`
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
		b = withETA(g, b)
		b = run.WithBudgets(b, run.BudgetsOfRun(g.StateDir, c.RunID))
		return run.WriteIndentedJSON(g.stdout, b)
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
	eta := ""
	if v.Run.Status == exec.RunInProgress {
		eta = "ETA: " + etaOf(g, v.Run.Plan, v.Steps).String()
	}
	if err := printStatusUsage(g, v, c.All, part, run.Usage(g.StateDir, &v.Run), eta); err != nil {
		return err
	}
	if err := printBudgets(g, run.BudgetsOfRun(g.StateDir, c.RunID)); err != nil {
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
	return printStatusUsage(g, v, all, part, nil, "")
}

// printStatusUsage is printStatus with what the owner of an active run
// says of its capacity (u; nil: nothing): a capacity line, and in the
// ERROR column of a step that waits for resources, why; and eta, when set,
// as a line of its own (an active run's ETA).
func printStatusUsage(g *Globals, v *exec.View, all bool, part string, u *exec.Usage, eta string) error {
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
	if eta != "" {
		fmt.Fprintln(buf, eta)
	}
	tw := tui.NewTable(buf) // padded by display width: the status cells are coloured
	fmt.Fprintln(tw, "STEP\tPHASE\tSTATUS\tATTEMPT\tEXIT\tDURATION\tPEAK MEM\tERROR")
	// A row is appended to one buffer, field by field: a run of 10,000
	// steps prints 10,000 of them.
	var line []byte
	glyphs := map[string]string{}
	row := func(indent string, st *exec.StepState, errText string) {
		glyph, ok := glyphs[st.Status]
		if !ok {
			glyph = s.Glyph(st.Status)
			glyphs[st.Status] = glyph
		}
		line = append(append(line[:0], indent...), st.ID...)
		line = append(append(line, '\t'), st.Phase...)
		line = append(append(append(append(line, '\t'), glyph...), ' '), st.Status...)
		line = strconv.AppendInt(append(line, '\t'), int64(st.Attempt), 10)
		line = append(line, '\t')
		if st.ExitCode != nil {
			line = strconv.AppendInt(line, int64(*st.ExitCode), 10)
		} else {
			line = append(line, '-')
		}
		line = append(line, '\t')
		if st.FinishedAt != nil {
			line = exec.AppendDuration(line, time.Duration(st.DurationMs)*time.Millisecond)
		} else {
			line = append(line, '-')
		}
		line = run.AppendPeak(append(line, '\t'), st)
		line = append(append(append(line, '\t'), errText...), '\n')
		tw.Write(line)
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

// printBudgets prints the Budgets block of faber status (README
// "Budgets"): a line per budget of the plan, with what its steps spent
// against its limits, and SPENT (which limit) once one is reached. Nothing
// when the plan sets none.
func printBudgets(g *Globals, lines []exec.BudgetLine) error {
	if len(lines) == 0 {
		return nil
	}
	s := tui.NewStyles(useColor(g, g.stdout))
	buf := bufio.NewWriter(g.stdout)
	fmt.Fprintln(buf, "Budgets")
	tw := tui.NewTable(buf)
	for _, l := range lines {
		if l.Reached == "" {
			fmt.Fprintf(tw, "  %s\t%s\n", l.Label(), l.Text())
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s (%s)\n", l.Label(), l.Text(), s.Render(s.Error, "SPENT"), l.Reached)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return buf.Flush()
}

// etaOf is the ETA of an active run of plan whose steps are given, from
// the plan's last finished runs (README "History").
func etaOf(g *Globals, plan string, steps []*exec.StepState) report.Estimate {
	h, err := report.LoadHistory(g.StateDir, plan, report.DefaultWindow, "")
	if err != nil {
		return report.Estimate{Reason: "the plan's past runs cannot be read: " + run.FirstLine(err.Error())}
	}
	return h.Expect().ETA(steps, time.Now())
}

// withETA adds "eta" to the status JSON b of an active run: {"seconds":
// N, "runs": M}, or {"reason": "..."} when there is none. Any other run's
// is b unchanged.
func withETA(g *Globals, b []byte) []byte {
	end := bytes.LastIndexByte(b, '}')
	if status, ok := runStatusOf(b); end < 0 || !ok || status != exec.RunInProgress {
		return b // not active: no ETA, and no need to decode every step
	}
	var st struct {
		Plan   string            `json:"plan"`
		Status string            `json:"status"`
		Steps  []*exec.StepState `json:"steps"`
	}
	if json.Unmarshal(b, &st) != nil || st.Status != exec.RunInProgress {
		return b
	}
	eta, err := json.Marshal(etaOf(g, st.Plan, st.Steps).JSON())
	if err != nil {
		return b
	}
	out := make([]byte, 0, len(b)+len(eta)+8)
	out = append(out, b[:end]...)
	out = append(out, `,"eta":`...)
	out = append(out, eta...)
	return append(out, b[end:]...)
}

// runStatusOf reads the run's status from status JSON b: a top-level field
// before "steps" (the run's fields come first), so that a finished run of
// 10,000 steps is not decoded whole to learn that it has no ETA (that took
// status --json from 23 to 67 ms). ok is false when b does not say.
func runStatusOf(b []byte) (status string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", false
		}
		switch t {
		case "status":
			if err := dec.Decode(&status); err != nil {
				return "", false
			}
			return status, true
		case "steps":
			return "", false
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return "", false
		}
	}
	return "", false
}

// EventsCmd prints the audit trail.
type EventsCmd struct {
	RunRef `embed:""`
	JSON   bool `name:"json" help:"One JSON object per line, exactly as stored."`
	Follow bool `short:"f" help:"Keep printing new events until the run ends."`
}

// Help explains events.
func (c *EventsCmd) Help() string {
	return `Prints a run's audit trail, oldest first: every transition and decision
faber took (attempts, rules matched, recovery scripts, handlers and what they
did, classifications, the end evaluation), one line each; --json prints the
events exactly as stored (README "Events").

Examples:
  faber events --last
  faber events --last --follow                 as the run goes on
  faber events --last --json | jq -c 'select(.type == "step_handler_invoked")'`
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
	warned, final := false, false
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
		if err := out.Flush(); err != nil || !c.Follow || final {
			return err
		}
		if ended {
			if !run.OwnerAlive(g.StateDir, c.RunID) {
				// One more read: what the owner wrote after the end
				// event before it exited (notify_failed).
				final = true
				continue
			}
		} else if o, err := state.OwnerOf(g.StateDir, c.RunID); err == nil && !o.Alive && len(lines) == 0 {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Help explains logs.
func (c *LogsCmd) Help() string {
	return `Prints the output of a step's attempt (the latest by default), or of its
on_failure handler or recovery script. When an earlier attempt failed, a
line on stderr names it; a step that never ran says why. A sub-plan step's
output is its child run's progress, as faber run --ui plain shows it.

Examples:
  faber logs --last build --stderr
  faber logs build-20260501T100000-1a2b test --attempt 1 --stderr
  faber logs --last deploy --handler              what the on_failure command printed
  faber logs --last train -f                      as it runs
  faber logs --last build --json | jq -r .text`
}

// LogsCmd prints a step's logs.
type LogsCmd struct {
	RunRef   `embed:""`
	Step     string `arg:"" optional:"" name:"step" predictor:"runstep" help:"The step id."`
	Attempt  int    `name:"attempt" placeholder:"N" help:"Which attempt (default: the latest); for --handler/--recovery, the failed attempt that triggered it."`
	Stderr   bool   `name:"stderr" help:"Print stderr instead of stdout."`
	Handler  bool   `name:"handler" help:"The on_failure handler's log."`
	Recovery bool   `name:"recovery" help:"The recovery script's log."`
	Follow   bool   `short:"f" help:"Keep printing as the log grows, until the attempt ends."`
	Raw      bool   `name:"raw" help:"A sub-plan step's log as it is: its child run's events, one JSON object per line (by default, its progress as plain lines)."`
	JSON     bool   `name:"json" help:"One JSON object per line: {run_id, step_id, kind, attempt, stream, text} per line of the log (of a sub-plan step's output: its child run's events, as --raw)."`
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
		return withCode(exitUsage, noLogError(c.RunID, st, kind))
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
	if c.JSON && out == g.stdout && st.ChildRunID == "" {
		jl := &jsonLines{w: g.stdout, base: logLine{RunID: c.RunID, StepID: c.Step, Kind: kind, Attempt: n, Stream: stream}}
		defer jl.flush()
		out = jl
	}
	if c.Attempt == 0 && kind == "attempt" {
		earlierAttempts(g, c.RunID, st, n, c.Stderr)
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

// noLogError says why a step has no log of a kind: it never ran (canceled,
// skipped, cached, still pending), or it has no handler or recovery log.
func noLogError(runID string, st *exec.StepState, kind string) error {
	if kind != "attempt" {
		return fmt.Errorf("step %q has no %s log: no %s ran for it", st.ID, kind, kind)
	}
	why := run.FirstLine(st.Error)
	switch st.Status {
	case exec.StatusCanceled:
		if why == "" {
			why = "canceled"
		}
		return fmt.Errorf("step %q never ran: %s", st.ID, why)
	case exec.StatusSkipped:
		return fmt.Errorf("step %q never ran: it was skipped (%s)", st.ID, orText(why, "its when: was false"))
	case exec.StatusCached:
		if c := st.CachedFrom; c != nil {
			return fmt.Errorf("step %q ran nothing in this run: it reuses run %s attempt %d (faber logs %s %s --attempt %d)", st.ID, c.RunID, c.Attempt, c.RunID, st.ID, c.Attempt)
		}
		return fmt.Errorf("step %q ran nothing in this run: it was cached", st.ID)
	case exec.StatusPending:
		return fmt.Errorf("step %q has not started yet (pending); faber logs %s %s --follow once it runs", st.ID, runID, st.ID)
	}
	return fmt.Errorf("step %q has no attempt log yet (%s)", st.ID, st.Status)
}

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// earlierAttempts tells, on stderr, that the log shown is the step's last
// attempt and which earlier ones failed, so that `logs STEP --stderr` of a
// step fixed by a retry or a handler points at the error it no longer shows.
func earlierAttempts(g *Globals, runID string, st *exec.StepState, n int, stderr bool) {
	var failed []string
	for _, a := range st.Attempts {
		// The attempts before this one that ran a process failed, by
		// their exit code or by their result file after an exit 0 (an
		// attempt that ran none, a rejection, has no log to point at).
		if a != nil && a.Attempt < n && a.ExitCode != nil {
			failed = append(failed, fmt.Sprintf("%d (exit %d)", a.Attempt, *a.ExitCode))
		}
	}
	if len(failed) == 0 {
		return
	}
	flag := ""
	if stderr {
		flag = " --stderr"
	}
	first := strings.SplitN(failed[0], " ", 2)[0]
	fmt.Fprintf(g.stderr, "faber: this is attempt %d of step %s; earlier attempt %s failed: faber logs %s %s --attempt %s%s\n",
		n, st.ID, strings.Join(failed, ", "), runID, st.ID, first, flag)
}

// logLine is one line of a log as logs --json prints it.
type logLine struct {
	RunID   string `json:"run_id"`
	StepID  string `json:"step_id"`
	Kind    string `json:"kind"`
	Attempt int    `json:"attempt"`
	Stream  string `json:"stream"`
	Text    string `json:"text"`
}

// jsonLines turns the log's bytes into one logLine per line; a last line
// without its newline comes out at flush.
type jsonLines struct {
	w    io.Writer
	base logLine
	part []byte
}

func (j *jsonLines) Write(b []byte) (int, error) {
	j.part = append(j.part, b...)
	for {
		i := bytes.IndexByte(j.part, '\n')
		if i < 0 {
			return len(b), nil
		}
		if err := j.line(j.part[:i]); err != nil {
			return 0, err
		}
		j.part = j.part[i+1:]
	}
}

func (j *jsonLines) line(b []byte) error {
	l := j.base
	l.Text = strings.TrimSuffix(string(b), "\r")
	out, err := json.Marshal(l)
	if err != nil {
		return err
	}
	_, err = j.w.Write(append(out, '\n'))
	return err
}

func (j *jsonLines) flush() {
	if len(j.part) > 0 {
		j.line(j.part)
		j.part = nil
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
	if story := run.Story(st); story != "" {
		return story // a step fixed by a retry or a handler: not just "success 2"
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
