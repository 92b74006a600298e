package main

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
		got, err := parseAge(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseAge(%q) = %v, %v; want error containing %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseAge(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestHumanAgeAndBytes(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second:                 "0s",
		42 * time.Second:             "42s",
		17*time.Minute + time.Second: "17m",
		47 * time.Hour:               "47h",
		49 * time.Hour:               "2d",
		10 * 24 * time.Hour:          "10d",
	} {
		if got := humanAge(d); got != want {
			t.Errorf("humanAge(%v) = %q, want %q", d, got, want)
		}
	}
	for n, want := range map[int64]string{
		0: "0 B", 999: "999 B", 1000: "1.0 kB", 57300: "57.3 kB",
		1_200_000: "1.2 MB", 3_400_000_000: "3.4 GB", 5e15: "5000.0 TB",
	} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestPruneRuleChooses(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	ended := map[string]bool{"success": true, "failed": true, "remediation_failed": true}
	run := func(status string, age time.Duration) *pruneRun {
		r := &pruneRun{status: status}
		r.meta.StartedAt = now.Add(-age)
		return r
	}
	day := 24 * time.Hour
	for _, tc := range []struct {
		name string
		rule pruneRule
		r    *pruneRun
		nth  int
		want bool
	}{
		{"keep: among the newest", pruneRule{statuses: ended, keep: 2}, run("success", 0), 1, false},
		{"keep: beyond", pruneRule{statuses: ended, keep: 2}, run("failed", 0), 2, true},
		{"keep 0", pruneRule{statuses: ended, keep: 0}, run("success", 0), 0, true},
		{"waiting status", pruneRule{statuses: ended, keep: 0}, run("pending_failed", 0), 5, false},
		{"unreadable", pruneRule{statuses: ended, keep: 0}, run("", 0), 5, false},
		{"age: older", pruneRule{statuses: ended, keep: -1, olderThan: 7 * day, byAge: true}, run("success", 8*day), 0, true},
		{"age: exactly", pruneRule{statuses: ended, keep: -1, olderThan: 7 * day, byAge: true}, run("success", 7*day), 0, false},
		{"age: newer", pruneRule{statuses: ended, keep: -1, olderThan: 7 * day, byAge: true}, run("success", 6*day), 9, false},
		{"both: kept by keep", pruneRule{statuses: ended, keep: 3, olderThan: day, byAge: true}, run("success", 8*day), 2, false},
		{"both: kept by age", pruneRule{statuses: ended, keep: 3, olderThan: day, byAge: true}, run("success", time.Hour), 3, false},
		{"both: chosen", pruneRule{statuses: ended, keep: 3, olderThan: day, byAge: true}, run("failed", 2*day), 3, true},
	} {
		if got := tc.rule.chooses(tc.r, tc.nth, now); got != tc.want {
			t.Errorf("%s: chooses = %v, want %v", tc.name, got, tc.want)
		}
	}
}
