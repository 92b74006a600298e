package exec

// Waiting for a decision (Runner.WaitDecisions): a session watched in the
// live view does not end while a pending_failed step is all that is left;
// the person at the view decides on it (classify retry or fail, through
// Control) and the run goes on, or leaves it for later.

// awaitDecisions reports whether the scheduler, with nothing in flight,
// waits for a decision instead of ending the session: wait is open (the
// loop's copy of WaitDecisions, nil once closed), the run is not stopping,
// interrupted or halted, the end step is not running, and a pending_failed
// step can be classified in this run (a sub-plan step's decision belongs to
// its child run, which has ended).
func (r *Runner) awaitDecisions(wait <-chan struct{}) bool {
	if wait == nil || r.Control == nil || r.intr || r.fatal != nil || r.stopping || r.endStatus != "" {
		return false
	}
	if len(r.gates) > 0 {
		return true // an approval gate is open
	}
	for _, sr := range r.steps {
		if sr.st.Status == StatusPendingFailed && sr.def.PlanPath == "" {
			return true
		}
	}
	return false
}
