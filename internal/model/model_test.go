package model

import (
	"crypto/sha256"
	"fmt"
	"reflect"
	"slices"
	"sort"
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
	pub := []Exit{{Out: OutPublish}} // exits 0, publishing v
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
		{"capacity: a step whose CPUs are held does not start; a fail-fast stop cancels it unstarted",
			Plan{Jobs: 4, Cancel: true, CPUs: 2, Steps: []Step{{ID: "a", CPUs: 2, Attempts: exits(1)}, {ID: "b", CPUs: 1}}},
			[]string{line("a", "failure", 1, 0, 0), line("b", "canceled", 0, 0, 0)}, "[1]", 1},
		{"the oldest blocked step is not overtaken: the small failing step waits for the big one",
			Plan{Jobs: 4, Cancel: true, CPUs: 2, Steps: []Step{{ID: "s1", CPUs: 1}, {ID: "big", CPUs: 2}, {ID: "small", CPUs: 1, Attempts: exits(1)}}},
			[]string{line("s1", "success", 1, 0, 0), line("big", "success", 1, 0, 0), line("small", "failure", 1, 0, 0)}, "[1]", 1},
		{"a pool of 1 runs its steps one at a time; a step that requests nothing is not held back by the blocked one (it ran: two outcomes)",
			Plan{Jobs: 4, Cancel: true, CPUs: 1, PoolSizes: []int{1}, Steps: []Step{
				{ID: "p1", Pools: []int{0}, CPUs: 1, Attempts: exits(1)}, {ID: "p2", Pools: []int{0}}, {ID: "free"}}},
			[]string{line("p1", "failure", 1, 0, 0), line("p2", "canceled", 0, 0, 0)}, "[1]", 2},
		{"a handler that uses a published value runs, and its success re-runs the step",
			Plan{Jobs: 1, Steps: []Step{{ID: "a", Attempts: pub},
				{ID: "b", Deps: []int{0}, HUses: []int{0}, OnFailure: OnFailure{Kind: OnCommand, Explicit: true, MaxRetries: 1, RetryOnSuccess: true}, Attempts: exits(1, 0)}}},
			[]string{line("b", "success", 2, 1, 0)}, "[0]", 1},
		{"a handler that uses a missing value cannot start: remediation_failed",
			Plan{Jobs: 1, Steps: []Step{{ID: "a"},
				{ID: "b", Deps: []int{0}, HUses: []int{0}, OnFailure: OnFailure{Kind: OnCommand, Explicit: true, MaxRetries: 1, RetryOnSuccess: true}, Attempts: exits(1, 0)}}},
			[]string{line("b", "remediation_failed", 1, 1, 0)}, "[1]", 1},
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
		{"budget: a rule's retries stop at the step's limit of units (README \"Budgets\")",
			Plan{Jobs: 1, Steps: []Step{{ID: "a", Rules: []Rule{{MatchAll: true, MaxRetries: 5}}, Attempts: exits(1, 1, 1, 1), Spend: []int{1, 1, 1, 1}, Budget: &Budget{Units: 2}}, {ID: "b", Deps: []int{0}}}},
			[]string{line("a", "failure", 2, 0, 0), line("b", "canceled", 0, 0, 0)}, "[1]", 1},
		{"budget: max_attempts stops on_failure retry; continue still holds",
			Plan{Jobs: 1, Steps: []Step{{ID: "a", OnFailure: OnFailure{Kind: OnContinue, Explicit: true}, Rules: []Rule{{MatchAll: true, MaxRetries: 5}}, Attempts: exits(1, 1, 1), Budget: &Budget{Attempts: 2}}, {ID: "b", Deps: []int{0}}}},
			[]string{line("a", "failure", 2, 0, 0), line("b", "success", 1, 0, 0)}, "[1]", 1},
		{"budget: a handler that spends the rest does not re-run the step",
			Plan{Jobs: 1, Steps: []Step{{ID: "a", OnFailure: OnFailure{Kind: OnCommand, Explicit: true, MaxRetries: 3, RetryOnSuccess: true}, Attempts: exits(1, 0), Spend: []int{1}, HSpend: []int{1}, Budget: &Budget{Units: 2}}}},
			[]string{line("a", "failure", 1, 1, 0)}, "[1]", 1},
		{"budget: the plan's, spent by one step, refuses the next one's start (an attempt that runs nothing)",
			Plan{Jobs: 1, Budgets: []Budget{{Units: 2, Steps: []int{0, 1}}}, Steps: []Step{{ID: "a", Spend: []int{2}}, {ID: "b", Deps: []int{0}}}},
			[]string{line("a", "success", 1, 0, 0), line("b", "failure", 1, 0, 0)}, "[1]", 1},
		{"budget: unanticipated, it waits as pending_failed; classified --retry it runs once more whatever the budget",
			Plan{Jobs: 1, UsePendingFailed: true, Policy: Policy{Sessions: 3, ClassifyRetry: func(string, int) bool { return true }},
				Steps: []Step{{ID: "a", Attempts: exits(1, 1, 0), Budget: &Budget{Attempts: 1}}}},
			[]string{line("a", "success", 3, 0, 0)}, "[3 3 0]", 1},
		{"budget: an on: [budget] rule makes it anticipated, and grants no retry",
			Plan{Jobs: 1, UsePendingFailed: true, Steps: []Step{{ID: "a", Rules: []Rule{{OnBudget: true, MaxRetries: 3}}, Attempts: exits(1, 0), Budget: &Budget{Attempts: 1}}}},
			[]string{line("a", "failure", 1, 0, 0)}, "[1]", 1},
		{"budget: kept across a resume, so the resumed step's start is refused",
			Plan{Jobs: 1, Policy: Policy{Sessions: 2, ResumeFailed: true}, Steps: []Step{{ID: "a", Attempts: exits(1, 0), Budget: &Budget{Attempts: 1}}}},
			[]string{line("a", "failure", 2, 0, 0)}, "[1 1]", 1},
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
		{"max_parallel 1 under a fail-fast stop: the items it held back never start",
			Plan{Jobs: 4, Cancel: true, Steps: []Step{
				{ID: "f[1]", Group: 3, Attempts: exits(1)},
				{ID: "f[2]", Group: 3},
				{ID: "f[3]", Group: 3},
				{ID: "f", Group: -1, Join: true, Items: []int{0, 1, 2}, MaxPar: 1}}},
			[]string{line("f[1]", "failure", 1, 0, 0), line("f[2]", "canceled", 0, 0, 0), line("f[3]", "canceled", 0, 0, 0)}, "[1]", 1},
		{"max_parallel 1 on a batch engine: the items start together as one throttled array, so the stop finds them started (each ran, or was canceled)",
			Plan{Jobs: 4, Cancel: true, Arrays: true, Steps: []Step{
				{ID: "f[1]", Group: 3, Attempts: exits(1)},
				{ID: "f[2]", Group: 3},
				{ID: "f[3]", Group: 3},
				{ID: "f", Group: -1, Join: true, Items: []int{0, 1, 2}, MaxPar: 1}}},
			[]string{line("f[1]", "failure", 1, 0, 0)}, "[1]", 4},
		{"max_parallel on a batch engine: a retry waits while the array's others are in flight, then goes (no more attempts than granted)",
			Plan{Jobs: 4, Arrays: true, Steps: []Step{
				{ID: "f[1]", Group: 3, OnFailure: OnFailure{Kind: OnRetry, Explicit: true, MaxRetries: 1}, Attempts: exits(1, 0)},
				{ID: "f[2]", Group: 3},
				{ID: "f[3]", Group: 3},
				{ID: "f", Group: -1, Join: true, Items: []int{0, 1, 2}, MaxPar: 2}}},
			[]string{line("f[1]", "success", 2, 0, 0), line("f[2]", "success", 1, 0, 0), line("f", "success", 1, 0, 0)}, "[0]", 1},
		{"max_parallel: a cached item is not part of an array pass (it is looked up first), so a stop finds the next held back",
			Plan{Jobs: 4, Cancel: true, Arrays: true, Steps: []Step{
				{ID: "f[1]", Group: 3, Cacheable: true, Attempts: exits(1)},
				{ID: "f[2]", Group: 3, Cacheable: true},
				{ID: "f[3]", Group: 3, Cacheable: true},
				{ID: "f", Group: -1, Join: true, Items: []int{0, 1, 2}, MaxPar: 1}}},
			[]string{line("f[1]", "failure", 1, 0, 0), line("f[2]", "canceled", 0, 0, 0), line("f[3]", "canceled", 0, 0, 0)}, "[1]", 1},
		{"a join with no items waits for its needs",
			Plan{Jobs: 2, Steps: []Step{
				{ID: "up", Attempts: exits(1)},
				{ID: "f", Join: true, Deps: []int{0}},
				{ID: "g", Deps: []int{1}}}},
			[]string{line("f", "canceled", 0, 0, 0), line("g", "canceled", 0, 0, 0)}, "[1]", 1},
		{"the end step runs after a stop; its failure fails a successful run",
			Plan{Jobs: 1, End: &Step{ID: "end", Attempts: exits(1)}, Steps: []Step{{ID: "a"}}},
			[]string{line("a", "success", 1, 0, 0), line("end", "failure", 1, 0, 0)}, "[1]", 1},

		// Step outputs (README "Step outputs").
		{"outputs: a consumer runs with what its producer published",
			Plan{Jobs: 1, Steps: []Step{{ID: "a", Attempts: pub}, {ID: "b", Deps: []int{0}, Uses: []int{0}}}},
			[]string{line("a", "success", 1, 0, 0), line("b", "success", 1, 0, 0)}, "[0]", 1},
		{"outputs: a producer that published nothing fails the consumer's attempts, whatever they would exit",
			Plan{Jobs: 1, Steps: []Step{{ID: "a"}, {ID: "b", Deps: []int{0}, Uses: []int{0},
				OnFailure: OnFailure{Kind: OnRetry, Explicit: true, MaxRetries: 1}}}},
			[]string{line("a", "success", 1, 0, 0), line("b", "failure", 2, 0, 0)}, "[1]", 1},
		{"outputs: a missing output is matched by catch-alls only",
			Plan{Jobs: 1, Steps: []Step{{ID: "a"}, {ID: "b", Deps: []int{0}, Uses: []int{0},
				Rules: []Rule{{Codes: []int{0, 1, 2, 3}, MaxRetries: 2}, {MatchAll: true, MaxRetries: 1, Recovery: true}}}}},
			[]string{line("b", "failure", 2, 0, 1)}, "[1]", 1},
		{"outputs: only the last successful attempt's count; a failed attempt's publish is ignored",
			Plan{Jobs: 1, Steps: []Step{
				{ID: "a", OnFailure: OnFailure{Kind: OnRetry, Explicit: true, MaxRetries: 1}, Attempts: []Exit{{Code: 1, Out: OutPublish}, {}}},
				{ID: "b", Deps: []int{0}, Uses: []int{0}}}},
			[]string{line("a", "success", 2, 0, 0), line("b", "failure", 1, 0, 0)}, "[1]", 1},
		{"outputs: a producer failed under on_failure: continue published nothing",
			Plan{Jobs: 1, Steps: []Step{
				{ID: "a", OnFailure: OnFailure{Kind: OnContinue, Explicit: true}, Attempts: []Exit{{Code: 1, Out: OutPublish}}},
				{ID: "b", Deps: []int{0}},
				{ID: "c", Deps: []int{0}, Uses: []int{0}}}},
			[]string{line("a", "failure", 1, 0, 0), line("b", "success", 1, 0, 0), line("c", "failure", 1, 0, 0)}, "[1]", 1},
		{"outputs: a malformed outputs file fails an attempt that exited 0; exit-code rules do not match it",
			Plan{Jobs: 1, Steps: []Step{
				{ID: "a", Rules: []Rule{{Codes: []int{0, 1}, MaxRetries: 1}}, Attempts: []Exit{{Out: OutMalformed}, {Out: OutPublish}}},
				{ID: "b", Deps: []int{0}, Uses: []int{0}}}},
			[]string{line("a", "failure", 1, 0, 0), line("b", "canceled", 0, 0, 0)}, "[1]", 1},
		{"outputs: a catch-all rule matches a malformed outputs file",
			Plan{Jobs: 1, Steps: []Step{
				{ID: "a", Rules: []Rule{{Codes: []int{0, 1}, MaxRetries: 1}, {MatchAll: true, MaxRetries: 1}}, Attempts: []Exit{{Out: OutMalformed}, {Out: OutPublish}}},
				{ID: "b", Deps: []int{0}, Uses: []int{0}}}},
			[]string{line("a", "success", 2, 0, 0), line("b", "success", 1, 0, 0)}, "[0]", 1},
		{"outputs: a failed attempt's malformed file is ignored: its exit code decides",
			Plan{Jobs: 1, Steps: []Step{
				{ID: "a", Rules: []Rule{{Codes: []int{1}, MaxRetries: 1}}, Attempts: []Exit{{Code: 1, Out: OutMalformed}, {Out: OutPublish}}},
				{ID: "b", Deps: []int{0}, Uses: []int{0}}}},
			[]string{line("a", "success", 2, 0, 0), line("b", "success", 1, 0, 0)}, "[0]", 1},
		{"outputs: resume keeps a success's outputs",
			Plan{Jobs: 1, Policy: Policy{Sessions: 2, ResumeFailed: true}, Steps: []Step{
				{ID: "a", Attempts: pub},
				{ID: "b", Deps: []int{0}, Uses: []int{0}, Attempts: exits(1, 0)}}},
			[]string{line("a", "success", 1, 0, 0), line("b", "success", 2, 0, 0)}, "[1 0]", 1},
		{"outputs: a cached step restores what its entry's success published",
			Plan{Jobs: 1, Policy: Policy{Rerun: true}, Steps: []Step{
				{ID: "a", Cacheable: true, Attempts: pub},
				{ID: "b", Deps: []int{0}, Uses: []int{0}}}},
			[]string{line("run2:a", "cached", 0, 0, 0), line("run2:b", "success", 1, 0, 0)}, "[0 0]", 1},
		{"outputs: a cached step whose entry's success published nothing",
			Plan{Jobs: 1, Policy: Policy{Rerun: true}, Steps: []Step{
				{ID: "a", Cacheable: true},
				{ID: "b", Deps: []int{0}, Uses: []int{0}}}},
			[]string{line("run2:a", "cached", 0, 0, 0), line("run2:b", "failure", 1, 0, 0)}, "[1 1]", 1},
		{"cache: a success after a continued failure upstream has no key: no entry, the next run runs it (seed 114942)",
			Plan{Jobs: 1, Policy: Policy{Sessions: 2, ResumeFailed: true, Rerun: true}, Steps: []Step{
				{ID: "a", Cacheable: true, OnFailure: OnFailure{Kind: OnContinue, Explicit: true}, Attempts: exits(1, 0)},
				{ID: "b", Deps: []int{0}, Cacheable: true}}},
			[]string{line("a", "success", 2, 0, 0), line("b", "success", 1, 0, 0),
				line("run2:a", "cached", 0, 0, 0), line("run2:b", "success", 1, 0, 0)}, "[1 0 0]", 1},
		{"outputs: a consumer's key holds the outputs it uses: the same ones are a hit",
			Plan{Jobs: 1, Policy: Policy{Rerun: true}, Steps: []Step{
				{ID: "a", Attempts: pub},
				{ID: "b", Deps: []int{0}, Uses: []int{0}, Cacheable: true}}},
			[]string{line("run2:a", "success", 1, 0, 0), line("run2:b", "cached", 0, 0, 0)}, "[0 0]", 1},
		{"outputs: the end step fails when an output it uses is missing",
			Plan{Jobs: 1, End: &Step{ID: "end", Uses: []int{0}}, Steps: []Step{{ID: "a"}}},
			[]string{line("a", "success", 1, 0, 0), line("end", "failure", 1, 0, 0)}, "[1]", 1},
		{"outputs: the end step runs with an output published",
			Plan{Jobs: 1, End: &Step{ID: "end", Uses: []int{0}}, Steps: []Step{{ID: "a", Attempts: pub}}},
			[]string{line("a", "success", 1, 0, 0), line("end", "success", 1, 0, 0)}, "[0]", 1},
		{"outputs: the end step fails when the producer was canceled",
			Plan{Jobs: 1, End: &Step{ID: "end", Uses: []int{1}}, Steps: []Step{{ID: "x", Attempts: exits(1)}, {ID: "a", Attempts: pub}}},
			[]string{line("a", "canceled", 0, 0, 0), line("end", "failure", 1, 0, 0)}, "[1]", 1},
		{"gate: a step waiting for approval holds its dependent; the session ends awaiting_approval, exit 3",
			Plan{Jobs: 2, Steps: []Step{{ID: "a", Gate: GateWait}, {ID: "b", Deps: []int{0}}, {ID: "c"}}},
			[]string{line("a", "awaiting_approval", 0, 0, 0), line("b", "pending", 0, 0, 0), line("c", "success", 1, 0, 0)}, "[3]", 1},
		{"gate: approved between sessions, the resume runs it once",
			Plan{Jobs: 1, Policy: Policy{Sessions: 2, Approve: func(string, int) bool { return true }}, Steps: []Step{{ID: "a", Gate: GateWait}, {ID: "b", Deps: []int{0}}}},
			[]string{line("a", "success", 1, 0, 0), line("b", "success", 1, 0, 0)}, "[3 0]", 1},
		{"gate: rejected between sessions, the resume fails it (on_failure stop)",
			Plan{Jobs: 1, Policy: Policy{Sessions: 2, Approve: func(string, int) bool { return false }}, Steps: []Step{{ID: "a", Gate: GateWait}, {ID: "b", Deps: []int{0}}}},
			[]string{line("a", "failure", 1, 0, 0), line("b", "canceled", 0, 0, 0)}, "[3 1]", 1},
		{"gate: a rejection by timeout goes through the handler, whose re-run asks again: the loop ends remediation_failed",
			Plan{Jobs: 1, Steps: []Step{{ID: "a", Gate: GateReject, OnFailure: OnFailure{Kind: OnCommand, Explicit: true, MaxRetries: 1, RetryOnSuccess: true}}}},
			[]string{line("a", "remediation_failed", 2, 1, 0)}, "[1]", 1},
		{"gate: an approval holds for the retries of its step",
			Plan{Jobs: 1, Steps: []Step{{ID: "a", Gate: GateApprove, OnFailure: OnFailure{Kind: OnRetry, Explicit: true, MaxRetries: 2}, Attempts: exits(1, 1, 0)}}},
			[]string{line("a", "success", 3, 0, 0)}, "[0]", 1},
		{"gate: rules never match a rejection; use_pending_failed makes it pending_failed",
			Plan{Jobs: 1, UsePendingFailed: true, Steps: []Step{{ID: "a", Gate: GateReject, Rules: []Rule{{MatchAll: true, MaxRetries: 3}}}}},
			[]string{line("a", "pending_failed", 1, 0, 0)}, "[3]", 1},
		{"gate: a stop cancels a step at its gate",
			Plan{Jobs: 2, Steps: []Step{{ID: "x", Attempts: exits(1)}, {ID: "a", Gate: GateWait}}},
			[]string{line("x", "failure", 1, 0, 0), line("a", "canceled", 0, 0, 0)}, "[1]", 1},

		// A fan-out's gate (README "Approval gates", "Fan-outs"): one gate
		// for all its items, which wait at it holding no slot; one
		// decision applies to all of them.
		{"fan-out gate: the timeout approves every item at once; the approval holds for an item's retry",
			Plan{Jobs: 1, Steps: []Step{
				{ID: "f[x]", Group: 2, Gate: GateApprove, OnFailure: OnFailure{Kind: OnRetry, Explicit: true, MaxRetries: 1}, Attempts: exits(1, 0)},
				{ID: "f[y]", Group: 2, Gate: GateApprove, OnFailure: OnFailure{Kind: OnRetry, Explicit: true, MaxRetries: 1}},
				{ID: "f", Group: -1, Join: true, Items: []int{0, 1}, Gate: GateApprove, MaxPar: 1}}},
			[]string{line("f[x]", "success", 2, 0, 0), line("f[y]", "success", 1, 0, 0), line("f", "success", 1, 0, 0)}, "[0]", 1},
		{"fan-out gate: the timeout rejects every item (each fails, attempt 1); continue lets the dependents run",
			Plan{Jobs: 2, Steps: []Step{
				{ID: "f[x]", Group: 2, Gate: GateReject, OnFailure: OnFailure{Kind: OnContinue, Explicit: true}},
				{ID: "f[y]", Group: 2, Gate: GateReject, OnFailure: OnFailure{Kind: OnContinue, Explicit: true}},
				{ID: "f", Group: -1, Join: true, Items: []int{0, 1}, Gate: GateReject, OnFailure: OnFailure{Kind: OnContinue, Explicit: true}},
				{ID: "g", Group: -1, Deps: []int{2}}}},
			[]string{line("f[x]", "failure", 1, 0, 0), line("f[y]", "failure", 1, 0, 0), line("f", "failure", 1, 0, 0), line("g", "success", 1, 0, 0)}, "[1]", 1},
		{"fan-out gate: each item's retry opens the gate again, rejected again: attempt 2 each",
			Plan{Jobs: 1, Steps: []Step{
				{ID: "f[x]", Group: 2, Gate: GateReject, OnFailure: OnFailure{Kind: OnRetry, Explicit: true, MaxRetries: 1}},
				{ID: "f[y]", Group: 2, Gate: GateReject, OnFailure: OnFailure{Kind: OnRetry, Explicit: true, MaxRetries: 1}},
				{ID: "f", Group: -1, Join: true, Items: []int{0, 1}, Gate: GateReject}}},
			[]string{line("f[x]", "failure", 2, 0, 0), line("f[y]", "failure", 2, 0, 0), line("f", "failure", 1, 0, 0)}, "[1]", 1},
		{"fan-out gate: an item whose handler re-runs it after another's retry was rejected again takes that rejection on its reserved attempt (2), whichever ends first",
			Plan{Jobs: 2, Steps: []Step{
				{ID: "f[x]", Group: 2, Gate: GateReject, OnFailure: OnFailure{Kind: OnCommand, Explicit: true, MaxRetries: 1, RetryOnSuccess: true}},
				{ID: "f[y]", Group: 2, Gate: GateReject, OnFailure: OnFailure{Kind: OnCommand, Explicit: true, MaxRetries: 1, RetryOnSuccess: true}},
				{ID: "f", Group: -1, Join: true, Items: []int{0, 1}, Gate: GateReject}}},
			[]string{line("f[x]", "remediation_failed", 2, 1, 0), line("f[y]", "remediation_failed", 2, 1, 0), line("f", "failure", 1, 0, 0)}, "[1]", 1},
		{"fan-out gate: a rejection that stops the run (cancel) still fails every item it decided, none canceled",
			Plan{Jobs: 2, Cancel: true, Steps: []Step{
				{ID: "f[x]", Group: 2, Gate: GateReject},
				{ID: "f[y]", Group: 2, Gate: GateReject},
				{ID: "f", Group: -1, Join: true, Items: []int{0, 1}, Gate: GateReject}}},
			[]string{line("f[x]", "failure", 1, 0, 0), line("f[y]", "failure", 1, 0, 0), line("f", "failure", 1, 0, 0)}, "[1]", 1},
		{"fan-out gate: the items wait, the join with them; decided between sessions on the fan-out's id, for all of them",
			Plan{Jobs: 1, Policy: Policy{Sessions: 2, Approve: func(id string, _ int) bool { return id == "f" }}, Steps: []Step{
				{ID: "f[x]", Group: 2, Gate: GateWait},
				{ID: "f[y]", Group: 2, Gate: GateWait},
				{ID: "f", Group: -1, Join: true, Items: []int{0, 1}, Gate: GateWait}}},
			[]string{line("f[x]", "success", 1, 0, 0), line("f[y]", "success", 1, 0, 0), line("f", "success", 1, 0, 0)}, "[3 0]", 1},
		{"fan-out gate: rejected between sessions, each item's retry asks again; approved in the third",
			Plan{Jobs: 1, Policy: Policy{Sessions: 3, Approve: func(id string, session int) bool { return id == "f" && session == 2 }}, Steps: []Step{
				{ID: "f[x]", Group: 2, Gate: GateWait, OnFailure: OnFailure{Kind: OnRetry, Explicit: true, MaxRetries: 1}},
				{ID: "f[y]", Group: 2, Gate: GateWait, OnFailure: OnFailure{Kind: OnRetry, Explicit: true, MaxRetries: 1}},
				{ID: "f", Group: -1, Join: true, Items: []int{0, 1}, Gate: GateWait}}},
			[]string{line("f[x]", "success", 2, 0, 0), line("f[y]", "success", 2, 0, 0), line("f", "success", 1, 0, 0)}, "[3 3 0]", 1},
		{"fan-out gate: a stop cancels the items at the gate; the join is decided from them",
			Plan{Jobs: 2, Steps: []Step{
				{ID: "x", Group: -1, Attempts: exits(1)},
				{ID: "f[x]", Group: 3, Gate: GateWait},
				{ID: "f[y]", Group: 3, Gate: GateWait},
				{ID: "f", Group: -1, Join: true, Items: []int{1, 2}, Gate: GateWait}}},
			[]string{line("f[x]", "canceled", 0, 0, 0), line("f[y]", "canceled", 0, 0, 0), line("f", "failure", 1, 0, 0)}, "[1]", 1},

		// A phase's gate (README "Approval gates", "Phases"): one gate,
		// decided once on the phase, for its entry steps; a step with its
		// own gate too waits for both, the phase's first.
		{"phase gate: the entry steps wait, what needs them stays pending; approved on the phase's name between sessions",
			Plan{Jobs: 2, PhaseGates: []PhaseGate{{Name: "p", Kind: GateWait}}, Policy: Policy{Sessions: 2, Approve: func(id string, _ int) bool { return id == "p" }},
				Steps: []Step{{ID: "a", Group: -1, Phase: 1}, {ID: "b", Group: -1, Phase: 1}, {ID: "c", Group: -1, Deps: []int{0}}}},
			[]string{line("a", "success", 1, 0, 0), line("b", "success", 1, 0, 0), line("c", "success", 1, 0, 0)}, "[3 0]", 1},
		{"phase gate: its timeout approves, then the step's own gate asks",
			Plan{Jobs: 1, PhaseGates: []PhaseGate{{Name: "p", Kind: GateApprove}},
				Steps: []Step{{ID: "a", Group: -1, Phase: 1, Gate: GateWait}, {ID: "b", Group: -1, Phase: 1}}},
			[]string{line("a", "awaiting_approval", 0, 0, 0), line("b", "success", 1, 0, 0)}, "[3]", 1},
		{"phase gate: its timeout rejects every entry step; each retry asks the phase again",
			Plan{Jobs: 1, PhaseGates: []PhaseGate{{Name: "p", Kind: GateReject}},
				Steps: []Step{
					{ID: "a", Group: -1, Phase: 1, Gate: GateApprove, OnFailure: OnFailure{Kind: OnRetry, Explicit: true, MaxRetries: 1}},
					{ID: "b", Group: -1, Phase: 1, OnFailure: OnFailure{Kind: OnRetry, Explicit: true, MaxRetries: 1}},
					{ID: "c", Group: -1, Deps: []int{0}}}},
			[]string{line("a", "failure", 2, 0, 0), line("b", "failure", 2, 0, 0), line("c", "canceled", 0, 0, 0)}, "[1]", 1},
		{"phase gate: approved between sessions, each step then meets its own gate, which that decision does not decide",
			Plan{Jobs: 3, PhaseGates: []PhaseGate{{Name: "p", Kind: GateWait}}, Policy: Policy{Sessions: 2, Approve: func(string, int) bool { return true }},
				Steps: []Step{
					{ID: "a", Group: -1, Phase: 1, Gate: GateReject, Attempts: exits(3)},
					{ID: "f[x]", Group: 2, Phase: 1, Gate: GateApprove, Attempts: exits(2)},
					{ID: "f", Group: -1, Join: true, Items: []int{1}, Gate: GateApprove}}},
			// Which timeout comes first decides: a's rejection stops the
			// run (f[x] canceled at its gate, or already failed), or f[x]
			// runs and fails first (a canceled at its gate).
			[]string{line("f", "failure", 1, 0, 0)}, "[3 1]", 3},
		{"phase gate: a fan-out entry step's items pass it, then the fan-out's own gate",
			Plan{Jobs: 1, PhaseGates: []PhaseGate{{Name: "p", Kind: GateApprove}}, Policy: Policy{Sessions: 2, Approve: func(id string, _ int) bool { return id == "f" }},
				Steps: []Step{
					{ID: "f[x]", Group: 2, Phase: 1, Gate: GateWait},
					{ID: "f[y]", Group: 2, Phase: 1, Gate: GateWait},
					{ID: "f", Group: -1, Join: true, Items: []int{0, 1}, Gate: GateWait}}},
			[]string{line("f[x]", "success", 1, 0, 0), line("f[y]", "success", 1, 0, 0), line("f", "success", 1, 0, 0)}, "[3 0]", 1},
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

// TestOutputsInKey: a consumer's cache key holds whether each output it
// uses was published, so an entry (written only on a success, which had
// them all) is never a hit when one is missing.
func TestOutputsInKey(t *testing.T) {
	p := &Plan{Steps: []Step{{ID: "a"}, {ID: "b", Deps: []int{0}, Uses: []int{0}, Cacheable: true}}}
	e := &explorer{p: p}
	w := &World{S: []St{{Status: Success, Published: true}, {}}}
	with := e.keyOf(w, 1)
	w.S[0].Published = false
	if without := e.keyOf(w, 1); with == without {
		t.Errorf("the key is %q with the output published and without", with)
	}
	w.S[0] = St{Status: Failure, Published: true, Continued: true}
	if k := e.keyOf(w, 1); k == with {
		t.Errorf("a failed producer gives the key of a published output: %q", k)
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

// withoutOutputs is c with no step outputs: no Uses, no Out, and no
// trailing attempts that exit 0 (as every attempt past the end does).
func withoutOutputs(c *Case) *Case {
	d := c.clone()
	for pi := range d.Phases {
		d.Phases[pi].Gate = "" // phases' approval gates: their own stream, drawn last
		for si := range d.Phases[pi].Steps {
			d.Phases[pi].Steps[si].Uses = nil
			d.Phases[pi].Steps[si].UseEnv = false // where they are used: their own stream too
			d.Phases[pi].Steps[si].HUses = nil
			d.Phases[pi].Steps[si].CPUs = 0 // requests: their own stream too
			d.Phases[pi].Steps[si].Pool = false
			d.Phases[pi].Steps[si].When = GWhen{} // conditions: their own stream too
			d.Phases[pi].Steps[si].Gate = ""      // approval gates: their own streams too (plain steps', fan-outs')
			d.Phases[pi].Steps[si].MaxPar = 0     // max_parallel: its own stream, drawn last
			if s := &d.Phases[pi].Steps[si]; s.From != "" {
				delete(d.Codes, s.fromItem()) // and fan-outs over a published value
				delete(d.HCodes, s.fromItem())
				delete(d.Sleep, s.fromItem())
				s.From = ""
			}
		}
	}
	d.EndUses = nil
	d.CPUs, d.PoolSize = 0, 0
	d.Part = GPart{} // a part: its own stream too
	d.Notify = nil   // notifications: their own stream, drawn last
	d.dropBudgets()  // budgets: their own stream, drawn last
	for id, xs := range d.Codes {
		for i := range xs {
			xs[i].Out = OutNone
		}
		for len(xs) > 0 && xs[len(xs)-1] == (Exit{}) {
			xs = xs[:len(xs)-1]
		}
		d.Codes[id] = xs
	}
	return d
}

// TestGenOutputsKeepSeeds: step outputs are drawn from a stream of their
// own, so every seed is still the plan it was before them (a soak's seed
// from a report still names that plan): with no Uses and no Out (and the
// trailing exit-0 attempts dropped that the generator may add for a
// producer, which change nothing else), the plans of seeds 1..500 are those
// drawn before outputs were, byte for byte.
func TestGenOutputsKeepSeeds(t *testing.T) {
	h := sha256.New()
	for seed := uint64(1); seed <= 500; seed++ {
		c := withoutOutputs(Gen(seed))
		files := c.Files()
		var names []string
		for n := range files {
			if !strings.HasSuffix(n, ".sh") {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		fmt.Fprintf(h, "seed %d %v kill %d stop %v sessions %d resume %v rerun %v grow %v\n", seed, c.Args(), c.Kill, c.StopDead, c.Sessions, c.ResumeFailed, c.Rerun, c.Grow)
		for _, n := range names {
			fmt.Fprintf(h, "--- %s\n%s", n, files[n])
		}
	}
	const before = "9ea1f7fc8b6581a8c58383c9d9338f0262e8a53d488eedbdf9e274d6ed2d54a3"
	if got := fmt.Sprintf("%x", h.Sum(nil)); got != before {
		t.Errorf("the plans of seeds 1..500 without outputs changed: digest %s, was %s", got, before)
	}
}

// TestGenOutputs: outputs are drawn at a rate that tests them — plans
// with a consumer, steps fed by a published output and ones whose output is
// missing, malformed files, fan-outs and end steps that use outputs — every
// use names an upstream plain step, the plan says so, and shrinking drops
// uses and outputs.
func TestGenOutputs(t *testing.T) {
	var plans, uses, fanUses, endUses, publish, malformed, failedOut, attempts int
	for seed := uint64(1); seed <= 400; seed++ {
		c := Gen(seed)
		p := c.Model()
		yaml := c.YAML()
		any := false
		for i, s := range p.Steps {
			for _, u := range s.Uses {
				if !(&explorer{p: p}).dependsOn(i, u) {
					t.Fatalf("seed %d: %s uses %s, which is not upstream of it", seed, s.ID, p.Steps[u].ID)
				}
				if p.Steps[u].Join || p.Steps[u].Group >= 0 {
					t.Fatalf("seed %d: %s uses %s, a fan-out", seed, s.ID, p.Steps[u].ID)
				}
				any = true
				uses++
				if s.Group >= 0 {
					fanUses++
				}
			}
			if s.Join && len(s.Uses) > 0 {
				t.Fatalf("seed %d: the join %s uses outputs", seed, s.ID)
			}
			for _, x := range s.Attempts {
				attempts++
				switch {
				case x.Out == OutPublish && !x.Failed():
					publish++
				case x.Out == OutMalformed && x.Code == 0:
					malformed++
				case x.Out != OutNone:
					failedOut++
				}
			}
		}
		for _, ph := range c.Phases {
			for _, s := range ph.Steps {
				for _, u := range s.Uses {
					if !strings.Contains(yaml, "{steps."+u+".outputs.v}") {
						t.Fatalf("seed %d: %s uses %s; the plan does not say so:\n%s", seed, s.ID, u, yaml)
					}
				}
				if len(s.Uses) > 0 {
					shrunk := false
					for _, d := range c.Shrinks() {
						shrunk = shrunk || len(d.step(s.ID).Uses) < len(s.Uses)
					}
					if !shrunk {
						t.Fatalf("seed %d: no shrink drops a use of %s", seed, s.ID)
					}
				}
			}
		}
		if p.End != nil && len(p.End.Uses) > 0 {
			endUses++
			any = true
			if !strings.Contains(yaml, "end:\n  run: ./s.sh 0 {steps.") {
				t.Fatalf("seed %d: the end step's use is not in the plan:\n%s", seed, yaml)
			}
		}
		if any {
			plans++
		}
		for _, d := range c.Shrinks() {
			for _, s := range d.Model().Steps {
				for _, u := range s.Uses {
					if u >= len(d.Model().Steps) {
						t.Fatalf("seed %d: a shrink uses a step it dropped", seed)
					}
				}
			}
		}
	}
	t.Logf("of 400 plans %d use outputs: %d uses (%d by fan-out items), %d end steps; of %d attempts %d publish, %d write a malformed file, %d fail and write one",
		plans, uses, fanUses, endUses, attempts, publish, malformed, failedOut)
	if plans < 80 || fanUses == 0 || endUses < 10 || publish < 100 || malformed < 20 || failedOut < 20 {
		t.Errorf("outputs drawn too seldom")
	}
}

// TestGenSites: the random plans put output references in a step's env:
// and in its failure handler, each said by the plan and each dropped by
// a shrink; a handler's references name steps upstream of its step.
func TestGenSites(t *testing.T) {
	var env, handler int
	for seed := uint64(1); seed <= 400; seed++ {
		c := Gen(seed)
		p := c.Model()
		yaml := c.YAML()
		for i, s := range p.Steps {
			for _, u := range s.HUses {
				if !(&explorer{p: p}).dependsOn(i, u) {
					t.Fatalf("seed %d: the handler of %s uses %s, which is not upstream of it", seed, s.ID, p.Steps[u].ID)
				}
			}
		}
		for _, ph := range c.Phases {
			for _, s := range ph.Steps {
				if s.UseEnv {
					env++
					if !strings.Contains(yaml, "          U1: \"{steps."+s.Uses[0]+".outputs.v}\"") {
						t.Fatalf("seed %d: %s uses %s in its env; the plan does not say so:\n%s", seed, s.ID, s.Uses[0], yaml)
					}
				}
				if len(s.HUses) > 0 {
					handler++
					if !s.handlesUses() {
						t.Fatalf("seed %d: %s has no on_failure command but its handler uses outputs", seed, s.ID)
					}
				}
				dropped := map[string]bool{}
				for _, d := range c.Shrinks() {
					if ds := d.step(s.ID); ds != nil {
						dropped["env"] = dropped["env"] || (s.UseEnv && !ds.UseEnv)
						dropped["handler"] = dropped["handler"] || (len(s.HUses) > 0 && len(ds.HUses) == 0)
					}
				}
				if s.UseEnv && !dropped["env"] || len(s.HUses) > 0 && !dropped["handler"] {
					t.Fatalf("seed %d: no shrink drops where %s uses outputs", seed, s.ID)
				}
			}
		}
	}
	t.Logf("of 400 plans: %d steps use outputs in env:, %d in their handler", env, handler)
	if env < 30 || handler < 30 {
		t.Errorf("output sites drawn too seldom")
	}
}

// TestGenResources: the random plans draw a CPU capacity, requests and a
// pool, each said by the plan, never a request over the capacity, and a
// shrink drops them.
func TestGenResources(t *testing.T) {
	var caps, pools, reqs, pooled int
	for seed := uint64(1); seed <= 400; seed++ {
		c := Gen(seed)
		yaml := c.YAML()
		if c.CPUs > 0 {
			caps++
			if !strings.Contains(yaml, fmt.Sprintf("resources: {cpus: %d}\n", c.CPUs)) {
				t.Fatalf("seed %d: capacity %d not in the plan:\n%s", seed, c.CPUs, yaml)
			}
		}
		if c.PoolSize > 0 {
			pools++
		}
		for _, s := range c.Model().Steps {
			if s.CPUs > 0 {
				reqs++
			}
			if c.CPUs > 0 && s.CPUs > c.CPUs || c.CPUs == 0 && s.CPUs > 0 || c.Batch && s.CPUs > 0 {
				t.Fatalf("seed %d: %s requests %d CPUs of %d", seed, s.ID, s.CPUs, c.CPUs)
			}
			if len(s.Pools) > 0 {
				pooled++
				if c.PoolSize == 0 {
					t.Fatalf("seed %d: %s holds a pool the plan does not have", seed, s.ID)
				}
			}
		}
		if c.CPUs > 0 || c.PoolSize > 0 {
			dropped := false
			for _, d := range c.Shrinks() {
				dropped = dropped || d.CPUs == 0 && d.PoolSize == 0
			}
			if !dropped {
				t.Fatalf("seed %d: no shrink drops the capacity", seed)
			}
		}
	}
	t.Logf("of 400 plans: %d with a CPU capacity, %d with a pool; %d steps request CPUs, %d hold the pool", caps, pools, reqs, pooled)
	if caps < 80 || pools < 60 || reqs < 100 || pooled < 60 {
		t.Errorf("resources drawn too seldom")
	}
}

// TestWhenModel: the contract's reading of conditions (README
// "Conditions"): a false condition skips the step, which satisfies its
// dependents and is neither success nor a failure; a condition on a
// continued failure's status; one that reads a missing output fails the
// step's attempt (only a catch-all rule retries it, and it fails again);
// a fan-out whose items are all skipped is skipped; a resume evaluates a
// skipped step again.
func TestWhenModel(t *testing.T) {
	one := func(p *Plan) Outcome {
		t.Helper()
		m, err := Outcomes(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(m) != 1 {
			t.Fatalf("%d outcomes, want 1:\n%v", len(m), Keys(m))
		}
		for _, o := range m {
			return o
		}
		return Outcome{}
	}
	status := func(o Outcome, id string) string {
		for _, s := range o.Steps {
			if s.ID == id {
				return s.Status
			}
		}
		return "?"
	}
	// a (false) is skipped, b after it runs; the run succeeds.
	o := one(&Plan{Jobs: 1, Steps: []Step{
		{ID: "a", Group: -1, When: Cond{Kind: CondFalse}},
		{ID: "b", Group: -1, Deps: []int{0}},
	}})
	if status(o, "a") != "skipped" || status(o, "b") != "success" || o.Codes[0] != 0 {
		t.Errorf("false condition:\n%s", o)
	}
	// A condition on a continued failure: true.
	o = one(&Plan{Jobs: 1, Steps: []Step{
		{ID: "a", Group: -1, Attempts: []Exit{{Code: 1}}, OnFailure: OnFailure{Kind: OnContinue, Explicit: true}},
		{ID: "b", Group: -1, Deps: []int{0}, When: Cond{Kind: CondStatus, Step: 0, Status: Failure}},
		{ID: "c", Group: -1, Deps: []int{0}, When: Cond{Kind: CondStatus, Step: 0, Status: Success}},
	}})
	if status(o, "b") != "success" || status(o, "c") != "skipped" || o.Codes[0] != 1 {
		t.Errorf("status conditions:\n%s", o)
	}
	// Reading an output that was not published: the attempt fails, a
	// catch-all rule's retry fails again.
	o = one(&Plan{Jobs: 1, Steps: []Step{
		{ID: "a", Group: -1},
		{ID: "b", Group: -1, Deps: []int{0}, When: Cond{Kind: CondOutput, Step: 0}, Rules: []Rule{{MatchAll: true, MaxRetries: 1}}},
	}})
	if status(o, "b") != "failure" || o.Steps[1].Attempt != 2 {
		t.Errorf("evaluation error:\n%s", o)
	}
	// Published: true.
	o = one(&Plan{Jobs: 1, Steps: []Step{
		{ID: "a", Group: -1, Attempts: []Exit{{Out: OutPublish}}},
		{ID: "b", Group: -1, Deps: []int{0}, When: Cond{Kind: CondOutput, Step: 0}},
	}})
	if status(o, "b") != "success" {
		t.Errorf("published output condition:\n%s", o)
	}
	// A fan-out whose items are all skipped is skipped; one with an item
	// that ran succeeds.
	o = one(&Plan{Jobs: 2, Steps: []Step{
		{ID: "f[x]", Group: 2, When: Cond{Kind: CondFalse}},
		{ID: "f[y]", Group: 2, When: Cond{Kind: CondFalse}},
		{ID: "f", Group: -1, Join: true, Items: []int{0, 1}},
		{ID: "g[x]", Group: 5, When: Cond{Kind: CondFalse}},
		{ID: "g[y]", Group: 5},
		{ID: "g", Group: -1, Join: true, Items: []int{3, 4}},
	}})
	if status(o, "f") != "skipped" || status(o, "g") != "success" || o.Codes[0] != 0 {
		t.Errorf("fan-outs:\n%s", o)
	}
	// A skipped step is evaluated again on resume: a's continued failure
	// becomes a success in session 2, and b (a.status == success) runs.
	o = one(&Plan{Jobs: 1, Policy: Policy{Sessions: 2, ResumeFailed: true}, Steps: []Step{
		{ID: "a", Group: -1, Attempts: []Exit{{Code: 1}}, OnFailure: OnFailure{Kind: OnContinue, Explicit: true}},
		{ID: "b", Group: -1, Deps: []int{0}, When: Cond{Kind: CondStatus, Step: 0, Status: Success}},
	}})
	if status(o, "b") != "success" || len(o.Codes) != 2 || o.Codes[1] != 0 {
		t.Errorf("resume:\n%s", o)
	}
}

// TestGenWhen: conditions are drawn at a rate that tests them, of every kind.
func TestGenWhen(t *testing.T) {
	kinds := map[string]int{}
	for seed := uint64(1); seed <= 400; seed++ {
		c := Gen(seed)
		for _, ph := range c.Phases {
			for _, s := range ph.Steps {
				kinds[s.When.Kind]++
			}
		}
		if strings.Contains(c.YAML(), "context.flag") != strings.Contains(c.YAML(), "context: {flag:") {
			t.Fatalf("seed %d: a condition reads context.flag that the plan does not set:\n%s", seed, c.YAML())
		}
	}
	for _, k := range []string{"ctx", "item", "status", "output"} {
		if kinds[k] < 10 {
			t.Errorf("only %d conditions of kind %q in 400 seeds (%v)", kinds[k], k, kinds)
		}
	}
}

// TestFromModel: a fan-out over a published value (foreach: {from: ...})
// has its item when the step published it; when it did not, the fan-out
// fails as a failed step (stop, or on_failure: continue).
func TestFromModel(t *testing.T) {
	plan := func(out Out, on OnKind) *Plan {
		return &Plan{Jobs: 2, Steps: []Step{
			{ID: "a", Group: -1, Attempts: []Exit{{Out: out}}},
			{ID: "f[val-a]", Group: 2, Deps: []int{0}},
			{ID: "f", Group: -1, Join: true, Dynamic: true, From: 1, Items: []int{1}, Deps: []int{0}, OnFailure: OnFailure{Kind: on, Explicit: on != OnStop}},
			{ID: "b", Group: -1, Deps: []int{2}},
		}}
	}
	for _, tc := range []struct {
		out        Out
		on         OnKind
		item, f, b string
		code       int
	}{
		{OutPublish, OnStop, "success", "success", "success", 0},
		{OutNone, OnStop, "(missing)", "failure", "canceled", 1},
		{OutNone, OnContinue, "(missing)", "failure", "success", 1},
	} {
		m, err := Outcomes(plan(tc.out, tc.on))
		if err != nil {
			t.Fatal(err)
		}
		if len(m) != 1 {
			t.Fatalf("%d outcomes:\n%v", len(m), Keys(m))
		}
		for _, o := range m {
			got := []string{o.Steps[1].Status, o.Steps[2].Status, o.Steps[3].Status}
			if want := []string{tc.item, tc.f, tc.b}; !reflect.DeepEqual(got, want) || o.Codes[0] != tc.code {
				t.Errorf("out %v on %v: %v exit %v, want %v exit %d", tc.out, tc.on, got, o.Codes, want, tc.code)
			}
		}
	}
}

// TestGenFrom: fan-outs over a published value are drawn, with the value
// published and not.
func TestGenFrom(t *testing.T) {
	from, yaml := 0, 0
	for seed := uint64(1); seed <= 400; seed++ {
		c := Gen(seed)
		for _, ph := range c.Phases {
			for _, s := range ph.Steps {
				if s.From != "" {
					from++
					if strings.Contains(c.YAML(), `foreach: {from: "{steps.`+s.From+`.outputs.v}"}`) {
						yaml++
					}
				}
			}
		}
	}
	if from < 20 || yaml != from {
		t.Errorf("%d from: fan-outs in 400 seeds, %d of them in the plan file", from, yaml)
	}
}

// TestGenPart: about one seed in ten runs a part of its plan — steps named,
// --from, both — and the model's plan is that part: the steps StepIDs
// names, each use and condition of a step upstream of it within the part.
func TestGenPart(t *testing.T) {
	parts, named, from, both := 0, 0, 0, 0
	const seeds = 600
	for seed := uint64(1); seed <= seeds; seed++ {
		c := Gen(seed)
		p := c.Model()
		var ids []string
		for _, s := range p.Steps {
			ids = append(ids, s.ID)
		}
		if p.End != nil {
			ids = append(ids, "end")
		}
		if !slices.Equal(ids, c.StepIDs()) {
			t.Fatalf("seed %d: the model has %v, StepIDs %v", seed, ids, c.StepIDs())
		}
		if c.Part.none() {
			continue
		}
		parts++
		switch {
		case len(c.Part.Steps) > 0 && len(c.Part.From) > 0:
			both++
		case len(c.Part.Steps) > 0:
			named++
		default:
			from++
		}
		args := c.Args()
		if !slices.Equal(args[len(args)-len(c.PartArgs()):], c.PartArgs()) {
			t.Fatalf("seed %d: args %v lack the part %v", seed, args, c.PartArgs())
		}
		e := &explorer{p: p}
		for i, s := range p.Steps {
			if s.When.Kind == CondStatus || s.When.Kind == CondOutput {
				if !e.dependsOn(i, s.When.Step) {
					t.Fatalf("seed %d: %s's condition reads %s, not upstream of it in the part", seed, s.ID, p.Steps[s.When.Step].ID)
				}
			}
		}
		d := c.clone()
		d.Part = GPart{Steps: []string{"nope"}}
		if d.pruneUses(); !d.Part.none() {
			t.Fatalf("seed %d: a part naming a step the plan lacks stays: %v", seed, d.Part)
		}
	}
	if parts < seeds/20 || parts > seeds/5 || named == 0 || from == 0 || both == 0 {
		t.Fatalf("%d parts in %d seeds (%d named, %d from, %d both)", parts, seeds, named, from, both)
	}
	t.Logf("%d parts in %d seeds (%d named, %d from, %d both)", parts, seeds, named, from, both)
}

// TestGenSharedGates: gates on fan-outs and on phases are drawn, of every
// kind, the plan says so (on the fan-out, on the phase), the model puts a
// fan-out's on its items and join and a phase's on its entry steps only
// (a fan-out's items, not its join), and shrinking drops each.
func TestGenSharedGates(t *testing.T) {
	fans, phases := map[string]int{}, map[string]int{}
	for seed := uint64(1); seed <= 400; seed++ {
		c := Gen(seed)
		p := c.Model()
		yaml := c.YAML()
		index := map[string]int{}
		for i, s := range p.Steps {
			index[s.ID] = i
		}
		for pi, ph := range c.Phases {
			if ph.Gate != "" {
				phases[ph.Gate]++
				_, block, _ := strings.Cut(yaml, "  - name: "+ph.Name+"\n")
				block, _, _ = strings.Cut(block, "    steps:\n")
				if !strings.Contains(block, "\n    approval: ") {
					t.Fatalf("seed %d: phase %s's gate is not in the plan:\n%s", seed, ph.Name, yaml)
				}
				if !slices.ContainsFunc(c.Shrinks(), func(d *Case) bool { return len(d.Phases) == len(c.Phases) && d.Phases[pi].Gate == "" }) {
					t.Fatalf("seed %d: no shrink drops phase %s's gate", seed, ph.Name)
				}
			}
			for si, s := range ph.Steps {
				if (s.Items == nil && !s.Glob) || s.Gate == "" {
					continue
				}
				fans[s.Gate]++
				if !slices.ContainsFunc(c.Shrinks(), func(d *Case) bool {
					return len(d.Phases) == len(c.Phases) && len(d.Phases[pi].Steps) == len(ph.Steps) && d.Phases[pi].Steps[si].Gate == ""
				}) {
					t.Fatalf("seed %d: no shrink drops %s's gate", seed, s.ID)
				}
				j, ok := index[s.ID]
				if !ok {
					continue // not in the part run
				}
				for _, it := range append([]int{j}, p.Steps[j].Items...) {
					if p.Steps[it].Gate != gateKinds[s.Gate] {
						t.Fatalf("seed %d: %s has gate %v, want the fan-out's %q", seed, p.Steps[it].ID, p.Steps[it].Gate, s.Gate)
					}
				}
			}
		}
		for _, s := range p.Steps {
			if s.Join && s.Phase != 0 {
				t.Fatalf("seed %d: the join %s passes a phase's gate", seed, s.ID)
			}
		}
	}
	for _, k := range []string{"wait", "approve", "reject"} {
		if fans[k] < 10 || phases[k] < 10 {
			t.Errorf("fan-out gates %v, phase gates %v in 400 seeds: too few of kind %q", fans, phases, k)
		}
	}
}

// TestGenRerunKill: only a Rerun case kills its second run, about a third
// of them do, and the shrinker tries without the kill.
func TestGenRerunKill(t *testing.T) {
	reruns, kills := 0, 0
	for seed := uint64(1); seed <= 600; seed++ {
		c := Gen(seed)
		if !c.Rerun {
			if c.RerunKill != 0 {
				t.Fatalf("seed %d: RerunKill without Rerun", seed)
			}
			continue
		}
		reruns++
		if c.RerunKill == 0 {
			continue
		}
		kills++
		found := false
		for _, d := range c.Shrinks() {
			found = found || (d.Rerun && d.RerunKill == 0)
		}
		if !found {
			t.Fatalf("seed %d: no shrink drops the second run's kill", seed)
		}
	}
	if kills < reruns/5 || kills > reruns/2 {
		t.Errorf("%d of %d second runs killed, want about a third", kills, reruns)
	}
}
