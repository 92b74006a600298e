package state

import (
	"fmt"
	"path/filepath"
)

// SetPlan replaces the run's plan snapshot (`faber resume --plan`): later
// resumes and readers see the edited plan the run continues with.
func (s *Store) SetPlan(plan []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.update(func(txn *wtxn) error { return txn.Set(keyPlan, plan) }); err != nil {
		return noSpace(s.stateDir, "run "+s.runID, fmt.Errorf("run %q: store plan: %w", s.runID, err))
	}
	if err := writeFileAtomic(filepath.Join(s.dir, filePlan), plan, true); err != nil {
		return noSpace(s.stateDir, "run "+s.runID, fmt.Errorf("run %q: write plan snapshot: %w", s.runID, err))
	}
	return nil
}
