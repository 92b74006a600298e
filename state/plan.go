package state

import (
	"fmt"
	"path/filepath"
)

// SetPlan replaces the run's plan snapshot (`faber resume --plan`): later
// resumes and readers see the edited plan the run continues with.
func (s *Store) SetPlan(plan []byte) error {
	if err := checkPlanSize(plan); err != nil {
		return fmt.Errorf("run %q: %w", s.runID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.fit(len(plan))
	if err == nil {
		err = s.update(func(txn *wtxn) error { return txn.Set(keyPlan, plan) })
	}
	if err != nil {
		return noSpace(s.stateDir, "run "+s.runID, fmt.Errorf("run %q: store plan: %w", s.runID, err))
	}
	if err := writeFileAtomic(filepath.Join(s.dir, filePlan), plan, true); err != nil {
		return noSpace(s.stateDir, "run "+s.runID, fmt.Errorf("run %q: write plan snapshot: %w", s.runID, err))
	}
	return nil
}

// checkPlanSize refuses a plan the store cannot hold, with a message rather
// than Badger's (which dumps the value).
func checkPlanSize(plan []byte) error {
	if len(plan) > MaxPlanSize {
		return fmt.Errorf("the plan is %d bytes; a run can keep a plan of at most %d bytes (%d MiB)", len(plan), MaxPlanSize, MaxPlanSize>>20)
	}
	return nil
}
