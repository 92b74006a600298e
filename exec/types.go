// Package exec runs a validated plan: the scheduler over its dependency graph,
// one process group per attempt, timeouts and signals, per-attempt logs, and the
// failure pipeline (exit-code rules, recovery scripts, on_failure handlers).
// It reports every decision as an Event and persists it through the Store it is
// given before acting on it.
package exec

import "time"

// Run statuses (SPEC §3).
const (
	RunInProgress        = "in_progress"
	RunSuccess           = "success"
	RunFailed            = "failed"
	RunRemediationFailed = "remediation_failed"
	RunPendingFailed     = "pending_failed"
	RunInterrupted       = "interrupted"
	// RunAwaitingApproval: the session ended with approval gates open and
	// nothing else to run (README "Approval gates"); exit 3.
	RunAwaitingApproval = "awaiting_approval"
)

// Event types.
const (
	EvRunStarted = "run_started"
	EvRunResumed = "run_resumed"
	EvStepStatus = "step_status"
	EvStepOutput = "step_output" // never stored; renderers only
	// EvChildEvent carries one event of a sub-plan step's child run to the
	// parent's renderers (never stored in the parent: the child run has its
	// own log). StepID is the parent step; Child is the child's event.
	EvChildEvent        = "child_event"
	EvRetryReserved     = "step_retry_reserved"
	EvRecoveryFinished  = "recovery_script_finished"
	EvHandlerInvoked    = "step_handler_invoked"
	EvStepOrphaned      = "step_orphaned"
	EvStepReattached    = "step_reattached"
	EvStepSubmitted     = "step_submitted"
	EvStepClassified    = "step_classified"
	EvWarning           = "warning"
	EvWorkflowCompleted = "workflow_completed"
	EvWorkflowFailed    = "workflow_failed"
	EvStepsReset        = "steps_reset"
	EvStepCacheHit      = "step_cache_hit"
	EvStepCacheMiss     = "step_cache_miss"
	// Approval gates (README "Approval gates").
	EvApprovalRequested = "approval_requested"
	EvStepApproved      = "step_approved"
	EvStepRejected      = "step_rejected"
)

// CachedFrom names the earlier attempt a cached step reuses.
type CachedFrom struct {
	Attempt int    `json:"attempt"`
	RunID   string `json:"run_id"`
	Seq     int64  `json:"seq"`
}

// HandlerResult is the outcome of an on_failure command (SPEC §4 step 3).
type HandlerResult struct {
	Status      string `json:"status"` // success | failure
	Message     string `json:"message"`
	ExitCode    int    `json:"exit_code"`
	ActionTaken string `json:"action_taken"` // retry_step | stop
	// Spent is what the handler reported spending in $FABER_RESULT
	// (README "Budgets"); nil when nothing.
	Spent *Spent `json:"spent,omitempty"`
}

// Remediation is the last on_failure handler's record on a step.
type Remediation struct {
	HandlerType      string         `json:"handler_type"`
	HandlerCommand   string         `json:"handler_command"`
	HandlerInvokedAt *time.Time     `json:"handler_invoked_at"`
	HandlerResult    *HandlerResult `json:"handler_result"`
	RetryCount       int            `json:"retry_count"`
	MaxRetries       int            `json:"max_retries"`
}

// StepState is the persisted state of one step; its JSON is the step object of
// `faber status --json` (fields after Remediation are internal and omitted when empty).
type StepState struct {
	ID          string       `json:"id"`
	Name        string       `json:"name"`
	Phase       string       `json:"phase"`
	Status      string       `json:"status"` // a Status
	Attempt     int          `json:"attempt"`
	ExitCode    *int         `json:"exit_code"`
	Error       string       `json:"error"`
	StartedAt   *time.Time   `json:"started_at"`
	FinishedAt  *time.Time   `json:"finished_at"`
	DurationMs  int64        `json:"duration_ms"`
	Needs       []string     `json:"needs"`
	Remediation *Remediation `json:"remediation"`

	// FanOut is, on an item step <id>[<key>], the id of its fan-out step.
	FanOut string `json:"fan_out,omitempty"`
	// Expanded is, on the join step of a fan-out over glob: or lines:, the
	// items it was last expanded to (README "Fan-out").
	Expanded *Expansion `json:"expanded,omitempty"`

	// ChildRunID links a sub-plan step (`plan:`) to its child run.
	ChildRunID string `json:"child_run_id,omitempty"`

	// Attempts records every finished attempt: its cause, exit code and
	// resources (README "Resources").
	Attempts []*AttemptEnd `json:"attempts,omitempty"`
	// Limits are the next attempt's limits when a rule grew them or a
	// classification set them.
	Limits *Limits `json:"limits,omitempty"`

	// Story is, in a view read from a run's view table (run.LoadBrief),
	// how a step that needed more than one attempt got to its status
	// (run.Story); never in JSON.
	Story string `json:"-"`
	// Classified is "fail" or "retry" once `faber classify` decided on the step.
	Classified string `json:"classified,omitempty"`
	// Hash is the step definition hash (SPEC §10), for resume --plan.
	Hash string `json:"hash,omitempty"`
	// CacheKey is the cache key of the step's success (or cached) status,
	// committed with it; CachedFrom, on a cached step, the attempt reused.
	CacheKey   string      `json:"cache_key,omitempty"`
	CachedFrom *CachedFrom `json:"cached_from,omitempty"`
	// PGID and PStart identify the running process group (leader start time),
	// so a later resume can kill leftovers of a dead faber safely.
	PGID   int    `json:"pgid,omitempty"`
	PStart string `json:"pstart,omitempty"`
	// Job is the batch scheduler's job of the running attempt
	// ("slurm:123"): resume re-attaches to it while it runs.
	Job string `json:"job,omitempty"`
	// Outputs are what the step's successful attempt published (README
	// "Step outputs"), or a cached step's restored: byte-exact in the
	// owner's record, with secrets masked in a view replayed from events.
	Outputs []Output `json:"outputs,omitempty"`
	// Spent is what the step's attempts and handlers reported spending,
	// and the attempts it started, over the run (README "Budgets"); nil
	// when nothing (attempts are counted only in a plan with a budget).
	Spent *Spent `json:"spent,omitempty"`
	// BudgetWaived: classified --retry, the step's next start is not
	// refused for a spent budget (a person decided to spend more).
	BudgetWaived bool `json:"budget_waived,omitempty"`

	// Gate is the step's own approval gate (or its fan-out's), PhaseGate
	// its phase's; nil until the step first reaches it.
	Gate      *Gate `json:"gate,omitempty"`
	PhaseGate *Gate `json:"phase_gate,omitempty"`
	// AttemptReserved: the step came to a gate with a retry reserved (its
	// Attempt is the retry's number, not run yet): approved, that attempt
	// runs, in this session or a later one.
	AttemptReserved bool `json:"attempt_reserved,omitempty"`
}

// Gate is where an approval gate stands for a step (README "Approval
// gates").
type Gate struct {
	// State is GateOpen, GateApproved or GateRejected.
	State  string `json:"state"`
	Prompt string `json:"prompt,omitempty"`
	// OpenedAt is when the gate opened; Deadline, with a timeout, when
	// on_timeout decides (it survives restarts).
	OpenedAt *time.Time `json:"opened_at,omitempty"`
	Deadline *time.Time `json:"deadline,omitempty"`
	// Note is the approval's note or the rejection's reason; By who
	// decided: cli, view, mcp or timeout.
	Note string `json:"note,omitempty"`
	By   string `json:"by,omitempty"`
	// Recorded: decided, not yet applied to the step (a decision recorded
	// with no owner, or for a member of a phase gate that has not reached
	// it): the next session applies it when the step reaches its gate.
	Recorded bool `json:"recorded,omitempty"`
}

// Gate states.
const (
	GateOpen     = "open"
	GateApproved = "approved"
	GateRejected = "rejected"
)

// RunState is the persisted run record.
type RunState struct {
	RunID      string     `json:"run_id"`
	Plan       string     `json:"plan"`
	Status     string     `json:"status"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	// Spent is what agents run for the run as a whole (faber recover)
	// reported spending: it counts toward the plan's budget (README
	// "Budgets"); nil when nothing.
	Spent *Spent `json:"spent,omitempty"`
}

// Event is one entry of a run's audit trail. Data holds the fields of its
// type (events.go); they are flattened into the JSON object after the
// common ones.
type Event struct {
	Seq      int64
	Time     time.Time
	Type     string
	RunID    string
	StepID   string
	Attempt  int
	Status   string
	ExitCode *int
	Data     Payload

	// ParentRunID and ParentStepID mark a child run's event in the parent's
	// JSON stream (`--ui json`): the run and step that ran the child.
	ParentRunID, ParentStepID string

	// Line is set on EvStepOutput events only (never stored): one line of
	// output; Data (*StepOutput) says which stream.
	Line []byte
	// Child is set on EvChildEvent events only: the child run's event.
	Child *Event
	// JSON is the event as MarshalJSON writes it, set on every committed
	// event, so that the store and the JSON renderer do not marshal it
	// again. It is not part of the JSON.
	JSON []byte
	// jsonWellFormed is marshal's word on JSON (see MarshalChecked).
	jsonWellFormed bool
}

// Marshal returns e.JSON when set, else the event marshaled.
func (e Event) Marshal() ([]byte, error) {
	if e.JSON != nil {
		return e.JSON, nil
	}
	return e.MarshalJSON()
}

func intp(n int) *int { return &n }

func timep(t time.Time) *time.Time { return &t }
