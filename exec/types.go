// Package exec runs a validated plan: the scheduler over its dependency graph,
// one process group per attempt, timeouts and signals, per-attempt logs, and the
// failure pipeline (exit-code rules, recovery scripts, on_failure handlers).
// It reports every decision as an Event and persists it through the Store it is
// given before acting on it.
package exec

import (
	"bytes"
	"encoding/json"
	"sort"
	"time"
)

// Step statuses (SPEC §3).
const (
	StatusPending           = "pending"
	StatusInProgress        = "in_progress"
	StatusSuccess           = "success"
	StatusFailure           = "failure"
	StatusRemediating       = "remediating"
	StatusRetrying          = "retrying"
	StatusRemediationFailed = "remediation_failed"
	StatusPendingFailed     = "pending_failed"
	StatusCanceled          = "canceled"
	StatusInterrupted       = "interrupted"
)

// Run statuses (SPEC §3).
const (
	RunInProgress        = "in_progress"
	RunSuccess           = "success"
	RunFailed            = "failed"
	RunRemediationFailed = "remediation_failed"
	RunPendingFailed     = "pending_failed"
	RunInterrupted       = "interrupted"
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
	EvChildEvent         = "child_event"
	EvRetryReserved      = "step_retry_reserved"
	EvRecoveryFinished   = "recovery_script_finished"
	EvHandlerInvoked     = "step_handler_invoked"
	EvStepOrphaned       = "step_orphaned"
	EvStepClassified     = "step_classified"
	EvWarning            = "warning"
	EvWorkflowCompleted  = "workflow_completed"
	EvWorkflowFailed     = "workflow_failed"
	EvEndStepSkipped     = "end_step_skipped"
	EvStepsReset         = "steps_reset"
	EvRunInterruptedNote = "run_interrupted"
)

// Terminal reports whether a step status needs no more work in this session.
func Terminal(status string) bool {
	switch status {
	case StatusSuccess, StatusFailure, StatusRemediationFailed, StatusCanceled, StatusInterrupted, StatusPendingFailed:
		return true
	}
	return false
}

// HandlerResult is the outcome of an on_failure command (SPEC §4 step 3).
type HandlerResult struct {
	Status      string `json:"status"` // success | failure
	Message     string `json:"message"`
	ExitCode    int    `json:"exit_code"`
	ActionTaken string `json:"action_taken"` // retry_step | stop
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
	Status      string       `json:"status"`
	Attempt     int          `json:"attempt"`
	ExitCode    *int         `json:"exit_code"`
	Error       string       `json:"error"`
	StartedAt   *time.Time   `json:"started_at"`
	FinishedAt  *time.Time   `json:"finished_at"`
	DurationMs  int64        `json:"duration_ms"`
	Needs       []string     `json:"needs"`
	Remediation *Remediation `json:"remediation"`

	// ChildRunID links a sub-plan step (`plan:`) to its child run.
	ChildRunID string `json:"child_run_id,omitempty"`

	// Classified is "fail" or "retry" once `faber classify` decided on the step.
	Classified string `json:"classified,omitempty"`
	// Hash is the step definition hash (SPEC §10), for resume --plan.
	Hash string `json:"hash,omitempty"`
	// PGID and PStart identify the running process group (leader start time),
	// so a later resume can kill leftovers of a dead faber safely.
	PGID   int    `json:"pgid,omitempty"`
	PStart string `json:"pstart,omitempty"`
}

// RunState is the persisted run record.
type RunState struct {
	RunID      string     `json:"run_id"`
	Plan       string     `json:"plan"`
	Status     string     `json:"status"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

// Event is one entry of a run's audit trail. Fields holds the type-specific
// fields; they are flattened into the JSON object after the common ones.
type Event struct {
	Seq      int64
	Time     time.Time
	Type     string
	RunID    string
	StepID   string
	Attempt  int
	Status   string
	ExitCode *int
	Fields   map[string]any

	// Line is set on EvStepOutput events only (never stored): one line of
	// output, Stream "stdout" or "stderr" in Fields.
	Line []byte
	// Child is set on EvChildEvent events only: the child run's event.
	Child *Event
	// JSON is the event as MarshalJSON writes it, set on every committed
	// event, so that the store and the JSON renderer do not marshal it
	// again. It is not part of the JSON.
	JSON []byte
}

// Marshal returns e.JSON when set, else the event marshaled.
func (e Event) Marshal() ([]byte, error) {
	if e.JSON != nil {
		return e.JSON, nil
	}
	return e.MarshalJSON()
}

// MarshalJSON writes the common fields first, in a stable order, then Fields
// sorted by key.
func (e Event) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	put := func(k string, v any) error {
		if !first {
			b.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.Write(vb)
		return nil
	}
	_ = put("seq", e.Seq)
	_ = put("time", e.Time.UTC().Format(time.RFC3339Nano))
	_ = put("type", e.Type)
	_ = put("run_id", e.RunID)
	if e.StepID != "" {
		_ = put("step_id", e.StepID)
	}
	if e.Attempt != 0 {
		_ = put("attempt", e.Attempt)
	}
	if e.Status != "" {
		_ = put("status", e.Status)
	}
	if e.ExitCode != nil {
		_ = put("exit_code", *e.ExitCode)
	}
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		switch k {
		case "seq", "time", "type", "run_id", "step_id", "attempt", "status", "exit_code":
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := put(k, e.Fields[k]); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads an event written by MarshalJSON.
func (e *Event) UnmarshalJSON(data []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	*e = Event{Fields: map[string]any{}}
	for k, v := range m {
		var err error
		switch k {
		case "seq":
			err = json.Unmarshal(v, &e.Seq)
		case "time":
			err = json.Unmarshal(v, &e.Time)
		case "type":
			err = json.Unmarshal(v, &e.Type)
		case "run_id":
			err = json.Unmarshal(v, &e.RunID)
		case "step_id":
			err = json.Unmarshal(v, &e.StepID)
		case "attempt":
			err = json.Unmarshal(v, &e.Attempt)
		case "status":
			err = json.Unmarshal(v, &e.Status)
		case "exit_code":
			var c int
			err = json.Unmarshal(v, &c)
			e.ExitCode = &c
		default:
			var x any
			err = json.Unmarshal(v, &x)
			e.Fields[k] = x
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func intp(n int) *int { return &n }

func timep(t time.Time) *time.Time { return &t }
