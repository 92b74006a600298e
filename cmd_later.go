package main

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
