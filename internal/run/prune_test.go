package run

import (
	"strings"
	"testing"
	"time"
)

func TestParseAge(t *testing.T) {
	day := 24 * time.Hour
	for _, tc := range []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: "0", want: 0},
		{in: "0s", want: 0},
		{in: "36h", want: 36 * time.Hour},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "500ms", want: 500 * time.Millisecond},
		{in: "7d", want: 7 * day},
		{in: "2w", want: 14 * day},
		{in: "1w2d", want: 9 * day},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "1.5d", want: 36 * time.Hour},
		{in: "+3d", want: 3 * day},
		{in: "", wantErr: "write an age like"},
		{in: "-1d", wantErr: "negative"},
		{in: "7", wantErr: `"7" has no unit`},
		{in: "7x", wantErr: `unknown unit "x"`},
		{in: "7days", wantErr: `unknown unit "days"`},
		{in: "d", wantErr: "write an age like"},
		{in: "7d 2h", wantErr: "write an age like"},
		{in: "100000000w", wantErr: "too long"},
		{in: "2562047h1d", wantErr: "too long"},
	} {
		got, err := ParseAge(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseAge(%q) = %v, %v; want error containing %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseAge(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestPruneRuleChooses(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	ended := map[string]bool{"success": true, "failed": true, "remediation_failed": true}
	run := func(status string, age time.Duration) *PruneRun {
		r := &PruneRun{Status: status}
		r.StartedAt = now.Add(-age)
		return r
	}
	day := 24 * time.Hour
	for _, tc := range []struct {
		name string
		rule PruneRule
		r    *PruneRun
		nth  int
		want bool
	}{
		{"keep: among the newest", PruneRule{Statuses: ended, Keep: 2}, run("success", 0), 1, false},
		{"keep: beyond", PruneRule{Statuses: ended, Keep: 2}, run("failed", 0), 2, true},
		{"keep 0", PruneRule{Statuses: ended, Keep: 0}, run("success", 0), 0, true},
		{"waiting status", PruneRule{Statuses: ended, Keep: 0}, run("pending_failed", 0), 5, false},
		{"unreadable", PruneRule{Statuses: ended, Keep: 0}, run("", 0), 5, false},
		{"age: older", PruneRule{Statuses: ended, Keep: -1, OlderThan: 7 * day, ByAge: true}, run("success", 8*day), 0, true},
		{"age: exactly", PruneRule{Statuses: ended, Keep: -1, OlderThan: 7 * day, ByAge: true}, run("success", 7*day), 0, false},
		{"age: newer", PruneRule{Statuses: ended, Keep: -1, OlderThan: 7 * day, ByAge: true}, run("success", 6*day), 9, false},
		{"both: kept by keep", PruneRule{Statuses: ended, Keep: 3, OlderThan: day, ByAge: true}, run("success", 8*day), 2, false},
		{"both: kept by age", PruneRule{Statuses: ended, Keep: 3, OlderThan: day, ByAge: true}, run("success", time.Hour), 3, false},
		{"both: chosen", PruneRule{Statuses: ended, Keep: 3, OlderThan: day, ByAge: true}, run("failed", 2*day), 3, true},
	} {
		if got := tc.rule.chooses(tc.r, tc.nth, now); got != tc.want {
			t.Errorf("%s: chooses = %v, want %v", tc.name, got, tc.want)
		}
	}
}
