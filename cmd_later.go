package main

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
