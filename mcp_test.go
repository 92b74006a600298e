package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/faber-run/faber/state"
)

// TestMCPAnswersAsTheCLI talks to 'faber mcp' on stdin about a real run, the
// way an agent does: get_run_status must be 'faber status --json', and the
// JSON that list_pending_failed_jobs ends with must be 'faber pending --json'.
// (The tools themselves are tested in package mcp.)
func TestMCPAnswersAsTheCLI(t *testing.T) {
	dir := t.TempDir()
	stateDir := filepath.Join(dir, ".faber")
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte("name: mcpcli\nuse_pending_failed: true\nsteps:\n"+
		"  - id: fetch\n    run: |\n      echo 'curl: (7) Failed to connect: Connection refused' >&2\n      exit 7\n"+
		"  - id: dep\n    run: \"true\"\n"), 0o644)
	faber := func(stdin string, args ...string) (string, int) {
		var out, errb bytes.Buffer
		code := Main(append([]string{"--state-dir", stateDir}, args...), strings.NewReader(stdin), &out, &errb)
		if errb.Len() > 0 && code == exitOK {
			t.Errorf("faber %v: stderr %s", args, &errb)
		}
		return out.String() + errb.String(), code
	}
	if out, code := faber("", "run", plan, "--ui", "plain"); code != exitPending {
		t.Fatalf("run exited %d, want 3:\n%s", code, out)
	}
	metas, err := state.List(stateDir)
	if err != nil || len(metas) != 1 {
		t.Fatalf("runs: %v %v", metas, err)
	}
	runID := metas[0].RunID

	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_run_status","arguments":{"run_id":"` + runID + `"}}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_pending_failed_jobs","arguments":{"run_id":"` + runID + `"}}}
`
	out, code := faber(in, "mcp")
	if code != exitOK {
		t.Fatalf("mcp exited %d:\n%s", code, out)
	}
	texts := map[int]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var resp struct {
			ID     int
			Result struct {
				Content []struct{ Text string }
				IsError bool
			}
		}
		if err := json.Unmarshal([]byte(line), &resp); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if resp.Result.IsError {
			t.Errorf("id %d is an error: %s", resp.ID, line)
		}
		for _, c := range resp.Result.Content {
			texts[resp.ID] += c.Text
		}
	}

	sameJSON := func(what, got, want string) {
		t.Helper()
		var gotV, wantV any
		if json.Unmarshal([]byte(got), &gotV) != nil || json.Unmarshal([]byte(want), &wantV) != nil || !reflect.DeepEqual(gotV, wantV) {
			t.Errorf("%s:\n%s\nwant:\n%s", what, got, want)
		}
	}
	status, _ := faber("", "status", runID, "--json")
	sameJSON("get_run_status", texts[2], status)
	pending, _ := faber("", "pending", runID, "--json")
	_, list, ok := strings.Cut(texts[3], "\nJSON:\n")
	if !ok || !strings.Contains(texts[3], "- step fetch (phase main): attempt 1, exit code 7: curl: (7) Failed to connect") {
		t.Errorf("list_pending_failed_jobs:\n%s", texts[3])
	}
	sameJSON("list_pending_failed_jobs", list, pending)
}
