package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/faber-run/faber/state"
)

// TestMCPTools calls each tool through an MCP client, the way an agent does,
// on a run with one pending_failed step; the answers must match the CLI's.
func TestMCPTools(t *testing.T) {
	dir := t.TempDir()
	stateDir := filepath.Join(dir, ".faber")
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte(`name: mcpunit
use_pending_failed: true
steps:
  - id: fetch
    run: |
      echo "fetching"
      echo "read tcp: connection reset by peer" >&2
      exit 4
  - id: dep
    run: "true"
`), 0o644)
	faber := func(args ...string) (string, int) {
		var out, errb bytes.Buffer
		code := Main(append([]string{"--state-dir", stateDir}, args...), strings.NewReader(""), &out, &errb)
		return out.String() + errb.String(), code
	}
	if out, code := faber("run", plan, "--ui", "plain"); code != exitPending {
		t.Fatalf("run exited %d, want 3:\n%s", code, out)
	}
	metas, err := state.List(stateDir)
	if err != nil || len(metas) != 1 {
		t.Fatalf("runs: %v %v", metas, err)
	}
	runID := metas[0].RunID

	ctx := context.Background()
	g := &Globals{StateDir: stateDir}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := newMCPServer(g).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(name string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var b strings.Builder
		for _, c := range res.Content {
			b.WriteString(c.(*mcp.TextContent).Text)
		}
		return b.String(), res.IsError
	}

	// get_run_status is faber status --json.
	got, isErr := call("get_run_status", map[string]any{"run_id": runID})
	want, _ := faber("status", runID, "--json")
	var gotV, wantV any
	if isErr || json.Unmarshal([]byte(got), &gotV) != nil || json.Unmarshal([]byte(want), &wantV) != nil || !reflect.DeepEqual(gotV, wantV) {
		t.Errorf("get_run_status (error %v):\n%s\nwant:\n%s", isErr, got, want)
	}

	tests := []struct {
		tool    string
		args    map[string]any
		isError bool
		want    []string
	}{
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
		}}, true, []string{"refused: step fetch retry: give a reason", `refused: step ghost fail: the run has no step "ghost"`, "still pending_failed: fetch"}},
		{"classify_and_resolve_failures", map[string]any{"run_id": runID, "classifications": []any{}}, true,
			[]string{"minItems"}},
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

	// The refusals above applied nothing; a valid retry is applied.
	got, isErr = call("classify_and_resolve_failures", map[string]any{"run_id": runID, "classifications": []any{
		map[string]any{"step_id": "fetch", "action": "retry", "reason": "connection reset: transient"},
	}})
	if isErr || !strings.Contains(got, "applied: step fetch retry") || strings.Contains(got, "still pending_failed") {
		t.Errorf("retry: error %v:\n%s", isErr, got)
	}
	out, _ := faber("events", runID, "--json")
	if n := strings.Count(out, `"type":"step_classified"`); n != 1 {
		t.Errorf("%d step_classified events, want 1:\n%s", n, out)
	}
}

// TestMCPDamagedStore: with the run's store damaged, the read-only tools
// still answer from the event log, and a classification is refused with the
// one-line damage message — never an internal error or a panic.
func TestMCPDamagedStore(t *testing.T) {
	dir := t.TempDir()
	stateDir := filepath.Join(dir, ".faber")
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte("name: mcpdamaged\nuse_pending_failed: true\nsteps:\n  - id: fetch\n    run: echo reset >&2; exit 4\n"), 0o644)
	var out bytes.Buffer
	if code := Main([]string{"--state-dir", stateDir, "run", plan, "--ui", "plain"}, strings.NewReader(""), &out, &out); code != exitPending {
		t.Fatalf("run exited %d, want 3:\n%s", code, &out)
	}
	metas, _ := state.List(stateDir)
	runID := metas[0].RunID
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

	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := newMCPServer(&Globals{StateDir: stateDir}).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
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
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tt.tool, Arguments: tt.args})
		if err != nil {
			t.Fatalf("%s: %v", tt.tool, err)
		}
		var b strings.Builder
		for _, c := range res.Content {
			b.WriteString(c.(*mcp.TextContent).Text)
		}
		got := b.String()
		if res.IsError != tt.isError || !strings.Contains(got, tt.want) {
			t.Errorf("%s: error %v, want %v; want %q in:\n%s", tt.tool, res.IsError, tt.isError, tt.want, got)
		}
		if strings.Contains(got, "internal error") || strings.Contains(got, "panic") {
			t.Errorf("%s: %s", tt.tool, got)
		}
	}
}
