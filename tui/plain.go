package tui

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/faber-run/faber/exec"
)

// Plain writes one line per transition, and each output line of a step
// prefixed with its id. Whole lines are written at once, so output of
// parallel steps never interleaves mid-line.
type Plain struct {
	w      *bufio.Writer
	mu     sync.Mutex
	q      *queue
	styles Styles
	output bool
	// fans are the fan-outs whose items started, by fan-out step id: when
	// the first started and the last ended (only write touches them).
	fans map[string]*fanSpan
}

// fanSpan is when a fan-out's first item started and its last ended.
type fanSpan struct{ start, end time.Time }

// NewPlain returns a plain renderer writing to w; output selects whether
// step output lines are shown.
func NewPlain(w io.Writer, styles Styles, output bool) *Plain {
	p := &Plain{w: bufio.NewWriterSize(w, 64<<10), styles: styles, output: output}
	p.q = newQueue(p.write, func(n int) {
		fmt.Fprintf(p.w, "… %d output lines dropped (the terminal was too slow); see faber logs\n", n)
	}, func() { p.w.Flush() })
	return p
}

// Event queues an event; it never blocks.
func (p *Plain) Event(e exec.Event) {
	if e.Type == exec.EvStepOutput && !p.output {
		return
	}
	p.q.put(e)
}

// Close flushes everything queued.
func (p *Plain) Close() error {
	p.q.close()
	return p.w.Flush()
}

func (p *Plain) write(e exec.Event) {
	line := plainLine(e, p.styles, p.span(e))
	if line == "" {
		return
	}
	p.w.WriteString(line)
	p.w.WriteByte('\n')
	// The queue flushes after each batch: a person watching sees a line as
	// soon as the writer catches up, and a burst costs one write, not one
	// per line.
}

// span follows the items of fan-outs (ids <fan>[<key>]) and, on the event
// that ends a fan-out's join step, is the span of its items (0 otherwise):
// the join runs nothing, so its own duration is 0 ms.
func (p *Plain) span(e exec.Event) time.Duration {
	if e.Type != exec.EvStepStatus {
		return 0
	}
	if fan, ok := itemFan(e.StepID); ok {
		if p.fans == nil {
			p.fans = map[string]*fanSpan{}
		}
		f := p.fans[fan]
		if f == nil {
			f = &fanSpan{}
			p.fans[fan] = f
		}
		if e.Status == exec.StatusInProgress {
			t := timeOr(data[exec.StepStatus](e).StartedAt, e.Time)
			if f.start.IsZero() || t.Before(f.start) {
				f.start = t
			}
		} else if exec.Terminal(e.Status) && e.Time.After(f.end) {
			f.end = e.Time
		}
		return 0
	}
	f := p.fans[e.StepID]
	if f == nil || f.start.IsZero() || !exec.Terminal(e.Status) {
		return 0
	}
	end := f.end
	if end.Before(f.start) {
		end = e.Time
	}
	return end.Sub(f.start)
}

// itemFan is the fan-out step of an item step id <fan>[<key>].
func itemFan(id string) (string, bool) {
	i := strings.IndexByte(id, '[')
	if i <= 0 || !strings.HasSuffix(id, "]") {
		return "", false
	}
	return id[:i], true
}

// PlainLine formats one event as a plain progress line ("" for events that
// are not shown).
func PlainLine(e exec.Event, s Styles) string { return plainLine(e, s, 0) }

// plainLine is PlainLine; span, when not 0, is the duration a fan-out's
// join step shows (Plain.span).
func plainLine(e exec.Event, s Styles, span time.Duration) string {
	ts := e.Time.Local().Format("15:04:05")
	switch e.Type {
	case exec.EvChildEvent:
		if e.Child == nil {
			return ""
		}
		l := PlainLine(*e.Child, s)
		if l == "" {
			return ""
		}
		return s.Render(s.Dim, e.StepID+" ↳ "+e.Child.RunID) + " " + l
	case exec.EvStepOutput:
		prefix := e.StepID
		out := data[exec.StepOutput](e)
		if out.Kind != "" && out.Kind != "attempt" {
			prefix += " " + out.Kind
		}
		if out.Stream == "stderr" {
			return s.Render(s.Dim, prefix+" !") + " " + string(e.Line)
		}
		return s.Render(s.Dim, prefix+" |") + " " + string(e.Line)
	case exec.EvRunResumed:
		return fmt.Sprintf("%s %s resumed run %s", ts, s.Glyph(exec.RunInProgress), e.RunID)
	case exec.EvRunStarted:
		d := data[exec.RunStarted](e)
		return fmt.Sprintf("%s %s run %s (plan %s, %s)", ts, s.Glyph(exec.RunInProgress), e.RunID, d.Plan, exec.Count(d.TotalSteps, "step"))
	case exec.EvStepStatus:
		d := data[exec.StepStatus](e)
		msg := fmt.Sprintf("%s %s %s %s", ts, s.Glyph(e.Status), e.StepID, s.Status(e.Status))
		if e.Status == exec.StatusInProgress || e.Status == exec.StatusRetrying {
			msg += fmt.Sprintf(" (attempt %d)", e.Attempt)
		}
		switch {
		case span > 0 && e.Status == exec.StatusSuccess:
			msg += " " + s.Render(s.Dim, fmtDur(span))
		case d.DurationMs != nil && e.Status == exec.StatusSuccess:
			msg += " " + s.Render(s.Dim, fmtDur(time.Duration(*d.DurationMs)*time.Millisecond))
		}
		if e.ExitCode != nil && e.Status != exec.StatusSuccess {
			msg += fmt.Sprintf(" exit %d", *e.ExitCode)
		}
		if d.Error != "" && e.Status != exec.StatusSuccess {
			msg += ": " + oneLine(d.Error)
		}
		if d.When != "" {
			msg += ": when: " + oneLine(d.When) + " is false"
		}
		return msg
	case exec.EvRetryReserved:
		d := data[exec.RetryReserved](e)
		return fmt.Sprintf("%s %s %s retry %d/%d reserved by %s (attempt %d next%s)", ts, s.Glyph(exec.StatusRetrying), e.StepID,
			d.RetryCount, d.MaxRetries, d.FailureHandler, e.Attempt, delayText(d.DelayMs))
	case exec.EvRecoveryFinished:
		code := 0
		if e.ExitCode != nil {
			code = *e.ExitCode
		}
		return fmt.Sprintf("%s %s %s recovery script exited %d", ts, s.Glyph(exec.StatusRetrying), e.StepID, code)
	case exec.EvHandlerInvoked:
		d := data[exec.HandlerInvoked](e)
		var hr exec.HandlerResult
		if d.HandlerResult != nil {
			hr = *d.HandlerResult
		}
		return fmt.Sprintf("%s %s %s on_failure %s → %s (exit %d): %s; %s", ts, s.Glyph(exec.StatusRemediating), e.StepID,
			d.HandlerCommand, hr.Status, hr.ExitCode, oneLine(hr.Message), strings.ReplaceAll(hr.ActionTaken, "_", " "))
	case exec.EvFanOutExpanded:
		d := data[exec.FanOutExpanded](e)
		msg := fmt.Sprintf("%s %s %s: %d items (%s)", ts, s.Glyph(exec.StatusPending), e.StepID, d.Count, d.Source)
		switch {
		case len(d.Removed) == 0 && len(d.Added) == d.Count:
		case len(d.Removed) == 0 && len(d.Added) == 0:
			msg += ", unchanged"
		default:
			msg += fmt.Sprintf(", %d added, %d removed", len(d.Added), len(d.Removed))
		}
		if len(d.Unfinished) > 0 {
			msg += fmt.Sprintf(", %d left unfinished", len(d.Unfinished))
		}
		return msg
	case exec.EvStepCacheHit:
		d := data[exec.CacheHit](e)
		return fmt.Sprintf("%s %s %s cache hit: run %s attempt %d exited 0", ts, s.Glyph(exec.StatusCached), e.StepID, d.CachedRunID, d.CachedAttempt)
	case exec.EvStepCacheMiss:
		d := data[exec.CacheMiss](e)
		return fmt.Sprintf("%s %s %s cache miss: %s", ts, s.Glyph(exec.StatusPending), e.StepID, d.Reason)
	case exec.EvWarning:
		d := data[exec.Warning](e)
		return fmt.Sprintf("%s %s warning: %s", ts, s.Render(s.Warn, "!"), d.Message)
	case exec.EvStepOrphaned:
		d := data[exec.StepOrphaned](e)
		return fmt.Sprintf("%s %s %s was running when faber died: %s", ts, s.Glyph(exec.StatusInterrupted), e.StepID, d.Message)
	case exec.EvStepSubmitted:
		d := data[exec.StepSubmitted](e)
		return fmt.Sprintf("%s %s %s submitted as job %s", ts, s.Glyph(exec.StatusInProgress), e.StepID, d.Job)
	case exec.EvStepReattached:
		d := data[exec.StepReattached](e)
		return fmt.Sprintf("%s %s %s re-attached to its job %s, which outlived faber", ts, s.Glyph(exec.StatusInProgress), e.StepID, d.Job)
	case exec.EvStepClassified:
		d := data[exec.StepClassified](e)
		return fmt.Sprintf("%s %s %s classified %s: %s", ts, s.Glyph(exec.StatusPendingFailed), e.StepID, d.Action, d.Reason)
	case exec.EvNotifyFailed:
		d := data[exec.NotifyFailed](e)
		code := ""
		if e.ExitCode != nil {
			code = fmt.Sprintf(" (exit %d)", *e.ExitCode)
		}
		return fmt.Sprintf("%s %s warning: notification %d on %s failed%s: %s", ts, s.Render(s.Warn, "!"), d.Index, d.Kind, code, oneLine(d.Error))
	case exec.EvApprovalRequested:
		d := data[exec.ApprovalRequested](e)
		what := e.StepID
		if d.Phase != "" {
			what = "phase " + d.Phase
		}
		return fmt.Sprintf("%s %s %s asks for approval: %s", ts, s.Glyph(exec.StatusAwaitingApproval), what, d.Prompt)
	case exec.EvStepApproved:
		d := data[exec.StepApproved](e)
		note := ""
		if d.Note != "" {
			note = ": " + d.Note
		}
		return fmt.Sprintf("%s %s %s approved by %s%s", ts, s.Glyph(exec.StatusAwaitingApproval), e.StepID, d.By, note)
	case exec.EvStepRejected:
		d := data[exec.StepRejected](e)
		return fmt.Sprintf("%s %s %s rejected by %s: %s", ts, s.Glyph(exec.StatusAwaitingApproval), e.StepID, d.By, d.Reason)
	case exec.EvAgentSpent:
		d := data[exec.AgentSpent](e)
		return fmt.Sprintf("%s $ faber recover's agent spent $%s, %d turns, %d tokens (counted toward the plan's budget)", ts,
			exec.FormatCost(d.CostUSD), d.Turns, d.Tokens)
	case exec.EvWorkflowCompleted, exec.EvWorkflowFailed:
		d := data[exec.WorkflowEnded](e)
		failed := ""
		if len(d.FailedSteps) > 0 {
			failed = " — failed: " + strings.Join(d.FailedSteps, ", ")
		}
		return fmt.Sprintf("%s %s run %s %s (%s, %d failed)%s", ts, s.Glyph(e.Status), e.RunID, s.Status(e.Status),
			exec.Count(d.TotalSteps, "step"), d.FailedStepsCount, failed)
	}
	return ""
}

func delayText(ms int64) string {
	if ms <= 0 {
		return ""
	}
	return ", after " + fmtDur(time.Duration(ms)*time.Millisecond)
}

func oneLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// fmtDur is faber's one human form of a duration (exec.FormatDuration).
func fmtDur(d time.Duration) string { return exec.FormatDuration(d) }

// JSON writes one JSON object per committed event (SPEC §1 `--ui json`).
type JSON struct {
	w *bufio.Writer
	q *queue
}

// NewJSON returns a JSON-lines renderer writing to w.
func NewJSON(w io.Writer) *JSON {
	j := &JSON{w: bufio.NewWriterSize(w, 64<<10)}
	j.q = newQueue(func(e exec.Event) {
		b, err := e.Marshal()
		if err != nil {
			return
		}
		j.w.Write(b)
		j.w.WriteByte('\n')
	}, nil, func() { j.w.Flush() })
	return j
}

// Event queues a committed event; output lines are not part of the JSON
// stream. A child run's events are written as they are: their run_id is
// the child's, and parent_run_id and parent_step_id mark them.
func (j *JSON) Event(e exec.Event) {
	switch e.Type {
	case exec.EvStepOutput:
		return
	case exec.EvChildEvent:
		if e.Child == nil {
			return
		}
		c := *e.Child
		c.ParentRunID, c.ParentStepID = e.RunID, e.StepID
		c.JSON = nil
		e = c
	}
	j.q.put(e)
}

// Close flushes.
func (j *JSON) Close() error {
	j.q.close()
	return j.w.Flush()
}

// data is the event's payload of type T, or an empty one when it has none.
func data[T any, P interface {
	*T
	exec.Payload
}](e exec.Event) *T {
	if d, ok := e.Data.(P); ok && d != nil {
		return (*T)(d)
	}
	return new(T)
}
