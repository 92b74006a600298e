package exec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/faber-run/faber/spec"
)

// Budgets (README "Budgets"): a step's processes may report what they
// spent in $FABER_RESULT (cost_usd, turns, tokens); faber adds it up, with
// the attempts started, over the whole run, per step and for its phase and
// the plan. A budget: on the step, its phase or the plan is checked after
// every attempt and handler run and before every start: once one is spent,
// no retry, handler re-run or new attempt happens for the steps it covers,
// which end failure with cause budget.

// Spent is what a step's processes reported spending, added up over the
// run (every session), with the attempts it started; or what one process
// reported (Attempts 0).
type Spent struct {
	CostUSD  float64 `json:"cost_usd,omitempty"`
	Turns    int64   `json:"turns,omitempty"`
	Tokens   int64   `json:"tokens,omitempty"`
	Attempts int     `json:"attempts,omitempty"`
}

func (s *Spent) add(o Spent) {
	s.CostUSD += o.CostUSD
	s.Turns = satAdd(s.Turns, o.Turns)
	s.Tokens = satAdd(s.Tokens, o.Tokens)
	s.Attempts += o.Attempts
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// IsZero reports whether nothing was spent.
func (s Spent) IsZero() bool { return s == Spent{} }

// parseSpent reads the usage fields of a result file's JSON: cost_usd (a
// number ≥ 0), turns and tokens (whole numbers ≥ 0). A field of another
// kind is left out and named in bad; the rest of the file still counts.
func parseSpent(b []byte) (sp Spent, bad string) {
	var r struct {
		CostUSD json.RawMessage `json:"cost_usd"`
		Turns   json.RawMessage `json:"turns"`
		Tokens  json.RawMessage `json:"tokens"`
	}
	if json.Unmarshal(b, &r) != nil {
		return Spent{}, ""
	}
	var bads []string
	if len(r.CostUSD) > 0 && string(r.CostUSD) != "null" {
		f, err := strconv.ParseFloat(string(r.CostUSD), 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || f > 1e12 {
			bads = append(bads, "cost_usd "+clipValue(r.CostUSD)+" is not a number from 0 to 1e12")
		} else {
			sp.CostUSD = f
		}
	}
	count := func(name string, raw json.RawMessage, v *int64) {
		if len(raw) == 0 || string(raw) == "null" {
			return
		}
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || n < 0 {
			bads = append(bads, name+" "+clipValue(raw)+" is not a whole number ≥ 0")
			return
		}
		*v = n
	}
	count("turns", r.Turns, &sp.Turns)
	count("tokens", r.Tokens, &sp.Tokens)
	return sp, strings.Join(bads, "; ")
}

func clipValue(raw json.RawMessage) string {
	s := string(raw)
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

// BudgetLine is one budget of a run with what its steps spent: for
// status, the live view, the report and MCP.
type BudgetLine struct {
	// Scope is plan, phase or step; Name the phase's or step's (a
	// fan-out's budget is each item's: one line per item that spent).
	Scope string `json:"scope"`
	Name  string `json:"name,omitempty"`
	Spent Spent  `json:"spent"`
	// Limits: 0 = none.
	MaxCostUSD  float64 `json:"max_cost_usd,omitempty"`
	MaxTurns    int64   `json:"max_turns,omitempty"`
	MaxAttempts int     `json:"max_attempts,omitempty"`
	// Reached says which limit is reached ("" while none is): the budget
	// is spent.
	Reached string `json:"reached,omitempty"`
}

// reached says which limit of b the spending s reaches, "" for none.
func reached(b *spec.Budget, s Spent) string {
	switch {
	case b.MaxCostUSD > 0 && s.CostUSD >= b.MaxCostUSD-1e-9:
		return fmt.Sprintf("$%s of max_cost_usd %s", FormatCost(s.CostUSD), FormatCost(b.MaxCostUSD))
	case b.MaxTurns > 0 && s.Turns >= b.MaxTurns:
		return fmt.Sprintf("%d of max_turns %d", s.Turns, b.MaxTurns)
	case b.MaxAttempts > 0 && s.Attempts >= b.MaxAttempts:
		return fmt.Sprintf("%d of max_attempts %d", s.Attempts, b.MaxAttempts)
	}
	return ""
}

// FormatCost writes an amount in dollars with two decimals, more when it
// is smaller than a cent and not 0.
func FormatCost(f float64) string {
	if f > 0 && f < 0.01 {
		return strconv.FormatFloat(f, 'g', 2, 64)
	}
	return strconv.FormatFloat(f, 'f', 2, 64)
}

// Text is the line's spending against its limits: "$1.20/$5.00 · 3/10
// turns · 2/3 attempts".
func (l BudgetLine) Text() string {
	var parts []string
	if l.MaxCostUSD > 0 {
		parts = append(parts, "$"+FormatCost(l.Spent.CostUSD)+"/$"+FormatCost(l.MaxCostUSD))
	}
	if l.MaxTurns > 0 {
		parts = append(parts, fmt.Sprintf("%d/%d turns", l.Spent.Turns, l.MaxTurns))
	}
	if l.MaxAttempts > 0 {
		parts = append(parts, fmt.Sprintf("%d/%d attempts", l.Spent.Attempts, l.MaxAttempts))
	}
	return strings.Join(parts, " · ")
}

// Label names the line's scope: plan, phase "p", step "s".
func (l BudgetLine) Label() string {
	if l.Scope == "plan" {
		return "plan"
	}
	return fmt.Sprintf("%s %q", l.Scope, l.Name)
}

func lineOf(scope, name string, b *spec.Budget, s Spent) BudgetLine {
	return BudgetLine{Scope: scope, Name: name, Spent: s, MaxCostUSD: b.MaxCostUSD, MaxTurns: b.MaxTurns,
		MaxAttempts: b.MaxAttempts, Reached: reached(b, s)}
}

// Budgets are the budgets of plan p with what steps (a run's records, the
// end step's included) spent: the plan's, each phase's, then each step's
// that spent anything or is spent, in plan order. Nil when p sets none.
func Budgets(p *spec.Plan, run *RunState, steps []*StepState) []BudgetLine {
	if p == nil {
		return nil
	}
	if !p.SetsBudget() {
		return nil
	}
	defs := map[string]*spec.Step{}
	for _, s := range p.Steps {
		if s.Budget != nil {
			defs[s.ID] = s
		}
	}
	if p.End != nil && p.End.Budget != nil {
		defs["end"] = p.End
	}
	var plan Spent
	if run != nil && run.Spent != nil {
		plan.add(*run.Spent)
	}
	phases := map[string]*Spent{}
	var out []BudgetLine
	var stepLines []BudgetLine
	for _, st := range steps {
		var sp Spent
		if st.Spent != nil {
			sp = *st.Spent
		}
		if st.ID != "end" { // the end step has only its own budget
			plan.add(sp)
			if phases[st.Phase] == nil {
				phases[st.Phase] = &Spent{}
			}
			phases[st.Phase].add(sp)
		}
		def := defs[st.ID]
		if def == nil && st.FanOut != "" {
			def = defs[st.FanOut]
		}
		if def != nil && !sp.IsZero() {
			stepLines = append(stepLines, lineOf("step", st.ID, def.Budget, sp))
		}
	}
	if p.Budget != nil {
		out = append(out, lineOf("plan", "", p.Budget, plan))
	}
	for _, ph := range p.Phases {
		if ph.Budget != nil {
			var sp Spent
			if s := phases[ph.Name]; s != nil {
				sp = *s
			}
			out = append(out, lineOf("phase", ph.Name, ph.Budget, sp))
		}
	}
	return append(out, stepLines...)
}

// spending is what the runner keeps of the run's spending, per phase and
// for the plan, current with every report (addSpent).
type spending struct {
	made   bool
	plan   Spent
	phases map[string]*Spent
}

// spendingOf makes r.spend from the step records, at its first use: what
// earlier sessions spent counts (and what items a dynamic fan-out no
// longer has spent).
func (r *Runner) spendingOf() *spending {
	sp := &r.spend
	if sp.made {
		return sp
	}
	sp.made = true
	sp.phases = map[string]*Spent{}
	if r.run != nil && r.run.Spent != nil {
		sp.plan.add(*r.run.Spent)
	}
	count := func(st *StepState) {
		if st.Spent == nil {
			return
		}
		sp.plan.add(*st.Spent)
		if sp.phases[st.Phase] == nil {
			sp.phases[st.Phase] = &Spent{}
		}
		sp.phases[st.Phase].add(*st.Spent)
	}
	// The end step is left out: it has only its own budget.
	for _, s := range r.steps {
		count(s.st)
	}
	for _, st := range r.gone {
		count(st)
	}
	return sp
}

// addSpent adds what one of sr's processes spent (or an attempt's start)
// to the step and to its phase's and the plan's spending.
func (r *Runner) addSpent(sr *stepRun, s Spent) {
	if s.IsZero() {
		return
	}
	sp := r.spendingOf()
	if sr.st.Spent == nil {
		sr.st.Spent = &Spent{}
	}
	sr.st.Spent.add(s)
	if sr.isEnd {
		return // the end step has only its own budget
	}
	sp.plan.add(s)
	if sp.phases[sr.st.Phase] == nil {
		sp.phases[sr.st.Phase] = &Spent{}
	}
	sp.phases[sr.st.Phase].add(s)
}

// budgetSpent says which budget of sr is spent: its own (a fan-out
// item's, its fan-out's), its phase's, the plan's, in that order; "" when
// none is. The end step, which runs after every stop, has only its own.
func (r *Runner) budgetSpent(sr *stepRun) string {
	if b := sr.def.Budget; b != nil {
		var s Spent
		if sr.st.Spent != nil {
			s = *sr.st.Spent
		}
		if why := reached(b, s); why != "" {
			return fmt.Sprintf("step %q has spent %s", sr.def.ID, why)
		}
	}
	if sr.isEnd {
		return ""
	}
	sp := r.spendingOf()
	if ph := r.Plan.PhaseNamed(sr.def.Phase); ph != nil && ph.Budget != nil {
		var s Spent
		if p := sp.phases[ph.Name]; p != nil {
			s = *p
		}
		if why := reached(ph.Budget, s); why != "" {
			return fmt.Sprintf("phase %q has spent %s", ph.Name, why)
		}
	}
	if b := r.Plan.Budget; b != nil {
		if why := reached(b, sp.plan); why != "" {
			return "the plan has spent " + why
		}
	}
	return ""
}

// budgetError is the {error} of a step failed for a spent budget: why,
// then the failure that came with it ("" when none: it did not start).
func budgetError(why, failure string) string {
	if failure == "" {
		return "budget spent: " + why + "; no attempt started"
	}
	return "budget spent: " + why + "; last failure: " + failure
}

// budgetCheck is budgetSpent in a plan with budgets, else "".
func (r *Runner) budgetCheck(sr *stepRun) string {
	if !r.budgets {
		return ""
	}
	return r.budgetSpent(sr)
}

// overBudget refuses the start of a step (its first attempt, or a retry
// reserved earlier) when a budget of it is spent: it fails as an attempt
// that runs nothing, with cause budget, and its failure goes through the
// pipeline (failure: no retry, no handler). A step classified --retry
// starts once whatever its budget (BudgetWaived). It reports whether it
// refused.
func (r *Runner) overBudget(sr *stepRun) bool {
	st := sr.st
	if !r.budgets {
		return false
	}
	if st.BudgetWaived {
		st.BudgetWaived = false // committed with the start
		return false
	}
	why := r.budgetSpent(sr)
	if why == "" {
		return false
	}
	if st.Status == StatusPending && !st.AttemptReserved {
		st.Attempt++
	}
	r.failNoProcess(sr, budgetError(why, ""), spec.CauseBudget)
	return true
}

func copySpent(s *Spent) *Spent {
	if s == nil {
		return nil
	}
	c := *s
	return &c
}

// agentTail is how much of a process's stdout is read for an agent's
// result line.
const agentTail = 64 << 10

// readAgentSpent sets what the process spent from an agent's result line
// (agentSpent), when ps asks for it and its result file reported nothing.
func readAgentSpent(ps procSpec, o *outcome) {
	if !ps.agentUsage || !o.spent.IsZero() || o.spentBad != "" || ps.stdoutPath == "" {
		return
	}
	f, err := os.Open(ps.stdoutPath)
	if err != nil {
		return
	}
	defer f.Close()
	if sp, ok := agentSpent(FileTail(f, agentTail)); ok {
		o.spent = sp
	}
}

// agentSpent reads the result line an agent CLI prints last in its JSON
// output modes (Claude Code's `-p --output-format json` or `stream-json`):
// a JSON object with "type": "result", whose total_cost_usd, num_turns
// and usage (input, output and cache tokens added up) are what it spent.
// ok is false for any other last line.
func agentSpent(tail []byte) (sp Spent, ok bool) {
	tail = bytes.TrimRight(tail, " \t\r\n")
	if i := bytes.LastIndexByte(tail, '\n'); i >= 0 {
		tail = tail[i+1:]
	}
	tail = bytes.TrimSpace(tail)
	if len(tail) == 0 || tail[0] != '{' {
		return Spent{}, false
	}
	var r struct {
		Type         string   `json:"type"`
		TotalCostUSD *float64 `json:"total_cost_usd"`
		NumTurns     *int64   `json:"num_turns"`
		Usage        *struct {
			Input       int64 `json:"input_tokens"`
			Output      int64 `json:"output_tokens"`
			CacheCreate int64 `json:"cache_creation_input_tokens"`
			CacheRead   int64 `json:"cache_read_input_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(tail, &r) != nil || r.Type != "result" {
		return Spent{}, false
	}
	if r.TotalCostUSD != nil && *r.TotalCostUSD >= 0 && *r.TotalCostUSD <= 1e12 {
		sp.CostUSD = *r.TotalCostUSD
	}
	if r.NumTurns != nil && *r.NumTurns >= 0 {
		sp.Turns = *r.NumTurns
	}
	if u := r.Usage; u != nil {
		for _, n := range []int64{u.Input, u.Output, u.CacheCreate, u.CacheRead} {
			if n > 0 {
				sp.Tokens = satAdd(sp.Tokens, n)
			}
		}
	}
	return sp, !sp.IsZero()
}
