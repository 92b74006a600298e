package mcp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/state"
)

// discard is a renderer that shows nothing.
type discard struct{}

func (discard) Event(exec.Event) {}

// runPlan runs a plan to its end in a new state dir, as 'faber run' does
// (its processes, its store, its logs), and returns the state dir and run id.
func runPlan(t *testing.T, text string) (stateDir, runID string) {
	t.Helper()
	dir := t.TempDir()
	stateDir = filepath.Join(dir, ".faber")
	file := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Parse(file, []byte(text), spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	runID = state.NewRunID(stateDir, plan.Name, now)
	store, err := state.Create(stateDir, state.Meta{RunID: runID, Plan: plan.Name, PlanFile: file, StartedAt: now, Created: now.UnixNano()}, []byte(text), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &exec.Runner{Plan: plan, RunID: runID, RunDir: store.Dir(), StateDir: stateDir, Store: run.Recorder{Store: store}, Sink: discard{}}
	status, err := r.Run(context.Background(), nil)
	if cerr := store.Close(); err == nil {
		err = cerr
	}
	if err != nil || status != exec.RunPendingFailed && status != exec.RunAwaitingApproval {
		t.Fatalf("run: %s, %v", status, err)
	}
	return stateDir, runID
}

// client connects an MCP client to NewServer over stateDir, the way an agent
// does, and returns a function that calls a tool and gives its text and
// whether it is an error.
func client(t *testing.T, stateDir string) func(name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := NewServer(stateDir, state.Options{}, "test").Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return func(name string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var b strings.Builder
		for _, c := range res.Content {
			b.WriteString(c.(*sdk.TextContent).Text)
		}
		return b.String(), res.IsError
	}
}

// TestTools calls each tool on a run with one pending_failed step and its
// dependent, then applies a valid retry.
func TestTools(t *testing.T) {
	stateDir, runID := runPlan(t, `name: mcpunit
use_pending_failed: true
steps:
  - id: fetch
    run: |
      echo "fetching"
      echo "read tcp: connection reset by peer" >&2
      exit 4
  - id: dep
    run: "true"
`)
	call := client(t, stateDir)
	tests := []struct {
		tool    string
		args    map[string]any
		isError bool
		want    []string
	}{
		{"get_run_status", map[string]any{"run_id": runID}, false,
			[]string{`"run_id": "` + runID + `"`, `"status": "pending_failed"`}},
		{"get_step_logs", map[string]any{"run_id": runID, "step_id": "fetch"}, false,
			[]string{"attempt 1 of 1 (step status pending_failed, last exit code 4)", "\nfetching\n", "\nread tcp: connection reset by peer\n"}},
		{"get_step_logs", map[string]any{"run_id": runID, "step_id": "fetch", "attempt": 2}, true,
			[]string{`step "fetch" has no attempt 2 (its latest is 1)`}},
		{"get_step_logs", map[string]any{"run_id": runID, "step_id": "dep"}, true,
			[]string{`step "dep" has not run yet (status pending)`}},
		{"get_step_logs", map[string]any{"run_id": runID, "step_id": "nope"}, true,
			[]string{`has no step "nope"`}},
		{"list_pending_failed_jobs", map[string]any{"run_id": runID}, false,
			[]string{"1 step(s) wait as pending_failed", "- step fetch (phase main): attempt 1, exit code 4", "looks transient", `"stderr_tail": [`}},
		{"list_pending_failed_jobs", map[string]any{"run_id": "nope-20260101T000000-abcd"}, true,
			[]string{`run "nope-20260101T000000-abcd" not found`}},
		{"classify_and_resolve_failures", map[string]any{"run_id": runID, "classifications": []any{
			map[string]any{"step_id": "fetch", "action": "retry", "reason": " "},
			map[string]any{"step_id": "ghost", "action": "fail", "reason": "x"},
			map[string]any{"step_id": "dep", "action": "retry", "reason": "x"},
		}}, true, []string{"refused: step fetch retry: give a reason", `refused: step ghost fail: the run has no step "ghost"`,
			`refused: step dep retry: step "dep" is pending, not pending_failed`, "still pending_failed: fetch"}},
		{"classify_and_resolve_failures", map[string]any{"run_id": runID, "classifications": []any{}}, true,
			[]string{"minItems"}},
		{"classify_and_resolve_failures", map[string]any{"run_id": runID, "dry_run": true, "classifications": []any{
			map[string]any{"step_id": "fetch", "action": "fail", "reason": "dry"},
		}}, false, []string{"ok (dry run, not applied): step fetch fail\n", "dry run: nothing was applied"}},
	}
	for _, tt := range tests {
		got, isErr := call(tt.tool, tt.args)
		if isErr != tt.isError {
			t.Errorf("%s %v: error %v, want %v:\n%s", tt.tool, tt.args, isErr, tt.isError, got)
		}
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s %v: missing %q in:\n%s", tt.tool, tt.args, w, got)
			}
		}
	}

	// The refusals and the dry run above applied nothing; a valid retry is
	// applied, and recorded once.
	got, isErr := call("classify_and_resolve_failures", map[string]any{"run_id": runID, "classifications": []any{
		map[string]any{"step_id": "fetch", "action": "retry", "reason": "connection reset: transient"},
	}})
	if isErr || !strings.Contains(got, "applied: step fetch retry") || strings.Contains(got, "still pending_failed") ||
		!strings.Contains(got, "next: the run continues with 'faber resume "+runID+"'") {
		t.Errorf("retry: error %v:\n%s", isErr, got)
	}
	log, err := state.ReadLog(stateDir, runID, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range log.Events {
		if strings.Contains(string(e), `"type":"`+exec.EvStepClassified+`"`) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d step_classified events, want 1", n)
	}
}

// TestDamagedStore: with the run's store damaged, the read-only tools
// still answer from the event log, and a classification is refused with the
// one-line damage message — never an internal error or a panic.
func TestDamagedStore(t *testing.T) {
	stateDir, runID := runPlan(t, "name: mcpdamaged\nuse_pending_failed: true\nsteps:\n  - id: fetch\n    run: echo reset >&2; exit 4\n")
	tables, _ := filepath.Glob(filepath.Join(state.RunDir(stateDir, runID), "db", "*.sst"))
	if len(tables) == 0 {
		t.Fatal("no tables in the store")
	}
	for _, f := range tables {
		b, _ := os.ReadFile(f)
		for i := range b {
			b[i] ^= 0x5a
		}
		os.WriteFile(f, b, 0o644)
	}

	call := client(t, stateDir)
	tests := []struct {
		tool    string
		args    map[string]any
		isError bool
		want    string
	}{
		{"get_run_status", map[string]any{"run_id": runID}, false, `"status": "pending_failed"`},
		{"list_pending_failed_jobs", map[string]any{"run_id": runID}, false, "- step fetch (phase main)"},
		{"get_step_logs", map[string]any{"run_id": runID, "step_id": "fetch"}, false, "reset"},
		{"classify_and_resolve_failures", map[string]any{"run_id": runID, "classifications": []any{
			map[string]any{"step_id": "fetch", "action": "retry", "reason": "transient"},
		}}, true, "refused: step fetch retry: run " + runID + ": store damaged (table 000"},
	}
	for _, tt := range tests {
		got, isErr := call(tt.tool, tt.args)
		if isErr != tt.isError || !strings.Contains(got, tt.want) {
			t.Errorf("%s: error %v, want %v; want %q in:\n%s", tt.tool, isErr, tt.isError, tt.want, got)
		}
		if strings.Contains(got, "internal error") || strings.Contains(got, "panic") {
			t.Errorf("%s: %s", tt.tool, got)
		}
	}
}

// TestServeAnswersEveryCall: when its input ends right after the requests,
// Serve still answers each call it read, once, and then returns nil.
func TestServeAnswersEveryCall(t *testing.T) {
	stateDir, runID := runPlan(t, "name: serve\nuse_pending_failed: true\nsteps:\n  - id: a\n    run: exit 3\n")
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_run_status","arguments":{"run_id":"` + runID + `"}}}
{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"list_pending_failed_jobs","arguments":{"run_id":"` + runID + `"}}}
`
	var out strings.Builder
	if err := Serve(context.Background(), NewServer(stateDir, state.Options{}, "test"), strings.NewReader(in), &out); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	for _, id := range []string{"1", "2", "3", "4"} {
		if n := strings.Count(out.String(), `"id":`+id+`,`); n != 1 {
			t.Errorf("id %s answered %d times, want once:\n%s", id, n, out.String())
		}
	}
	if !strings.Contains(out.String(), `"version":"test"`) || !strings.Contains(out.String(), `"name":"classify_and_resolve_failures"`) {
		t.Errorf("no server version or tools in:\n%s", out.String())
	}
}

// TestApproveTool: list_pending_failed_jobs lists a step at its approval
// gate (kind approval, its prompt); approve refuses a bad decision, a
// rejection without a reason and a step at no gate, then records an
// approval (by: mcp) that the next resume applies.
func TestApproveTool(t *testing.T) {
	stateDir, runID := runPlan(t, "name: mcpgate\nsteps:\n  - id: ship\n    approval: Ship it?\n    run: \"true\"\n  - id: other\n    needs: []\n    run: \"true\"\n")
	call := client(t, stateDir)
	got, isErr := call("list_pending_failed_jobs", map[string]any{"run_id": runID})
	for _, w := range []string{"1 step(s) wait as awaiting_approval", "- step ship (phase main): awaiting approval: Ship it?", `"kind": "approval"`, `"prompt": "Ship it?"`} {
		if isErr || !strings.Contains(got, w) {
			t.Errorf("list_pending_failed_jobs: no %q in:\n%s", w, got)
		}
	}
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"run_id": runID, "step_id": "ship", "decision": "maybe"}, `decision "maybe": want approve or reject`},
		{map[string]any{"run_id": runID, "step_id": "ship", "decision": "reject"}, "reject needs a reason"},
		{map[string]any{"run_id": runID, "step_id": "other", "decision": "approve"}, `step "other" is success, not awaiting_approval`},
	} {
		if got, isErr := call("approve", c.args); !isErr || !strings.Contains(got, c.want) {
			t.Errorf("approve %v: %v %q, want an error with %q", c.args, isErr, got, c.want)
		}
	}
	if got, isErr := call("approve", map[string]any{"run_id": runID, "step_id": "ship", "decision": "approve", "note": "fine"}); isErr || !strings.Contains(got, "recorded") {
		t.Fatalf("approve: %v %s", isErr, got)
	}
	v, err := run.View(stateDir, runID)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range v.Steps {
		if st.ID == "ship" && (st.Gate == nil || st.Gate.State != exec.GateApproved || st.Gate.By != "mcp" || st.Gate.Note != "fine" || !st.Gate.Recorded) {
			t.Errorf("ship's gate after approve: %+v", st.Gate)
		}
	}
}
