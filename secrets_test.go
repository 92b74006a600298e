package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/state"
	"github.com/faber-run/faber/tui"
)

// secretPlan fails a step that prints the secret to stderr (so {error} holds
// it) and hands it to an on_failure command (handler_command), caches a step
// whose input and output paths hold it, and passes it to a sub-plan, whose
// step writes the argv of every process above it (what ps shows).
const secretPlan = `name: sec
context: {token: ""}
secrets: [token]
commands:
  /fix: sh -c 'printf "%s" "$1" > handler-arg.bin' fix
steps:
  - id: cached
    inputs: ["in-{token}"]
    outputs: [outdir]
    run: mkdir -p outdir && printf x > "outdir/{token}"
  - id: sub
    needs: []
    plan: child.yaml
    context: {tok: "{token}"}
    result_handling: {on_failure: continue}
  - id: leak
    needs: [cached, sub]
    run: printf 'said %s\n' "{token}" >&2; exit 3
    result_handling:
      on_failure: {command: '/fix {token} "{error}"', retry_on_success: false}
`

// childPlan does not mark tok secret: the parent's secrets stay masked in
// the child's records all the same.
const childPlan = `name: child
context: {tok: ""}
steps:
  - id: c
    run: |
      printf '%s' "{tok}" > child-tok.bin
      p=$$
      while [ "$p" -gt 1 ]; do
        tr '\0' ' ' < /proc/$p/cmdline; echo
        p=$(sed 's/.*) //' /proc/$p/stat | cut -d' ' -f2)
      done > ancestors.txt
      printf 'child says %s\n' "{tok}" >&2
      exit 1
`

const pendingPlan = `name: pend
context: {token: ""}
secrets: [token]
use_pending_failed: true
steps:
  - id: wait
    run: printf 'cannot use %s\n' "{token}" >&2; exit 7
`

// TestSecretsNeverShown runs plans with secret values that hold quotes,
// backslashes, newlines and bytes that are not UTF-8, and reads every
// surface faber writes or shows: none may hold any part of a value. Each
// value's lines hold "zq", which nothing else in the plans does, so any
// rendering of a value (raw, shell-quoted, JSON-escaped, one line of it)
// leaves "zq" behind. A new surface is one line of the table.
func TestSecretsNeverShown(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the argv of processes from /proc")
	}
	// The sub-plan's child is this test binary, run as faber.
	t.Setenv("FABER_TEST_AS_FABER", "1")
	t.Setenv("NO_COLOR", "1")
	t.Setenv("CI", "1")
	values := []struct {
		name, secret string
		given        string // --set, --set-file or FABER_SET_TOKEN
	}{
		{"quotes", `it's "zqone" here`, "--set-file"},
		{"backslash", `zqtwo\back\\slash`, "--set"},
		{"lines", "zqthree-first\nzqthree-second", "FABER_SET_TOKEN"},
		{"bytes", "zqfour\xff\xfe-bytes", "--set-file"},
		{"all", "a'b\"zqfive\\d\n\xffzqfive'g\n\"zq\"", "--set"},
		{"all from the environment", "a'b\"zqsix\\d\n\xffzqsix'g\n\"zq\"", "FABER_SET_TOKEN"},
	}
	for _, val := range values {
		secret := val.secret
		t.Run(val.name, func(t *testing.T) {
			dir := t.TempDir()
			stateDir := filepath.Join(dir, ".faber")
			write := func(name, text string) {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			write("plan.yaml", secretPlan)
			write("child.yaml", childPlan)
			write("pend.yaml", pendingPlan)
			write("token.txt", secret+"\n")
			faber := func(stdin string, args ...string) string {
				var out, errb bytes.Buffer
				wd, _ := os.Getwd()
				if err := os.Chdir(dir); err != nil {
					t.Fatal(err)
				}
				Main(append([]string{"--state-dir", stateDir}, args...), strings.NewReader(stdin), &out, &errb)
				_ = os.Chdir(wd)
				return out.String() + errb.String()
			}
			var set []string
			switch val.given {
			case "--set":
				set = []string{"--set", "token=" + secret}
			case "--set-file":
				set = []string{"--set-file", "token=token.txt"}
			default:
				t.Setenv("FABER_SET_TOKEN", secret)
			}
			runOut := faber("", append([]string{"run", "plan.yaml", "--ui", "plain"}, set...)...)
			runID, childID := "", ""
			metas, _ := state.List(stateDir)
			for _, m := range metas {
				if m.ParentRunID != "" {
					childID = m.RunID
				} else {
					runID = m.RunID
				}
			}
			if runID == "" || childID == "" {
				t.Fatalf("no run and child run:\n%s", runOut)
			}
			jsonOut := faber("", append([]string{"run", "plan.yaml", "--ui", "json", "--no-cache"}, set...)...)
			faber("", append([]string{"run", "pend.yaml", "--ui", "plain"}, set...)...)
			pendID := ""
			metas, _ = state.List(stateDir)
			for _, m := range metas {
				if m.Plan == "pend" {
					pendID = m.RunID
				}
			}
			mcp := func(tool, runID string) func() string {
				return func() string {
					return faber(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"`+tool+`","arguments":{"run_id":"`+runID+`"}}}
`, "mcp")
				}
			}
			cli := func(args ...string) func() string {
				return func() string { return faber("", args...) }
			}
			file := func(name string) func() string {
				return func() string {
					b, err := os.ReadFile(filepath.Join(dir, name))
					if err != nil {
						t.Errorf("%s: %v", name, err)
					}
					return string(b)
				}
			}
			runFile := func(id, name string) func() string {
				return func() string {
					b, _ := os.ReadFile(filepath.Join(state.RunDir(stateDir, id), name))
					return string(b)
				}
			}
			// The live view, fed the run's events as the run fed it.
			liveView := func(id string) func() string {
				return func() string {
					plan, err := spec.Load(filepath.Join(dir, "plan.yaml"), spec.Options{Sets: map[string]string{"token": secret}})
					if err != nil {
						t.Fatal(err)
					}
					var buf bytes.Buffer
					v := tui.New(&buf, strings.NewReader(""), tui.Options{Plan: plan.Name, RunID: id, Steps: stepDefs(plan), Styles: tui.NewStyles(false)})
					for _, l := range strings.Split(runFile(id, "events.jsonl")(), "\n") {
						var e exec.Event
						if json.Unmarshal([]byte(l), &e) == nil && e.Type != "" {
							v.Event(e)
						}
					}
					v.Close()
					return buf.String()
				}
			}
			// One field of every event that has it.
			field := func(id, name string) func() string {
				return func() string {
					var b strings.Builder
					for _, l := range strings.Split(runFile(id, "events.jsonl")(), "\n") {
						var m map[string]any
						if json.Unmarshal([]byte(l), &m) == nil && m[name] != nil {
							fmt.Fprintf(&b, "%v\n", m[name])
						}
					}
					return b.String()
				}
			}
			surfaces := []struct {
				name  string
				out   func() string
				shows bool // the value would be there unmasked: *** must be
			}{
				{"run --ui plain", func() string { return runOut }, true},
				{"run --ui json", func() string { return jsonOut }, true},
				{"events --json", cli("events", runID, "--json"), true},
				{"events", cli("events", runID), true},
				{"events.jsonl", runFile(runID, "events.jsonl"), true},
				{"handler_command", field(runID, "handler_command"), true},
				{"{error}", field(runID, "error"), true},
				{"live view", liveView(runID), true},
				{"summary.json", runFile(runID, "summary.json"), false},
				{"status --json", cli("status", runID, "--json"), true},
				{"status", cli("status", runID), false},
				{"list --json", cli("list", "--json"), false},
				{"list", cli("list"), false},
				{"child events --json", cli("events", childID, "--json"), true},
				{"child status --json", cli("status", childID, "--json"), true},
				{"child argv (ps)", file("ancestors.txt"), false},
				{"the child's progress: its parent step's log", runFile(runID, "logs/sub/attempt-1.out"), true},
				{"the child's stderr: its parent step's log", runFile(runID, "logs/sub/attempt-1.err"), false},
				{"dry run", cli(append([]string{"run", "plan.yaml", "--dry-run", "--no-cache"}, set...)...), true},
				{"dry run --ui json", cli(append([]string{"run", "plan.yaml", "--dry-run", "--no-cache", "--ui", "json"}, set...)...), true},
				{"graph", cli(append([]string{"graph", "plan.yaml"}, set...)...), false},
				{"graph --format dot", cli(append([]string{"graph", "plan.yaml", "--format", "dot"}, set...)...), false},
				{"graph --format json", cli(append([]string{"graph", "plan.yaml", "--format", "json"}, set...)...), false},
				{"validate --json", cli(append([]string{"validate", "plan.yaml", "--json"}, set...)...), false},
				{"cache list", cli("cache", "list"), false},
				{"cache list --json", cli("cache", "list", "--json"), true},
				{"pending --json", cli("pending", pendID, "--json"), true},
				{"pending", cli("pending", pendID), true},
				{"recover's prompt", func() string {
					ps, err := run.Pending(stateDir, pendID)
					if err != nil {
						t.Error(err)
					}
					return run.RecoverPrompt(pendID, stateDir, ps)
				}, true},
				{"mcp get_run_status", mcp("get_run_status", pendID), true},
				{"mcp list_pending_failed_jobs", mcp("list_pending_failed_jobs", pendID), true},
				{"mcp get_run_status of the run", mcp("get_run_status", runID), true},
			}
			for _, s := range surfaces {
				out := s.out()
				if i := strings.Index(out, "zq"); i >= 0 {
					t.Errorf("%s shows the secret %q: ...%q...", s.name, secret, out[max(0, i-40):min(len(out), i+40)])
				} else if s.shows && !strings.Contains(out, "***") {
					t.Errorf("%s shows no ***:\n%s", s.name, out)
				}
			}
			// The child removed the private file of its values.
			if left, _ := filepath.Glob(filepath.Join(state.RunDir(stateDir, runID), "logs", "sub", "*.context")); len(left) > 0 {
				t.Errorf("the child's context file is left: %v", left)
			}
			// The programs get the real value.
			for _, f := range []string{"handler-arg.bin", "child-tok.bin"} {
				if got := file(f)(); got != secret {
					t.Errorf("%s = %q, want %q", f, got, secret)
				}
			}
		})
	}
}
