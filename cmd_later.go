package main

// ResumeCmd continues a run.
type ResumeCmd struct {
	RunID        string   `arg:"" optional:"" name:"run-id" help:"The run to continue (see faber list)."`
	Last         bool     `name:"last" help:"Continue the newest run in the state dir."`
	Plan         string   `name:"plan" placeholder:"PLAN" type:"path" help:"Resume with an edited plan: changed steps re-run with everything downstream."`
	RetryPending bool     `name:"retry-pending" help:"Also retry steps that wait as pending_failed."`
	Jobs         int      `name:"jobs" short:"j" placeholder:"N" help:"Run at most N steps at once."`
	UI           string   `name:"ui" enum:"auto,tui,plain,json" default:"auto" help:"Progress display: auto, tui, plain or json."`
	Set          []string `name:"set" hidden:""`
}

// Run resumes the run.
func (c *ResumeCmd) Run(g *Globals) error { return notYet("resume") }

// PendingCmd lists pending_failed steps.
type PendingCmd struct {
	RunID string `arg:"" name:"run-id" help:"The run."`
	JSON  bool   `name:"json" help:"Print as JSON."`
}

// Run lists the steps.
func (c *PendingCmd) Run(g *Globals) error { return notYet("pending") }

// ClassifyCmd classifies a pending_failed step.
type ClassifyCmd struct {
	RunID  string `arg:"" name:"run-id" help:"The run."`
	Step   string `arg:"" name:"step" help:"The pending_failed step."`
	Retry  bool   `name:"retry" xor:"action" required:"" help:"Run the step again on resume (next attempt number)."`
	Fail   bool   `name:"fail" xor:"action" required:"" help:"Fail the step for good; its dependents are canceled."`
	Reason string `name:"reason" placeholder:"TEXT" help:"Why: recorded in the step_classified event."`
}

// Run records the classification.
func (c *ClassifyCmd) Run(g *Globals) error { return notYet("classify") }

// ResetCmd resets steps of a run.
type ResetCmd struct {
	RunID      string   `arg:"" name:"run-id" help:"The run."`
	FailedOnly bool     `name:"failed-only" help:"Only failed, canceled and pending_failed steps (and their downstream)."`
	Step       []string `name:"step" placeholder:"ID" help:"Reset this step and everything downstream (repeatable)."`
}

// Run resets the steps.
func (c *ResetCmd) Run(g *Globals) error { return notYet("reset") }

// McpCmd serves MCP on stdio.
type McpCmd struct{}

// Run serves until stdin closes.
func (c *McpCmd) Run(g *Globals) error { return notYet("mcp") }

// RecoverCmd lets an agent classify pending steps, then resumes.
type RecoverCmd struct {
	RunID string `arg:"" name:"run-id" help:"The run."`
	Agent string `name:"agent" placeholder:"CMD" help:"Agent command line (default: the plan's agent:, else 'claude -p')."`
}

// Run runs the agent, then resumes.
func (c *RecoverCmd) Run(g *Globals) error { return notYet("recover") }
