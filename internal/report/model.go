// Package report builds the report of one run (faber report, README "Run
// reports"): its data model, rebuilt from the run's event log and records
// alone, the timeline's layout, and one self-contained HTML file (inline
// CSS and SVG, nothing fetched when it is opened).
package report

import (
	"time"

	"github.com/faber-run/faber/exec"
)

// Report is one run's report; its JSON is what faber report --json prints.
// The field names are stable (README "Run reports"): fields may be added,
// never renamed.
type Report struct {
	// FaberVersion is the version of the faber that made the report.
	FaberVersion string     `json:"faber_version"`
	GeneratedAt  time.Time  `json:"generated_at"`
	RunID        string     `json:"run_id"`
	Plan         string     `json:"plan"`
	PlanFile     string     `json:"plan_file"`
	ParentRunID  string     `json:"parent_run_id,omitempty"`
	Status       string     `json:"status"`
	StartedAt    time.Time  `json:"started_at"`
	FinishedAt   *time.Time `json:"finished_at"`
	DurationMs   int64      `json:"duration_ms"`
	// Sets are the run's --set values, sorted by name; a secret's value
	// is masked (***).
	Sets []Set `json:"sets"`
	// PlanText is the plan as the run started it (plan.snapshot), with
	// secrets masked; "" when the snapshot is missing.
	PlanText string `json:"plan_text"`
	// CriticalPath is the chain of needs that ends at the last step to
	// finish, first step first.
	CriticalPath []string `json:"critical_path"`
	// Counts are how many steps (items included) ended in each status.
	Counts map[string]int `json:"counts"`
	Steps  []*Step        `json:"steps"`
	// Budgets are the plan's budgets with what the run spent against
	// their limits (exec.Budgets, README "Budgets"); none when it sets
	// none.
	Budgets []exec.BudgetLine `json:"budgets,omitempty"`
	// History is its plan's history over the last finished runs up to
	// and including this one (README "History"); nil when not asked for.
	History *History `json:"history,omitempty"`
}

// Set is one --set value.
type Set struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Masked bool   `json:"masked,omitempty"`
}

// Step is one step (a fan-out's item too) and everything the log tells of it.
type Step struct {
	ID     string   `json:"id"`
	Name   string   `json:"name"`
	Phase  string   `json:"phase"`
	Status string   `json:"status"`
	FanOut string   `json:"fan_out,omitempty"` // on an item: its fan-out step
	Needs  []string `json:"needs"`
	Error  string   `json:"error,omitempty"`
	// StartedAt and FinishedAt span everything the step did in the run:
	// attempts, recovery scripts, delays, handlers, decisions.
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	DurationMs int64      `json:"duration_ms"`
	Attempts   []*Attempt `json:"attempts"`
	// Spans are what the step did besides attempts: recovery, backoff,
	// handler, decision (waiting for faber classify), cached, skipped.
	Spans []*Span `json:"spans"`
	// Trail is the decision trail, one sentence per decision, in order.
	Trail       []string         `json:"trail"`
	CachedFrom  *exec.CachedFrom `json:"cached_from,omitempty"`
	SkippedWhen string           `json:"skipped_when,omitempty"`
	ChildRunID  string           `json:"child_run_id,omitempty"`
	Critical    bool             `json:"critical"`
	// Spent is what its attempts and handlers reported spending over
	// the run, with the attempts it started (README "Budgets").
	Spent *exec.Spent `json:"spent,omitempty"`
}

// Attempt is one attempt of a step.
type Attempt struct {
	Attempt    int        `json:"attempt"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"` // nil: no end in the log
	// Status is the step's status its end set (success, retrying,
	// remediating, pending_failed, failure ...); "" while it has no end.
	Status   string `json:"status"`
	ExitCode *int   `json:"exit_code"`
	Cause    string `json:"cause,omitempty"` // oom | timeout
	// Resources are its CPU time, peak memory and limits (README
	// "Resources"); Reserved what it requested with its job slot.
	Resources *exec.Resources `json:"resources,omitempty"`
	Reserved  *exec.Reserved  `json:"reserved,omitempty"`
	// Retry is set on an attempt after the first.
	Retry bool `json:"retry"`
	// Spent is what it reported spending in $FABER_RESULT.
	Spent *exec.Spent `json:"spent,omitempty"`
}

// Span kinds.
const (
	KindRecovery = "recovery"
	KindBackoff  = "backoff"
	KindHandler  = "handler"
	KindDecision = "decision"
	// KindApproval: a wait at an approval gate (README "Approval gates").
	KindApproval = "approval"
	KindCached   = "cached"
	KindSkipped  = "skipped"
)

// Span is one thing a step did that is not an attempt.
type Span struct {
	Kind       string     `json:"kind"`
	Attempt    int        `json:"attempt"` // the attempt it follows
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Text       string     `json:"text"`
}
