package model

import (
	"strings"
	"testing"
)

func exits(codes ...int) []Exit {
	var xs []Exit
	for _, c := range codes {
		xs = append(xs, Exit{Code: c})
	}
	return xs
}

// line is one step's part of an outcome, as Outcome.String prints it.
func line(id, status string, attempt, handlers, recoveries int) string {
	return (&Outcome{Steps: []StepOut{{id, status, attempt, handlers, recoveries}}}).String()[len("exit codes []\n"):]
}

// TestOutcomes checks the model against outcomes worked out by hand from
// SPEC: it is the model's own test, so a change that breaks a rule of the
// contract in the model shows here before it can hide a runner's bug.
func TestOutcomes(t *testing.T) {
	stop := OnFailure{Kind: OnStop}
	tests := []struct {
		name string
		p    Plan
		// want: every allowed outcome holds all of these lines, and
		// codes is every outcome's exit codes.
		want  []string
		codes string
		n     int // number of allowed outcomes
	}{
		{"retry keyword: fails once, then succeeds",
			Plan{Jobs: 1, Steps: []Step{{ID: "a", OnFailure: OnFailure{Kind: OnRetry, Explicit: true, MaxRetries: 1}, Attempts: exits(1, 0)}}},
			[]string{line("a", "success", 2, 0, 0)}, "[0]", 1},
		{"rule budget used up, then stop (SPEC §5: max_retries N = N+1 attempts)",
			Plan{Jobs: 1, Steps: []Step{{ID: "a", Rules: []Rule{{MatchAll: true, MaxRetries: 2, Recovery: true}}, OnFailure: stop, Attempts: exits(1, 1, 1)}}},
			[]string{line("a", "failure", 3, 0, 2)}, "[1]", 1},
		{"the specific rule wins over an earlier catch-all",
			Plan{Jobs: 1, Steps: []Step{{ID: "a", Rules: []Rule{{MatchAll: true, MaxRetries: 0}, {Codes: []int{2}, MaxRetries: 1}}, Attempts: exits(2, 0)}}},
			[]string{line("a", "success", 2, 0, 0)}, "[0]", 1},
		{"a result-file failure matches catch-alls only",
			Plan{Jobs: 1, Steps: []Step{{ID: "a", Rules: []Rule{{Codes: []int{0}, MaxRetries: 1}}, Attempts: []Exit{{Result: true}}}}},
			[]string{line("a", "failure", 1, 0, 0)}, "[1]", 1},
		{"a failing handler: remediation_failed, the run stops",
			Plan{Jobs: 1, Steps: []Step{
				{ID: "a", OnFailure: OnFailure{Kind: OnCommand, Explicit: true, MaxRetries: 1, RetryOnSuccess: true}, Attempts: exits(1), Handler: []int{1}},
				{ID: "b", Deps: []int{0}}}},
			[]string{line("a", "remediation_failed", 1, 1, 0), line("b", "canceled", 0, 0, 0)}, "[1]", 1},
		{"a handler's success re-runs the step; still failing after its retries",
			Plan{Jobs: 1, Steps: []Step{{ID: "a", OnFailure: OnFailure{Kind: OnCommand, Explicit: true, MaxRetries: 1, RetryOnSuccess: true}, Attempts: exits(1, 1)}}},
			[]string{line("a", "remediation_failed", 2, 1, 0)}, "[1]", 1},
		{"retry_on_success false: the handler runs once, the step stays failure",
			Plan{Jobs: 1, Steps: []Step{{ID: "a", OnFailure: OnFailure{Kind: OnCommand, Explicit: true, MaxRetries: 1}, Attempts: exits(1)}}},
			[]string{line("a", "failure", 1, 1, 0)}, "[1]", 1},
		{"continue: dependents run, the run fails",
			Plan{Jobs: 1, Steps: []Step{{ID: "a", OnFailure: OnFailure{Kind: OnContinue, Explicit: true}, Attempts: exits(1)}, {ID: "b", Deps: []int{0}}}},
			[]string{line("a", "failure", 1, 0, 0), line("b", "success", 1, 0, 0)}, "[1]", 1},
		{"pending_failed waits; the independent branch goes on (SPEC §6)",
			Plan{Jobs: 2, UsePendingFailed: true, Steps: []Step{{ID: "a", Attempts: exits(1)}, {ID: "b", Deps: []int{0}}, {ID: "c"}}},
			[]string{line("a", "pending_failed", 1, 0, 0), line("b", "pending", 0, 0, 0), line("c", "success", 1, 0, 0)}, "[3]", 1},
		{"classified --retry, then resumed: the step's next attempt",
			Plan{Jobs: 1, UsePendingFailed: true, Policy: Policy{Sessions: 2, ClassifyRetry: func(string, int) bool { return true }},
				Steps: []Step{{ID: "a", Attempts: exits(1, 0)}, {ID: "b", Deps: []int{0}}}},
			[]string{line("a", "success", 2, 0, 0), line("b", "success", 1, 0, 0)}, "[3 0]", 1},
		{"classified --fail: final on resume, its dependents canceled",
			Plan{Jobs: 1, UsePendingFailed: true, Policy: Policy{Sessions: 2, ClassifyRetry: func(string, int) bool { return false }},
				Steps: []Step{{ID: "a", Attempts: exits(1, 0)}, {ID: "b", Deps: []int{0}}}},
			[]string{line("a", "failure", 1, 0, 0), line("b", "canceled", 0, 0, 0)}, "[3 1]", 1},
		{"jobs 1: ready steps start in plan order, so the stop cancels the later one",
			Plan{Jobs: 1, Steps: []Step{{ID: "a", Attempts: exits(1)}, {ID: "b"}}},
			[]string{line("a", "failure", 1, 0, 0), line("b", "canceled", 0, 0, 0)}, "[1]", 1},
		{"drain: a running sibling finishes",
			Plan{Jobs: 2, Steps: []Step{{ID: "a", Attempts: exits(1)}, {ID: "b"}}},
			[]string{line("a", "failure", 1, 0, 0), line("b", "success", 1, 0, 0)}, "[1]", 1},
		{"cancel: a running sibling is canceled, or had ended on its own",
			Plan{Jobs: 2, Cancel: true, Steps: []Step{{ID: "a", Attempts: exits(1)}, {ID: "b"}}},
			[]string{line("a", "failure", 1, 0, 0)}, "[1]", 2},
		{"cancel: a sibling in its handler is canceled, never retried after the stop",
			Plan{Jobs: 2, Cancel: true, Steps: []Step{
				{ID: "a", Attempts: exits(1)},
				{ID: "b", OnFailure: OnFailure{Kind: OnCommand, Explicit: true, MaxRetries: 1, RetryOnSuccess: true}, Attempts: exits(1, 0)}}},
			[]string{}, "[1]", 0},
		{"a join fails when an item did; a continue join lets dependents run",
			Plan{Jobs: 2, Steps: []Step{
				{ID: "f[x]", OnFailure: OnFailure{Kind: OnContinue, Explicit: true}, Attempts: exits(1)},
				{ID: "f[y]", OnFailure: OnFailure{Kind: OnContinue, Explicit: true}},
				{ID: "f", Join: true, Items: []int{0, 1}, OnFailure: OnFailure{Kind: OnContinue, Explicit: true}},
				{ID: "g", Deps: []int{2}}}},
			[]string{line("f", "failure", 1, 0, 0), line("g", "success", 1, 0, 0)}, "[1]", 1},
		{"a join with no items waits for its needs",
			Plan{Jobs: 2, Steps: []Step{
				{ID: "up", Attempts: exits(1)},
				{ID: "f", Join: true, Deps: []int{0}},
				{ID: "g", Deps: []int{1}}}},
			[]string{line("f", "canceled", 0, 0, 0), line("g", "canceled", 0, 0, 0)}, "[1]", 1},
		{"the end step runs after a stop; its failure fails a successful run",
			Plan{Jobs: 1, End: &Step{ID: "end", Attempts: exits(1)}, Steps: []Step{{ID: "a"}}},
			[]string{line("a", "success", 1, 0, 0), line("end", "failure", 1, 0, 0)}, "[1]", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Outcomes(&tt.p)
			if err != nil {
				t.Fatal(err)
			}
			if tt.n > 0 && len(got) != tt.n {
				t.Errorf("%d outcomes, want %d:\n%s", len(got), tt.n, strings.Join(Keys(got), "\n"))
			}
			for _, o := range got {
				s := o.String()
				if !strings.HasPrefix(s, "exit codes "+tt.codes+"\n") {
					t.Errorf("an outcome with other exit codes than %s:\n%s", tt.codes, s)
				}
				for _, w := range tt.want {
					if !strings.Contains(s, w) {
						t.Errorf("an outcome without %q:\n%s", w, s)
					}
				}
			}
		})
	}
}

// TestCancelNeverRetries: under a cancel stop no outcome has a step that
// failed and was re-run after the stop came; in the plan below b's handler
// can only succeed and re-run b if it ends before a fails.
func TestCancelNeverRetries(t *testing.T) {
	p := &Plan{Jobs: 2, Cancel: true, Steps: []Step{
		{ID: "a", Attempts: exits(1)},
		{ID: "b", OnFailure: OnFailure{Kind: OnCommand, Explicit: true, MaxRetries: 1, RetryOnSuccess: true}, Attempts: exits(1, 0)}}}
	got, err := Outcomes(p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		// b's handler killed by the stop.
		line("b", "canceled", 1, 1, 0): false,
		// b's handler and retry done before a failed.
		line("b", "success", 2, 1, 0): false,
		// b's retry attempt running when a failed: killed.
		line("b", "canceled", 2, 1, 0): false,
		// a's failure while b's first attempt runs: b killed, or ended on
		// its own and its handler does not start after the stop.
		line("b", "canceled", 1, 0, 0): false,
	}
	for _, o := range got {
		for w := range want {
			if strings.Contains(o.String(), w) {
				want[w] = true
			}
		}
	}
	for w, seen := range want {
		if !seen {
			t.Errorf("no outcome with %q; outcomes:\n%s", w, strings.Join(Keys(got), "\n"))
		}
	}
}

// TestGenModels: every drawn plan converts to a model plan whose steps'
// needs come first, and the model explores it (or says it is too big).
func TestGenModels(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		c := Gen(seed)
		p := c.Model()
		for i, s := range p.Steps {
			for _, d := range append(append([]int{}, s.Deps...), s.Items...) {
				if d >= i {
					t.Fatalf("seed %d: step %s needs a later step %d", seed, s.ID, d)
				}
			}
		}
		if len(c.StepIDs()) != len(p.Steps)+boolInt(c.End) {
			t.Fatalf("seed %d: %d ids for %d steps", seed, len(c.StepIDs()), len(p.Steps))
		}
		if _, err := Outcomes(p); err != nil && err != ErrTooBig {
			t.Fatal(err)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestGenEngines: a Batch case is on Slurm or Grid Engine, both drawn, and
// its plan says so; shrinking it tries no engine and the other one.
func TestGenEngines(t *testing.T) {
	seen := map[string]int{}
	for seed := uint64(1); seed <= 200; seed++ {
		c := Gen(seed)
		if !c.Batch {
			if c.Engine != "" || strings.Contains(c.YAML(), "executor:") {
				t.Fatalf("seed %d: not a Batch case, engine %q", seed, c.Engine)
			}
			continue
		}
		seen[c.Engine]++
		if !strings.Contains(c.YAML(), "\nexecutor: "+c.Engine+"\n") {
			t.Fatalf("seed %d: engine %q, plan:\n%s", seed, c.Engine, c.YAML())
		}
		var none, other bool
		for _, d := range c.Shrinks() {
			none = none || !d.Batch
			other = other || (d.Batch && d.Engine != c.Engine && d.Engine != "")
		}
		if !none || !other {
			t.Fatalf("seed %d: shrinks without an engine %v, on the other %v", seed, none, other)
		}
	}
	if seen["slurm"] == 0 || seen["sge"] == 0 || len(seen) != 2 {
		t.Errorf("engines drawn: %v", seen)
	}
}

// TestGenStopDead: only a killed case stops its dead run before the
// resume, about half of them do, and the shrinker tries without the stop.
func TestGenStopDead(t *testing.T) {
	kills, stops := 0, 0
	for seed := uint64(1); seed <= 400; seed++ {
		c := Gen(seed)
		if c.Kill == 0 {
			if c.StopDead {
				t.Fatalf("seed %d: StopDead without Kill", seed)
			}
			continue
		}
		kills++
		if !c.StopDead {
			continue
		}
		stops++
		without := false
		for _, d := range c.Shrinks() {
			without = without || (!d.StopDead && d.Kill > 0)
		}
		if !without {
			t.Fatalf("seed %d: no shrink keeps the kill without the stop", seed)
		}
	}
	if stops == 0 || stops == kills {
		t.Errorf("%d of %d killed cases stop their run", stops, kills)
	}
}
