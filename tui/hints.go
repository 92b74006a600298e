package tui

import (
	"fmt"
	"strings"

	"github.com/faber-run/faber/exec"
)

// The lines that end a run that did not succeed, the same in the live
// view's summary and after plain or JSON progress: where the first failure's
// log is, which steps wait for a decision, then (the caller's) how to resume.
// A decision comes before resuming: resume does not run a pending_failed
// step until it is classified.

// maxClassifyIDs is how many pending_failed steps the classify hint names.
const maxClassifyIDs = 5

// LogHint is the hint that names a failed step's log.
func LogHint(runID, step string) string {
	return fmt.Sprintf("logs: faber logs %s %s --stderr", runID, ShellQuote(step))
}

// ClassifyHint is the hint that names the pending_failed steps, ids in plan
// order ("" when there is none).
func ClassifyHint(runID string, ids []string) string {
	switch len(ids) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("classify with: faber classify %s %s --retry|--fail", runID, ShellQuote(ids[0]))
	}
	quoted := make([]string, 0, min(len(ids), maxClassifyIDs))
	for _, id := range ids[:min(len(ids), maxClassifyIDs)] {
		quoted = append(quoted, ShellQuote(id))
	}
	more := ""
	if n := len(ids) - len(quoted); n > 0 {
		more = fmt.Sprintf(" … and %d more (faber pending %s lists them)", n, runID)
	}
	return fmt.Sprintf("classify with: faber classify %s STEP --retry|--fail, for each STEP of: %s%s", runID, strings.Join(quoted, " "), more)
}

// EndHints are the log and classify hints for a run that ended, from its
// step records in plan order (the records of Runner.States): the log of
// the first step that failed — for a fan-out, its first failed item, as the
// fan-out's join step runs nothing and has no log —, then the classify hint.
// The caller adds how to resume.
func EndHints(runID string, states []*exec.StepState) []string {
	joins := map[string]bool{}
	for _, st := range states {
		if st.FanOut != "" {
			joins[st.FanOut] = true
		}
	}
	var hints, pending, gates []string
	for _, st := range states {
		switch {
		case exec.AwaitsGate(st):
			gates = append(gates, st.ID)
		case isBad(st.Status) && !joins[st.ID] && len(hints) == 0:
			hints = append(hints, LogHint(runID, st.ID))
		case st.Status == exec.StatusPendingFailed:
			pending = append(pending, st.ID)
		}
	}
	if h := ClassifyHint(runID, pending); h != "" {
		hints = append(hints, h)
	}
	if len(gates) > 0 {
		hints = append(hints, ApproveHint(runID, gates[0]))
	}
	return hints
}

// ApproveHint says how to decide on a step that waits at its approval gate.
func ApproveHint(runID, step string) string {
	return fmt.Sprintf("approve with: faber approve %s %s (or: faber reject %s %s --reason '...')", runID, ShellQuote(step), runID, ShellQuote(step))
}

// ShellQuote quotes s for a POSIX shell when it needs it: an item step
// each[a.txt] has brackets, which the shell would take as a pattern.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,:/@%+=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
