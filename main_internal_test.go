package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/state"
)

// TestExitCode: the one error -> exit code map (SPEC §1).
func TestExitCode(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("write /dev/stdout: no space left on device"), 1},
		{fmt.Errorf("run x: %w", state.ErrNotFound), 4},
		{fmt.Errorf("open: %w", state.ErrDamaged), 4},
		{fmt.Errorf("resume: %w", &state.LockedError{PID: 7}), 4},
		{fmt.Errorf("plan: %w", &spec.Invalid{}), 2},
		{withCode(exitUsage, errors.New("--jobs must be at least 1")), 2},
		{codeOnly(exitPending), 3},
		{withCode(exitInterrupted, fmt.Errorf("x: %w", state.ErrNotFound)), 130}, // a command's own classification wins
	}
	for _, tt := range tests {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

// TestPlanLimitsAgree: every plan that validates fits in a run's store, so
// run never refuses what validate accepted.
func TestPlanLimitsAgree(t *testing.T) {
	if spec.MaxPlanSize > state.MaxPlanSize {
		t.Fatalf("spec takes plans of up to %d bytes, a run's store only %d", spec.MaxPlanSize, state.MaxPlanSize)
	}
}

// TestParseSync: FABER_SYNC's yes and no, in any case; anything else is an
// error naming the variable, never a quiet no.
func TestParseSync(t *testing.T) {
	for v, want := range map[string]bool{"1": true, "true": true, "TRUE": true, "yes": true, "On": true, " 1 ": true,
		"": false, "0": false, "false": false, "no": false, "OFF": false} {
		if got, err := parseSync(v); err != nil || got != want {
			t.Errorf("parseSync(%q) = %v, %v; want %v", v, got, err, want)
		}
	}
	for _, v := range []string{"y", "2", "enabled", "fsync"} {
		if _, err := parseSync(v); err == nil || !strings.Contains(err.Error(), "FABER_SYNC=") {
			t.Errorf("parseSync(%q): %v, want an error naming FABER_SYNC", v, err)
		}
	}
}

// TestRunStatusOf: status --json learns a run's status from the fields
// before its steps (a nested "steps", as in a part's, is skipped whole),
// and says it does not know when the status is not there before them.
func TestRunStatusOf(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{`{"run_id":"r","plan":"p","status":"in_progress","started_at":"x","steps":[{"status":"success"}]}`, "in_progress", true},
		{`{"run_id":"r","part":{"steps":["a"],"from":[]},"status":"success","steps":[]}`, "success", true},
		{`{"run_id":"r","steps":[{"status":"in_progress"}],"status":"success"}`, "", false},
		{`{"run_id":"r"}`, "", false},
		{`[1]`, "", false},
		{`{"status":1}`, "", false},
	} {
		got, ok := runStatusOf([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("runStatusOf(%s) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
