package exec

// Status is a step's status (SPEC §3). Readers ask it what it means
// (Active, Terminal, Succeeded, Failed, Resumable) instead of listing
// statuses: a list that missed one is how a stop once let a step's
// handler start a new attempt. TestStatusClassified states every method's
// answer for every status, and fails for a status constant missing from
// AllStatuses or from its table.
type Status string

// Step statuses (SPEC §3). The constants are untyped: they are a Status
// where one is wanted, and a plain string in Event.Status (which carries
// run statuses too) and in readers that keep statuses as strings.
const (
	StatusPending    = "pending"
	StatusInProgress = "in_progress"
	StatusSuccess    = "success"
	// StatusCached: not run in this run; an earlier run's attempt of the
	// same key exited 0 (README, "Caching"). It counts as success for
	// dependents and for the run.
	StatusCached            = "cached"
	StatusFailure           = "failure"
	StatusRemediating       = "remediating"
	StatusRetrying          = "retrying"
	StatusRemediationFailed = "remediation_failed"
	StatusPendingFailed     = "pending_failed"
	StatusCanceled          = "canceled"
	StatusInterrupted       = "interrupted"
	// StatusSkipped: its condition (when:) was false; it ran nothing. Never
	// success, never a failure (README "Conditions").
	StatusSkipped = "skipped"
	// StatusAwaitingApproval: its approval gate is open (README "Approval
	// gates"): it waits for faber approve or reject, or its timeout.
	// Never success, never a failure; it holds no job slot.
	StatusAwaitingApproval = "awaiting_approval"
)

// AllStatuses returns every step status, in the order of SPEC §3's table
// (cached, README "Caching", after success).
func AllStatuses() []Status {
	return []Status{StatusPending, StatusInProgress, StatusSuccess, StatusCached, StatusFailure,
		StatusRemediating, StatusRetrying, StatusRemediationFailed, StatusPendingFailed,
		StatusCanceled, StatusInterrupted, StatusSkipped, StatusAwaitingApproval}
}

// Known reports whether s is one of AllStatuses (a record written by a
// newer faber, or damaged, may hold another).
func (s Status) Known() bool {
	return s == StatusPending || s.Active() || s.Terminal()
}

// Active reports whether something runs or is reserved for the step: an
// attempt (in_progress), its on_failure handler (remediating), or a
// reserved retry's recovery script, delay or wait for a job slot
// (retrying). A cancel stop cancels exactly these (SPEC §4 stop); resume
// finds them orphaned when faber died (SPEC §10).
func (s Status) Active() bool {
	switch s {
	case StatusInProgress, StatusRemediating, StatusRetrying:
		return true
	}
	return false
}

// Terminal reports whether the step needs no more work in this session:
// it succeeded (or was cached), failed for good, awaits classification,
// was canceled or interrupted. Neither pending nor Active.
func (s Status) Terminal() bool {
	switch s {
	case StatusSuccess, StatusCached, StatusFailure, StatusRemediationFailed, StatusPendingFailed, StatusCanceled, StatusInterrupted, StatusSkipped, StatusAwaitingApproval:
		return true
	}
	return false
}

// Satisfies reports whether the step lets its dependents run: it
// succeeded (or was cached), or its condition skipped it. (A failure under
// on_failure: continue does too; that is the step's setting, not its
// status.)
func (s Status) Satisfies() bool {
	return s.Succeeded() || s == StatusSkipped
}

// Succeeded reports whether the step counts as success for its dependents
// and the run: success (its last attempt exited 0), or cached.
func (s Status) Succeeded() bool {
	return s == StatusSuccess || s == StatusCached
}

// Failed reports whether the step failed and stays failed in this
// session: failure, remediation_failed, pending_failed. These are the
// steps a run evaluation counts and names (SPEC §7, §10:
// failed_steps_count). Canceled and interrupted steps did not fail.
func (s Status) Failed() bool {
	switch s {
	case StatusFailure, StatusRemediationFailed, StatusPendingFailed:
		return true
	}
	return false
}

// Resumable reports whether `faber resume` puts the step back to pending
// (SPEC §8): failure, remediation_failed, canceled, interrupted, unless
// classification failed it (a property of the step, not of its status).
// A pending_failed step stays unless classified or --retry-pending; Active
// steps are orphans, made interrupted first (SPEC §10).
func (s Status) Resumable() bool {
	switch s {
	case StatusFailure, StatusRemediationFailed, StatusCanceled, StatusInterrupted, StatusSkipped, StatusAwaitingApproval:
		return true
	}
	return false
}

// Terminal is Status(status).Terminal(), for readers that hold a string.
func Terminal(status string) bool { return Status(status).Terminal() }

// Succeeded is Status(status).Succeeded(), for readers that hold a string.
func Succeeded(status string) bool { return Status(status).Succeeded() }
