package model

import "slices"

// Budgets (README "Budgets"): what a step's processes report spending
// (units), and the attempts it starts, add up over the run; a budget of the
// step, or of a phase or the plan covering it, is spent once a limit is
// reached. A failure then has cause budget: no rule retries it (only an
// on: [budget] rule matches it, which makes it anticipated), on_failure
// continue still holds, anything else stops; a step whose budget is spent
// does not start (an attempt that runs nothing, failed likewise), unless
// it was classified --retry (once).

// reachedB: spending u units and r attempts reaches a limit of b.
func reachedB(b *Budget, u, r int) bool {
	return b.Units > 0 && u >= b.Units || b.Attempts > 0 && r >= b.Attempts
}

// spent: a budget that covers step i is spent.
func (e *explorer) spent(w *World, i int) bool {
	s := &w.S[i]
	if b := e.p.Steps[i].Budget; b != nil && reachedB(b, s.Units, s.Ran) {
		return true
	}
	for k := range e.p.Budgets {
		b := &e.p.Budgets[k]
		if !slices.Contains(b.Steps, i) {
			continue
		}
		u, r := 0, 0
		for _, j := range b.Steps {
			u += w.S[j].Units
			r += w.S[j].Ran
		}
		if reachedB(b, u, r) {
			return true
		}
	}
	return false
}

// started counts an attempt that starts (README: attempts are counted in
// a plan with budgets).
func (e *explorer) started(s *St) {
	if e.budgets {
		s.Ran++
	}
}

// budgetFailure is the failure pipeline of a failure of step i that came
// with a budget spent.
func (e *explorer) budgetFailure(w *World, i int) {
	def, s := &e.p.Steps[i], &w.S[i]
	s.FailedN = s.Attempt
	matched := slices.ContainsFunc(def.Rules, func(r Rule) bool { return r.OnBudget })
	of := def.OnFailure
	switch {
	case e.p.UsePendingFailed && !matched && !of.Explicit:
		e.free(w, s)
		s.Status = PendFailed
	case of.Kind == OnContinue:
		e.free(w, s)
		s.Status = Failure
		s.Continued = true
	default:
		e.stopStep(w, i, Failure)
	}
}

// overBudget refuses the start of step i (a first attempt or a reserved
// retry) when a budget of it is spent; a waiver is used up at this point
// whatever the budget.
func (e *explorer) overBudget(w *World, i int) bool {
	if !e.budgets {
		return false
	}
	s := &w.S[i]
	if s.Waived {
		s.Waived = false
		return false
	}
	if !e.spent(w, i) {
		return false
	}
	if s.Status == Pending && !s.Reserved {
		s.Attempt++
	}
	s.Reserved = false
	if e.p.Steps[i].Cacheable {
		w.Entry[i] = "" // a failure drops the entry
		w.Pub[i] = false
	}
	e.budgetFailure(w, i)
	return true
}

func spendOf(xs []int, n int) int {
	if n >= 1 && n <= len(xs) {
		return xs[n-1]
	}
	return 0
}
