package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/state"
)

const instructions = `faber runs workflow plans. With use_pending_failed, a step that fails without
a handler waits as pending_failed for a decision. To decide: call
list_pending_failed_jobs {run_id}, read each step's error, exit code and stderr
(get_step_logs for more), then call classify_and_resolve_failures once with a
decision and a short reason per step: retry when the failure looks transient
(connection refused/reset, timeouts, rate limits, preemption, an unavailable
service, I/O errors); fail when it will recur unchanged (syntax, import or type
errors, a missing file or command, permission denied, bad configuration or
arguments). When unsure, prefer fail: a person can reset it. Classify only
steps of the run you were asked about, and do nothing else. The run continues
with 'faber resume <run_id>' (faber recover does that for you).`

// NewServer builds faber's MCP server: its four tools over the runs in
// stateDir, opt for the stores it opens to record a classification, version
// as the implementation's version it announces.
func NewServer(stateDir string, opt state.Options, version string) *sdk.Server {
	t := tools{stateDir: stateDir, opt: opt}
	server := sdk.NewServer(&sdk.Implementation{Name: "faber", Version: version},
		&sdk.ServerOptions{Instructions: instructions, Capabilities: &sdk.ServerCapabilities{}})
	ro := &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)}

	sdk.AddTool(server, &sdk.Tool{
		Name:        "list_pending_failed_jobs",
		Title:       "List steps awaiting a decision",
		Annotations: ro,
		Description: `List the steps of a faber run that failed and wait as pending_failed for a
decision, each with its exit code, attempt, error, a hint (transient or
permanent, guessed from the text) and the last 50 lines of its stderr. A step
with cause budget failed because a budget was spent (its budgets show spent
against the limits): retrying it spends more, a person's decision; leave it
unless you were asked to decide it.
Decide on each with classify_and_resolve_failures: retry for transient-looking
failures (network, timeouts, rate limits, preemption), fail for code or
configuration errors that would recur unchanged.`,
	}, func(ctx context.Context, req *sdk.CallToolRequest, in runInput) (*sdk.CallToolResult, any, error) {
		v, err := run.View(t.stateDir, in.RunID)
		if err != nil {
			return nil, nil, err
		}
		return textResult(pendingText(in.RunID, run.PendingOf(t.stateDir, in.RunID, v), run.GatesOf(v))), nil, nil
	})

	sdk.AddTool(server, &sdk.Tool{
		Name:        "approve",
		Title:       "Approve or reject a step at its approval gate",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(false)},
		Description: `Decide on a step of a faber run that waits as awaiting_approval at its
approval gate (list_pending_failed_jobs lists them with kind approval and
their prompt): decision "approve" lets it start (now, if the run is active,
else when it resumes), with an optional note; decision "reject" fails it with
the error "rejected: <reason>" (reason required), and its on_failure decides
what follows. A step_id that names a gated phase decides that phase's gate.
Decide only what you were asked to: the decision is recorded in the run's
audit trail with by: mcp.`,
	}, func(ctx context.Context, req *sdk.CallToolRequest, in approveInput) (*sdk.CallToolResult, any, error) {
		return t.approve(in), nil, nil
	})

	sdk.AddTool(server, &sdk.Tool{
		Name:        "classify_and_resolve_failures",
		Title:       "Decide on pending_failed steps",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(false)},
		InputSchema: classifySchema(),
		Description: `Record a decision on pending_failed steps of a faber run, one per step:
action "retry" makes the step run again (next attempt) when the run resumes;
action "fail" makes it a failure for good and cancels the steps that depend on
it. Choose retry when the error looks transient (connection refused/reset,
timeout, rate limit, preemption, service unavailable, I/O error); choose fail
for code or configuration errors (syntax/import/type errors, missing file or
command, permission denied, invalid arguments) or when unsure. Give each a
short, specific reason: it is recorded in the run's audit trail. Only steps
listed by list_pending_failed_jobs can be classified. With dry_run: true,
checks the decisions and applies nothing. Each decision is applied on its own;
the result says which were applied, which were refused and why, and what
continues the run.`,
	}, func(ctx context.Context, req *sdk.CallToolRequest, in classifyInput) (*sdk.CallToolResult, any, error) {
		return t.classify(in), nil, nil
	})

	sdk.AddTool(server, &sdk.Tool{
		Name:        "get_run_status",
		Title:       "Show a run",
		Annotations: ro,
		Description: `Show a faber run as JSON, exactly as 'faber status --json': the run's status
(in_progress, success, failed, remediation_failed, pending_failed,
interrupted) and every step with its status (skipped: its when: was false),
attempt, exit code, error, published outputs, dependencies (needs) and
remediation, and what it spent (spent); the plan's budgets with what they
spent and the limit reached (budgets, when the plan sets any); for an active
run whose steps request resources, its capacity, what is in use (in_use) and
why a step waits (waiting). Read-only.`,
	}, func(ctx context.Context, req *sdk.CallToolRequest, in runInput) (*sdk.CallToolResult, any, error) {
		out, err := run.StatusOfRun(t.stateDir, in.RunID)
		if err != nil {
			return nil, nil, err
		}
		b, err := json.Marshal(run.WithUsage(t.stateDir, out))
		if err != nil {
			return nil, nil, err
		}
		// the budgets of its plan, as faber status --json has them
		b = run.WithBudgets(b, run.Budgets(t.stateDir, in.RunID, &exec.View{Run: out.RunState, Steps: out.Steps}))
		return textResult(string(run.IndentJSON(nil, b))), nil, nil
	})

	sdk.AddTool(server, &sdk.Tool{
		Name:        "get_step_logs",
		Title:       "Read a step's output",
		Annotations: ro,
		Description: `Read the ends of a step's stdout and stderr for one attempt (default: its
latest), to tell a transient failure from a real error. lines sets how many
lines of each stream (default 100, at most 2000). Read-only.`,
	}, func(ctx context.Context, req *sdk.CallToolRequest, in logsInput) (*sdk.CallToolResult, any, error) {
		s, err := t.stepLogs(in)
		if err != nil {
			return nil, nil, err
		}
		return textResult(s), nil, nil
	})
	return server
}

// tools answers the tool calls over the runs in one state dir.
type tools struct {
	stateDir string
	opt      state.Options
}

type runInput struct {
	RunID string `json:"run_id" jsonschema:"the run id, as faber prints it (e.g. build-20260101T120000-3f2a)"`
}

type classification struct {
	StepID  string `json:"step_id" jsonschema:"a step that is pending_failed"`
	Action  string `json:"action" jsonschema:"retry (run it again) or fail (fail it for good)"`
	Reason  string `json:"reason" jsonschema:"why, in one sentence: recorded in the audit trail"`
	Memory  string `json:"memory,omitempty" jsonschema:"with retry: the next attempt's memory limit, e.g. 8GiB (an OOM needs more)"`
	Timeout string `json:"timeout,omitempty" jsonschema:"with retry: the next attempt's timeout as a Go duration, e.g. 2h"`
}

type approveInput struct {
	RunID    string `json:"run_id" jsonschema:"the run id"`
	StepID   string `json:"step_id" jsonschema:"a step awaiting approval, or a gated phase's name"`
	Decision string `json:"decision" jsonschema:"approve or reject"`
	Note     string `json:"note,omitempty" jsonschema:"with approve: a note for the audit trail"`
	Reason   string `json:"reason,omitempty" jsonschema:"with reject: why, in one sentence (required)"`
}

// approve applies one decision on an approval gate.
func (t tools) approve(in approveInput) *sdk.CallToolResult {
	fail := func(msg string) *sdk.CallToolResult {
		res := textResult(msg)
		res.IsError = true
		return res
	}
	req := exec.GateReq{Step: in.StepID, Approve: in.Decision == "approve", Text: in.Note, By: "mcp"}
	switch in.Decision {
	case "approve":
	case "reject":
		if strings.TrimSpace(in.Reason) == "" {
			return fail("reject needs a reason")
		}
		req.Text = in.Reason
	default:
		return fail(fmt.Sprintf("decision %q: want approve or reject", in.Decision))
	}
	live, err := run.Decide(t.stateDir, in.RunID, req, t.opt)
	if err != nil {
		return fail(err.Error())
	}
	if live {
		return textResult(fmt.Sprintf("step %s: %s; the running faber applies it now.", in.StepID, in.Decision))
	}
	return textResult(fmt.Sprintf("step %s: %s, recorded; the run continues with 'faber resume %s'.", in.StepID, in.Decision, in.RunID))
}

type classifyInput struct {
	RunID           string           `json:"run_id" jsonschema:"the run id"`
	Classifications []classification `json:"classifications" jsonschema:"one decision per pending_failed step"`
	DryRun          bool             `json:"dry_run,omitempty" jsonschema:"check the decisions, apply nothing"`
}

type logsInput struct {
	RunID   string `json:"run_id" jsonschema:"the run id"`
	StepID  string `json:"step_id" jsonschema:"the step id"`
	Attempt int    `json:"attempt,omitempty" jsonschema:"the attempt number (default: the latest)"`
	Lines   int    `json:"lines,omitempty" jsonschema:"lines of each stream (default 100, at most 2000)"`
}

// classifySchema is the inferred input schema with the action's values spelled
// out, so that a client can check them before calling.
func classifySchema() *jsonschema.Schema {
	s, err := jsonschema.For[classifyInput](nil)
	if err != nil {
		panic(err) // a static type: cannot fail at run time
	}
	list := s.Properties["classifications"]
	list.Type, list.Types = "array", nil // a Go slice may be nil; the input may not
	list.MinItems = new(1)
	item := list.Items
	item.Properties["action"].Enum = []any{exec.ClassifiedRetry, exec.ClassifiedFail}
	item.Properties["step_id"].MinLength = new(1)
	return s
}

func textResult(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// pendingText is a summary line per step for a model to read, then the same
// JSON as 'faber pending --json'.
func pendingText(runID string, ps []run.PendingStep, gates []run.GateStep) string {
	var b strings.Builder
	if len(ps) == 0 {
		fmt.Fprintf(&b, "run %s has no pending_failed steps: nothing to decide.\n", runID)
	} else {
		fmt.Fprintf(&b, "run %s: %d step(s) wait as pending_failed; decide each with classify_and_resolve_failures.\n", runID, len(ps))
	}
	for _, p := range ps {
		code := "none"
		if p.ExitCode != nil {
			code = fmt.Sprint(*p.ExitCode)
		}
		fmt.Fprintf(&b, "- step %s (phase %s): attempt %d, exit code %s: %s\n", p.StepID, p.Phase, p.Attempt, code, run.FirstLine(p.Error))
		if p.Cause == spec.CauseBudget {
			// Spending more is a person's decision, not a model's guess.
			b.WriteString("  cause: budget\n")
			for _, l := range p.Budgets {
				fmt.Fprintf(&b, "  budget %s\n", run.BudgetText(l))
			}
		}
		if p.Hint != "" {
			fmt.Fprintf(&b, "  hint: %s\n", p.Hint)
		}
	}
	if len(gates) > 0 {
		fmt.Fprintf(&b, "%d step(s) wait as awaiting_approval (kind approval); decide each with the approve tool, only if you were asked to.\n", len(gates))
	}
	all := make([]any, 0, len(ps)+len(gates))
	for _, p := range ps {
		all = append(all, p)
	}
	for _, g := range gates {
		all = append(all, g)
		fmt.Fprintf(&b, "- step %s (phase %s): awaiting approval: %s\n", g.StepID, g.Phase, g.Prompt)
	}
	j, _ := json.MarshalIndent(all, "", "  ")
	b.WriteString("\nJSON:\n")
	b.Write(j)
	return b.String()
}

// classifyOutcome is what happened to one classification.
type classifyOutcome struct {
	StepID  string `json:"step_id"`
	Action  string `json:"action"`
	Applied bool   `json:"applied"`
	Error   string `json:"error,omitempty"`
}

// classify checks every classification against the run, then (unless dry
// run) applies the valid ones one by one; each refusal is reported.
func (t tools) classify(in classifyInput) *sdk.CallToolResult {
	v, err := run.View(t.stateDir, in.RunID)
	if err != nil {
		res := textResult(err.Error())
		res.IsError = true
		return res
	}
	status := map[string]string{}
	for _, st := range v.Steps {
		status[st.ID] = st.Status
	}
	seen := map[string]bool{}
	var outs []classifyOutcome
	failed := 0
	for _, c := range in.Classifications {
		o := classifyOutcome{StepID: c.StepID, Action: c.Action}
		switch st, ok := status[c.StepID]; {
		case c.Action != exec.ClassifiedRetry && c.Action != exec.ClassifiedFail:
			o.Error = fmt.Sprintf("action %q: want retry or fail", c.Action)
		case strings.TrimSpace(c.Reason) == "":
			o.Error = "give a reason: it is recorded in the audit trail"
		case !ok:
			o.Error = fmt.Sprintf("the run has no step %q", c.StepID)
		case seen[c.StepID]:
			o.Error = fmt.Sprintf("step %q is classified twice in this call", c.StepID)
		case st != exec.StatusPendingFailed:
			o.Error = fmt.Sprintf("step %q is %s, not pending_failed: only pending_failed steps can be classified", c.StepID, st)
		case classifyLimitsErr(c) != nil:
			o.Error = classifyLimitsErr(c).Error()
		case !in.DryRun:
			lim, _ := mcpLimits(c)
			if err := run.ClassifyWith(t.stateDir, in.RunID, c.StepID, c.Action, c.Reason, lim, t.opt); err != nil {
				o.Error = err.Error()
			} else {
				o.Applied = true
			}
		}
		seen[c.StepID] = true
		if o.Error != "" {
			failed++
		}
		outs = append(outs, o)
	}

	var b strings.Builder
	if len(in.Classifications) == 0 {
		b.WriteString("no classifications given: nothing to do\n")
		failed++
	}
	for _, o := range outs {
		switch {
		case o.Error != "":
			fmt.Fprintf(&b, "refused: step %s %s: %s\n", o.StepID, o.Action, o.Error)
		case in.DryRun:
			fmt.Fprintf(&b, "ok (dry run, not applied): step %s %s\n", o.StepID, o.Action)
		case o.Action == exec.ClassifiedRetry:
			fmt.Fprintf(&b, "applied: step %s retry: it runs again (next attempt) when the run continues\n", o.StepID)
		default:
			fmt.Fprintf(&b, "applied: step %s fail: it is a failure for good; its dependents are canceled\n", o.StepID)
		}
	}
	if ps, err := run.Pending(t.stateDir, in.RunID); err == nil && len(ps) > 0 {
		ids := make([]string, len(ps))
		for i, p := range ps {
			ids[i] = p.StepID
		}
		fmt.Fprintf(&b, "still pending_failed: %s\n", strings.Join(ids, ", "))
	}
	switch o, err := state.OwnerOf(t.stateDir, in.RunID); {
	case in.DryRun:
		b.WriteString("dry run: nothing was applied; call again with dry_run false to apply.\n")
	case err == nil && o.Alive:
		b.WriteString("the run is active: its faber process applies these decisions now, no resume needed.\n")
	default:
		fmt.Fprintf(&b, "next: the run continues with 'faber resume %s' (under 'faber recover', faber does that when you exit: do not run it yourself).\n", in.RunID)
	}
	j, _ := json.MarshalIndent(outs, "", "  ")
	b.WriteString("\nJSON:\n")
	b.Write(j)
	res := textResult(b.String())
	res.IsError = failed > 0
	return res
}

// stepLogs returns the tails of one attempt's stdout and stderr.
func (t tools) stepLogs(in logsInput) (string, error) {
	v, err := run.View(t.stateDir, in.RunID)
	if err != nil {
		return "", err
	}
	var st *exec.StepState
	for _, s := range v.Steps {
		if s.ID == in.StepID {
			st = s
		}
	}
	if st == nil {
		return "", fmt.Errorf("run %s has no step %q", in.RunID, in.StepID)
	}
	n := in.Attempt
	if n == 0 {
		n = st.Attempt
	}
	if n == 0 {
		return "", fmt.Errorf("step %q has not run yet (status %s)", in.StepID, st.Status)
	}
	if n < 0 || n > st.Attempt {
		return "", fmt.Errorf("step %q has no attempt %d (its latest is %d)", in.StepID, n, st.Attempt)
	}
	lines := in.Lines
	if lines <= 0 {
		lines = 100
	}
	lines = min(lines, 2000)
	runDir := state.RunDir(t.stateDir, in.RunID)
	mask := run.Masker(t.stateDir, in.RunID) // the plan's secrets, as everywhere else
	var b strings.Builder
	code := "none"
	if st.ExitCode != nil && n == st.Attempt {
		code = fmt.Sprint(*st.ExitCode)
	}
	fmt.Fprintf(&b, "step %s of run %s, attempt %d of %d (step status %s, last exit code %s)\n", in.StepID, in.RunID, n, st.Attempt, st.Status, code)
	for _, s := range []struct{ name, ext string }{{"stdout", "out"}, {"stderr", "err"}} {
		path := exec.LogPath(runDir, in.StepID, "attempt", n, s.ext)
		if _, err := os.Stat(path); err != nil {
			fmt.Fprintf(&b, "--- %s: no log (%s) ---\n", s.name, path)
			continue
		}
		tail := run.TailLines(path, lines)
		fmt.Fprintf(&b, "--- %s, last %d line(s) (%s) ---\n", s.name, len(tail), path)
		for _, l := range tail {
			b.WriteString(mask.String(l))
			b.WriteByte('\n')
		}
	}
	return b.String(), nil
}

// mcpLimits reads a classification's memory and timeout.
func mcpLimits(c classification) (exec.Limits, error) {
	var d time.Duration
	if c.Timeout != "" {
		var err error
		if d, err = time.ParseDuration(c.Timeout); err != nil {
			return exec.Limits{}, fmt.Errorf("timeout %q: use a Go duration like 90m or 2h", c.Timeout)
		}
	}
	return run.ClassifyLimits(c.Memory, d, c.Action == exec.ClassifiedRetry)
}

func classifyLimitsErr(c classification) error {
	_, err := mcpLimits(c)
	return err
}
