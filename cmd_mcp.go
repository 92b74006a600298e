package main

import (
	"fmt"

	"github.com/faber-run/faber/mcp"
)

// McpCmd serves MCP on stdio.
type McpCmd struct{}

// Help explains mcp.
func (c *McpCmd) Help() string {
	return `Serves the Model Context Protocol over stdin/stdout (newline-delimited
JSON-RPC), so that an AI agent can decide on steps that wait as
pending_failed. Tools:

  list_pending_failed_jobs      {run_id}: the waiting steps, with stderr tails
  classify_and_resolve_failures {run_id, classifications: [{step_id, action, reason}], dry_run}
                                action is retry or fail; dry_run checks only
  get_run_status                {run_id}: as 'faber status --json' (read-only)
  get_step_logs                 {run_id, step_id, attempt?, lines?}: output tails (read-only)

Runs are looked up in --state-dir / FABER_STATE_DIR. The server ends when
stdin closes, after answering every request it read. Register it with an
agent, e.g.: claude mcp add faber -- faber mcp

Examples:
  claude mcp add faber -- faber mcp
  claude mcp add faber -- faber --state-dir /srv/pipelines/.faber mcp
  faber recover --last --agent "claude -p"     the same tools, one command`
}

// Run serves until stdin closes.
func (c *McpCmd) Run(g *Globals) error {
	ctx, _, _, stop := signalContext()
	defer stop()
	err := mcp.Serve(ctx, mcp.NewServer(g.StateDir, storeOptions(g), version), g.stdin, g.stdout)
	switch {
	case ctx.Err() != nil:
		return codeOnly(exitInterrupted)
	case err != nil:
		return withCode(exitState, fmt.Errorf("mcp: %w", err))
	}
	return nil
}
