package exec

import (
	"github.com/faber-run/faber/spec"
)

// Conditions (README "Conditions"): a step's when: is evaluated before each
// of its attempts would start — when it is ready, before a cache lookup, and
// again before a retry (within a session its inputs do not change, so the
// answer is the same). False skips the step; an error fails the attempt
// with no process, as a missing output does.

// whenEnv is what step sr's condition sees now.
func (r *Runner) whenEnv(sr *stepRun, w *spec.When) spec.WhenEnv {
	env := spec.WhenEnv{Steps: make(map[string]spec.WhenStep, len(w.Steps)), Context: r.Plan.Context}
	for _, n := range w.Steps {
		d := r.byID[n.Name]
		if d == nil {
			continue
		}
		ws := spec.WhenStep{Status: d.st.Status, Outputs: make(map[string]string, len(d.st.Outputs))}
		for _, o := range d.st.Outputs {
			ws.Outputs[o.Key] = o.Value
		}
		env.Steps[n.Name] = ws
	}
	if it := sr.def.Item; it != nil {
		if len(it.Fields) > 0 {
			env.Item = it.Fields
		} else {
			env.Item = it.Value
		}
	}
	return env
}

// evalWhen evaluates the step's condition: run reports whether its attempt
// may start; err why the condition could not be evaluated (an output it
// reads is missing, a type error), which fails the attempt.
func (r *Runner) evalWhen(sr *stepRun) (run bool, err error) {
	w := sr.def.When
	if w == nil || sr.def.Join {
		return true, nil
	}
	for _, u := range w.Uses {
		if _, err := r.useValue(u); err != nil {
			return false, err
		}
	}
	return w.Eval(r.whenEnv(sr, w))
}

// skip settles a step whose condition is false: skipped, with the
// condition on its event; its dependents may start.
func (r *Runner) skip(sr *stepRun) {
	st := sr.st
	now := r.now()
	st.Status = StatusSkipped
	st.Error = ""
	st.ExitCode = nil
	st.StartedAt, st.FinishedAt = nil, timep(now)
	st.DurationMs = 0
	st.Outputs = nil
	st.CacheKey, st.CachedFrom = "", nil
	ev := r.statusEvent(sr)
	ev.Data.(*StepStatus).When = sr.def.When.Src
	r.commit([]*StepState{st}, ev)
	if r.fatal != nil {
		return
	}
	r.release(sr)
}

// WhenError is a condition that could not be evaluated: the attempt it
// guards fails with no process.
type WhenError struct {
	Step string
	Err  error
}

func (e *WhenError) Error() string { return e.Err.Error() }
func (e *WhenError) Unwrap() error { return e.Err }
