package exec

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"time"
)

// Payload is the type-specific part of an event: one struct per event type,
// marshaled after the common fields. The JSON keys of every payload are
// declared in alphabetical order (TestPayloadKeysSorted), so the JSON of an
// event is the same as when its fields were written from a sorted map.
type Payload interface{ eventType() string }

// RunStarted is the payload of run_started.
type RunStarted struct {
	Jobs       int        `json:"jobs"`
	Plan       string     `json:"plan"`
	PlanFile   string     `json:"plan_file"`
	Steps      []StepInfo `json:"steps"`
	TotalSteps int        `json:"total_steps"`
}

// RunResumed is the payload of run_resumed.
type RunResumed struct {
	ChangedSteps []string `json:"changed_steps"`
	EditedPlan   bool     `json:"edited_plan"`
	Orphaned     []string `json:"orphaned"`
	Plan         string   `json:"plan"`
	// Reattached are running steps whose batch job outlived the owner
	// that died: the session waits for the job.
	Reattached []string   `json:"reattached,omitempty"`
	ResetSteps []string   `json:"reset_steps"`
	Steps      []StepInfo `json:"steps"`
}

// StepStatus is the payload of step_status: what a reader needs to rebuild
// the step's record from the log alone.
type StepStatus struct {
	// AttemptEnd is on the event that ends an attempt: what it used and
	// why it ended (README "Resources").
	AttemptEnd     *AttemptEnd `json:"attempt_end,omitempty"`
	CacheKey       string      `json:"cache_key,omitempty"` // success or cached: the key committed with it
	ChildRunID     string      `json:"child_run_id,omitempty"`
	DurationMs     *int64      `json:"duration_ms,omitempty"` // with finished_at
	Error          string      `json:"error,omitempty"`
	FinishedAt     *time.Time  `json:"finished_at,omitempty"`
	HandlerCommand string      `json:"handler_command,omitempty"` // remediating: the handler's command line
	// Outputs, on success or cached, are the values the step published.
	Outputs []Output `json:"outputs,omitempty"`
	Phase   string   `json:"phase"`
	Reason  string   `json:"reason,omitempty"` // why a reader set it (reset, classified ...)
	// Reserved, on an attempt's start (in_progress), is what the step
	// reserved with its job slot; nil when nothing.
	Reserved *Reserved `json:"reserved,omitempty"`
	// Spent is what the step has spent over the run, so far (README
	// "Budgets"); nil when nothing.
	Spent     *Spent     `json:"spent,omitempty"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	// When, on skipped, is the condition that was false.
	When string `json:"when,omitempty"`
}

// StepOutput is the payload of step_output (never stored): which stream of
// which process the line came from. Kind is attempt, handler or recovery.
type StepOutput struct {
	Kind   string `json:"kind"`
	Stream string `json:"stream"`
}

// RetryReserved is the payload of step_retry_reserved (SPEC §4 step 1).
type RetryReserved struct {
	DelayMs        int64  `json:"delay_ms"`
	Error          string `json:"error"`
	FailedAttempt  int    `json:"failed_attempt"`
	FailedExitCode int    `json:"failed_exit_code"`
	FailureHandler string `json:"failure_handler"`
	MaxRetries     int    `json:"max_retries"`
	// MemoryBytes and TimeoutMs are the retry's limits when the rule grew
	// them (memory_factor, timeout_factor). MemoryCapped says the grown
	// memory was more than the run's capacity: the retry requests (and is
	// limited to) the capacity's memory.
	MemoryBytes  int64 `json:"memory_bytes,omitempty"`
	MemoryCapped bool  `json:"memory_capped,omitempty"`
	RetryCount   int   `json:"retry_count"`
	Rule         int   `json:"rule"`
	TimeoutMs    int64 `json:"timeout_ms,omitempty"`
}

// RecoveryFinished is the payload of recovery_script_finished; Error is
// empty when the script succeeded.
type RecoveryFinished struct {
	Error         string `json:"error,omitempty"`
	FailedAttempt int    `json:"failed_attempt"`
}

// HandlerInvoked is the payload of step_handler_invoked (SPEC §4 step 3).
type HandlerInvoked struct {
	Error          string         `json:"error"`
	HandlerArgv    []string       `json:"handler_argv"`
	HandlerCommand string         `json:"handler_command"`
	HandlerResult  *HandlerResult `json:"handler_result"`
	HandlerType    string         `json:"handler_type"`
	MaxRetries     int            `json:"max_retries"`
	OriginalStatus string         `json:"original_status"`
	Phase          string         `json:"phase"`
	RetryCount     int            `json:"retry_count"`
}

// StepOrphaned is the payload of step_orphaned: a step that was running
// when its faber died, found by resume.
type StepOrphaned struct {
	Message        string `json:"message"`
	PGID           int    `json:"pgid"`
	PreviousStatus string `json:"previous_status"`
}

// StepReattached is the payload of step_reattached: a running step whose
// batch job outlived its faber, found by resume, which waits for the job
// instead of starting a new attempt.
type StepReattached struct {
	Job     string `json:"job"` // "slurm:123"
	Message string `json:"message"`
}

// StepSubmitted is the payload of step_submitted: a batch scheduler
// accepted the attempt's job, which the step's record keeps while it runs.
type StepSubmitted struct {
	Job string `json:"job"` // "slurm:123", "slurm:123_4" for an array's task
}

// StepClassified is the payload of step_classified.
type StepClassified struct {
	Action string `json:"action"`
	// MemoryBytes and TimeoutMs are the limits a retry classification
	// gave the next attempt (--memory, --timeout).
	MemoryBytes int64  `json:"memory_bytes,omitempty"`
	Reason      string `json:"reason"`
	TimeoutMs   int64  `json:"timeout_ms,omitempty"`
}

// Warning is the payload of warning.
type Warning struct {
	Message string `json:"message"`
}

// WorkflowEnded is the payload of workflow_completed and workflow_failed
// (SPEC §7); EndStepStatus is set when the plan has an end step.
type WorkflowEnded struct {
	EndStepStatus      string   `json:"end_step_status,omitempty"`
	EvaluatedByEndStep bool     `json:"evaluated_by_end_step"`
	FailedSteps        []string `json:"failed_steps"`
	FailedStepsCount   int      `json:"failed_steps_count"`
	TotalSteps         int      `json:"total_steps"`
}

// StepsReset is the payload of steps_reset.
type StepsReset struct {
	FailedOnly bool     `json:"failed_only"`
	Requested  []string `json:"requested"`
	Steps      []string `json:"steps"`
}

// CacheHit is the payload of step_cache_hit: the earlier run and attempt
// whose success a cached step reuses, and the event that recorded it.
type CacheHit struct {
	CachedAttempt int    `json:"cached_attempt"`
	CachedRunID   string `json:"cached_run_id"`
	CachedSeq     int64  `json:"cached_seq"`
	Key           string `json:"key"`
}

// CacheMiss is the payload of step_cache_miss: why a step with inputs runs.
type CacheMiss struct {
	Key    string `json:"key,omitempty"`
	Reason string `json:"reason"`
}

// FanOutExpanded is the payload of fanout_expanded: a fan-out over glob:
// or lines: read its items (README "Fan-out"). Items are its item steps
// now, in order; Added and Removed what changed since its last expansion
// in the run (the first: every item added); Needs the join step's needs
// now (the fan-out step's own, then its items).
type FanOutExpanded struct {
	Added   []string   `json:"added"`
	Count   int        `json:"count"`
	Items   []StepInfo `json:"items"`
	Needs   []string   `json:"needs"`
	Removed []string   `json:"removed"`
	Source  string     `json:"source"`
	// Unfinished are the fan-out's items that left the run without
	// having succeeded, in this read or an earlier one (Expansion).
	Unfinished []string `json:"unfinished"`
}

// ApprovalRequested is the payload of approval_requested: a gate opened
// (or opened again on resume) and the steps it holds.
type ApprovalRequested struct {
	Deadline *time.Time `json:"deadline,omitempty"`
	OpenedAt time.Time  `json:"opened_at"`
	Phase    string     `json:"phase,omitempty"`
	Prompt   string     `json:"prompt"`
}

// StepApproved is the payload of step_approved: who decided (cli, view,
// mcp, timeout) and the note. Phase is set when the decision is a phase's
// gate, and Steps are then the steps it applies to; Recorded when no
// session applied it yet (no owner was alive).
type StepApproved struct {
	By       string   `json:"by"`
	Note     string   `json:"note"`
	Phase    string   `json:"phase,omitempty"`
	Recorded bool     `json:"recorded,omitempty"`
	Steps    []string `json:"steps,omitempty"`
}

// StepRejected is the payload of step_rejected, as StepApproved with the
// reason.
type StepRejected struct {
	By       string   `json:"by"`
	Phase    string   `json:"phase,omitempty"`
	Reason   string   `json:"reason"`
	Recorded bool     `json:"recorded,omitempty"`
	Steps    []string `json:"steps,omitempty"`
}

// EvAgentSpent is the type of agent_spent: what an agent run for the run
// as a whole (faber recover) reported spending in $FABER_RESULT, which
// counts toward the plan's budget (RunState.Spent).
const EvAgentSpent = "agent_spent"

// AgentSpent is the payload of agent_spent.
type AgentSpent struct {
	CostUSD float64 `json:"cost_usd"`
	Tokens  int64   `json:"tokens"`
	Turns   int64   `json:"turns"`
}

// Other holds the fields of an event type this version does not know (a
// newer faber's child run), kept as they were.
type Other map[string]json.RawMessage

func (*RunStarted) eventType() string        { return EvRunStarted }
func (*RunResumed) eventType() string        { return EvRunResumed }
func (*StepStatus) eventType() string        { return EvStepStatus }
func (*StepOutput) eventType() string        { return EvStepOutput }
func (*RetryReserved) eventType() string     { return EvRetryReserved }
func (*RecoveryFinished) eventType() string  { return EvRecoveryFinished }
func (*HandlerInvoked) eventType() string    { return EvHandlerInvoked }
func (*StepOrphaned) eventType() string      { return EvStepOrphaned }
func (*StepReattached) eventType() string    { return EvStepReattached }
func (*StepSubmitted) eventType() string     { return EvStepSubmitted }
func (*StepClassified) eventType() string    { return EvStepClassified }
func (*Warning) eventType() string           { return EvWarning }
func (*WorkflowEnded) eventType() string     { return EvWorkflowCompleted }
func (*StepsReset) eventType() string        { return EvStepsReset }
func (*CacheHit) eventType() string          { return EvStepCacheHit }
func (*CacheMiss) eventType() string         { return EvStepCacheMiss }
func (*FanOutExpanded) eventType() string    { return EvFanOutExpanded }
func (Other) eventType() string              { return "" }
func (*ApprovalRequested) eventType() string { return EvApprovalRequested }
func (*StepApproved) eventType() string      { return EvStepApproved }
func (*StepRejected) eventType() string      { return EvStepRejected }
func (*AgentSpent) eventType() string        { return EvAgentSpent }

// newPayload returns an empty payload for an event type, nil for a type
// without one or unknown.
func newPayload(typ string) Payload {
	switch typ {
	case EvRunStarted:
		return &RunStarted{}
	case EvRunResumed:
		return &RunResumed{}
	case EvStepStatus:
		return &StepStatus{}
	case EvStepOutput:
		return &StepOutput{}
	case EvRetryReserved:
		return &RetryReserved{}
	case EvRecoveryFinished:
		return &RecoveryFinished{}
	case EvHandlerInvoked:
		return &HandlerInvoked{}
	case EvStepOrphaned:
		return &StepOrphaned{}
	case EvStepReattached:
		return &StepReattached{}
	case EvStepSubmitted:
		return &StepSubmitted{}
	case EvStepClassified:
		return &StepClassified{}
	case EvWarning:
		return &Warning{}
	case EvWorkflowCompleted, EvWorkflowFailed:
		return &WorkflowEnded{}
	case EvStepsReset:
		return &StepsReset{}
	case EvStepCacheHit:
		return &CacheHit{}
	case EvStepCacheMiss:
		return &CacheMiss{}
	case EvFanOutExpanded:
		return &FanOutExpanded{}
	case EvNotifyFailed:
		return &NotifyFailed{}
	case EvApprovalRequested:
		return &ApprovalRequested{}
	case EvStepApproved:
		return &StepApproved{}
	case EvStepRejected:
		return &StepRejected{}
	case EvAgentSpent:
		return &AgentSpent{}
	}
	return nil
}

// commonKeys are the JSON keys of Event's own fields.
var commonKeys = [...]string{"seq", "time", "type", "run_id", "step_id", "attempt", "status", "exit_code", "parent_run_id", "parent_step_id"}

func isCommonKey(k string) bool {
	for _, c := range commonKeys {
		if k == c {
			return true
		}
	}
	return false
}

// MarshalJSON writes the common fields first, in a stable order, then the
// payload's fields sorted by key.
func (e Event) MarshalJSON() ([]byte, error) {
	b, _, err := e.marshal()
	return b, err
}

// marshal is MarshalJSON. wellFormed reports that b is one line of valid
// JSON by construction, so that the store need not check it again: every
// string is quoted by encoding/json, and the payload is encoding/json's
// output (which it compacts and checks) and an object. The fields of an
// event type this version does not know (Other) are raw JSON as read, not
// known to be either.
func (e Event) marshal() (_ []byte, wellFormed bool, _ error) {
	// Room for the common fields and most payloads: one allocation.
	b := make([]byte, 0, 384+len(e.Type)+len(e.RunID)+len(e.StepID)+len(e.Status))
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `,"time":"`...)
	b = e.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","type":`...)
	b = appendJSONString(b, e.Type)
	b = append(b, `,"run_id":`...)
	b = appendJSONString(b, e.RunID)
	if e.StepID != "" {
		b = append(b, `,"step_id":`...)
		b = appendJSONString(b, e.StepID)
	}
	if e.Attempt != 0 {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, int64(e.Attempt), 10)
	}
	if e.Status != "" {
		b = append(b, `,"status":`...)
		b = appendJSONString(b, e.Status)
	}
	if e.ExitCode != nil {
		b = append(b, `,"exit_code":`...)
		b = strconv.AppendInt(b, int64(*e.ExitCode), 10)
	}
	// The payload's object goes on the end: its opening brace becomes the
	// comma after the common fields and its closing one ends the event,
	// or, empty ({}), it leaves only the closing brace.
	mark := len(b)
	b, err := e.appendPayload(b)
	if err != nil {
		return nil, false, err
	}
	p := b[mark:]
	_, other := e.Data.(Other)
	wellFormed = !other && len(p) > 0 && p[0] == '{'
	if len(p) > 2 {
		p[0], p[len(p)-1] = ',', '}'
	} else {
		b = append(b[:mark], '}')
	}
	return b, wellFormed, nil
}

// MarshalChecked returns e.JSON when set, else the event marshaled, and
// whether it is one line of valid JSON by construction (see marshal).
func (e Event) MarshalChecked() ([]byte, bool, error) {
	if e.JSON != nil {
		return e.JSON, e.jsonWellFormed, nil
	}
	return e.marshal()
}

// payloadFields is the JSON object of the payload's fields, sorted by key,
// with the parent run's fields of a child event merged in.
func (e Event) payloadFields() ([]byte, error) { return e.appendPayload(nil) }

// appendPayload appends payloadFields to b.
func (e Event) appendPayload(b []byte) ([]byte, error) {
	parent := e.ParentRunID != "" || e.ParentStepID != ""
	var raw []byte
	var err error
	switch d := e.Data.(type) {
	case nil:
		raw = []byte("{}")
	case Other:
		if raw, err = sortedObject(d, e.ParentRunID, e.ParentStepID); err != nil {
			return b, err
		}
		return append(b, raw...), nil
	case jsonAppender:
		// The payloads of every step's transitions and cache hits, without
		// reflection (jsonenc.go).
		if !parent {
			return d.appendJSON(b)
		}
		raw, err = d.appendJSON(nil)
	default:
		raw, err = json.Marshal(d)
	}
	if err != nil {
		return b, err
	}
	if !parent {
		return append(b, raw...), nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return b, err
	}
	if raw, err = sortedObject(m, e.ParentRunID, e.ParentStepID); err != nil {
		return b, err
	}
	return append(b, raw...), nil
}

func sortedObject(m map[string]json.RawMessage, parentRun, parentStep string) ([]byte, error) {
	all := make(map[string]json.RawMessage, len(m)+2)
	for k, v := range m {
		if !isCommonKey(k) {
			all[k] = v
		}
	}
	if parentRun != "" {
		all["parent_run_id"], _ = json.Marshal(parentRun)
	}
	if parentStep != "" {
		all["parent_step_id"], _ = json.Marshal(parentStep)
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(appendJSONString(b.AvailableBuffer(), k))
		b.WriteByte(':')
		b.Write(all[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// eventHead is the common part of an event's JSON.
type eventHead struct {
	Seq          int64     `json:"seq"`
	Time         time.Time `json:"time"`
	Type         string    `json:"type"`
	RunID        string    `json:"run_id"`
	StepID       string    `json:"step_id"`
	Attempt      int       `json:"attempt"`
	Status       string    `json:"status"`
	ExitCode     *int      `json:"exit_code"`
	ParentRunID  string    `json:"parent_run_id"`
	ParentStepID string    `json:"parent_step_id"`
}

// UnmarshalJSON reads an event written by MarshalJSON, its payload typed by
// its type (Other for a type this version does not know).
func (e *Event) UnmarshalJSON(data []byte) error {
	// One pass decodes the head and, for the most common type, the payload.
	var hs struct {
		eventHead
		StepStatus
	}
	if err := json.Unmarshal(data, &hs); err != nil {
		return err
	}
	h := hs.eventHead
	*e = Event{Seq: h.Seq, Time: h.Time, Type: h.Type, RunID: h.RunID, StepID: h.StepID, Attempt: h.Attempt,
		Status: h.Status, ExitCode: h.ExitCode, ParentRunID: h.ParentRunID, ParentStepID: h.ParentStepID}
	if h.Type == EvStepStatus {
		d := hs.StepStatus
		e.Data = &d
		return nil
	}
	if p := newPayload(h.Type); p != nil {
		if err := json.Unmarshal(data, p); err != nil {
			return err
		}
		e.Data = p
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	o := Other{}
	for k, v := range m {
		if !isCommonKey(k) {
			o[k] = v
		}
	}
	if len(o) > 0 {
		e.Data = o
	}
	return nil
}
