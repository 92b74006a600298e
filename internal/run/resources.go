package run

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/spec"
)

// Story is how a step that succeeded after more than one attempt got
// there, for faber status's ERROR column ("attempt 1 exited 3; handler
// /fix succeeded; succeeded on attempt 2"): "" for any other step. A view
// from the view table carries it ready (StepState.Story).
func Story(st *exec.StepState) string {
	if st.Story != "" {
		return st.Story
	}
	if st.Attempt <= 1 || !exec.Status(st.Status).Succeeded() || st.Status == exec.StatusCached {
		return ""
	}
	var parts []string
	for _, a := range st.Attempts {
		if a == nil || a.Attempt >= st.Attempt {
			continue
		}
		switch {
		case a.Cause != "" && a.ExitCode == nil:
			parts = append(parts, fmt.Sprintf("attempt %d ended by %s (no process)", a.Attempt, a.Cause))
		case a.Cause != "":
			parts = append(parts, fmt.Sprintf("attempt %d ended by %s (exit %d)", a.Attempt, a.Cause, *a.ExitCode))
		case a.ExitCode != nil && *a.ExitCode != 0:
			parts = append(parts, fmt.Sprintf("attempt %d exited %d", a.Attempt, *a.ExitCode))
		default:
			parts = append(parts, fmt.Sprintf("attempt %d failed", a.Attempt))
		}
	}
	if r := st.Remediation; r != nil && r.HandlerResult != nil && r.HandlerResult.Status == "success" {
		parts = append(parts, "on_failure "+FirstLine(r.HandlerCommand)+" succeeded")
	}
	parts = append(parts, fmt.Sprintf("succeeded on attempt %d", st.Attempt))
	return strings.Join(parts, "; ")
}

// AppendPeak appends a step's last attempt's peak memory for `faber
// status`: "48.2MiB", "64MiB/64MiB oom" with its limit and cause, or "-".
func AppendPeak(b []byte, st *exec.StepState) []byte {
	if len(st.Attempts) == 0 {
		return append(b, '-')
	}
	a := st.Attempts[len(st.Attempts)-1]
	if a.Resources == nil || a.ExitCode == nil {
		return append(b, '-') // no process ran (a rejection, a refused start): nothing measured
	}
	b = a.Resources.AppendPeak(b)
	if a.Resources.MemoryLimitBytes > 0 {
		b = spec.AppendSize(append(b, '/'), a.Resources.MemoryLimitBytes)
	}
	if a.Cause == spec.CauseOOM || a.Cause == spec.CauseTimeout {
		b = append(append(b, ' '), a.Cause...) // what ended it, beside its memory (not a rejection, not a budget)
	}
	return b
}

// ClassifyLimits reads a retry classification's --memory and --timeout
// (MCP: memory, timeout) into the next attempt's limits; they go with
// retry only.
func ClassifyLimits(memory string, timeout time.Duration, retry bool) (exec.Limits, error) {
	var lim exec.Limits
	if memory == "" && timeout == 0 {
		return lim, nil
	}
	if !retry {
		return lim, &UsageError{errors.New("--memory and --timeout go with --retry only")}
	}
	if memory != "" {
		b, err := spec.ParseSize(memory)
		if err != nil {
			return lim, &UsageError{fmt.Errorf("--memory: %v", err)}
		}
		lim.MemoryBytes = b
	}
	if timeout < 0 {
		return lim, &UsageError{errors.New("--timeout: must not be negative")}
	}
	lim.TimeoutMs = timeout.Milliseconds()
	return lim, nil
}

// addResources fills in a pending step's last attempt's cause and memory,
// and for a cause a hint that says what a retry needs.
func addResources(p *PendingStep, st *exec.StepState) {
	if len(st.Attempts) == 0 {
		return
	}
	a := st.Attempts[len(st.Attempts)-1]
	p.Cause = a.Cause
	if a.Resources != nil {
		p.PeakRSSBytes, p.MemoryLimitBytes = a.Resources.PeakRSSBytes, a.Resources.MemoryLimitBytes
		p.PeakUpperBound = !a.Resources.PeakExact()
	}
	switch {
	case a.Cause == spec.CauseOOM && p.MemoryLimitBytes > 0:
		p.Hint = fmt.Sprintf("killed for memory at its %s limit: classify --retry --memory %s (or more) is likely to help", spec.FormatSize(p.MemoryLimitBytes), spec.FormatSize(p.MemoryLimitBytes*2))
	case a.Cause == spec.CauseOOM:
		p.Hint = "killed for memory: classify --retry --memory SIZE with more than it had"
	case a.Cause == spec.CauseTimeout:
		p.Hint = "ended by its time limit: classify --retry --timeout DURATION with more time"
	}
}

// Capacity is a run's capacity (README "Capacity and requests"): flags
// (run's and resume's --cpus, --memory, --gpus; a 0 field not given), else
// the plan's resources:, else this machine's (exec.MachineCapacity), field
// by field. A step whose request does not fit it could never start: the
// plan is then refused, as a *spec.Invalid, before anything starts.
func Capacity(p *spec.Plan, flags spec.Capacity) (spec.Capacity, error) {
	// This machine's GPUs are looked up only when they could count: a
	// step requests one and neither --gpus nor resources: says how many.
	gpus := false
	if flags.GPUs == 0 && p.Resources.GPUs == 0 {
		for _, s := range p.Steps {
			if s.Request().GPUs > 0 {
				gpus = true
				break
			}
		}
	}
	c := spec.ResolveCapacity(flags, p.Resources, exec.MachineCapacity(gpus))
	if errs := spec.CheckRequests(p, c); len(errs) > 0 {
		return c, &spec.Invalid{Errors: errs}
	}
	return c, nil
}
