package spec

import (
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Budget is a budget: block (README "Budgets"): what a step, the steps of
// a phase, or every step of the plan may spend over a whole run, as their
// processes report it in $FABER_RESULT (cost_usd, turns) and as attempts
// started. A zero field sets no limit; at least one is set.
type Budget struct {
	MaxCostUSD  float64
	MaxTurns    int64
	MaxAttempts int
	Pos         Pos
}

// CauseBudget is the cause of a failure that came when a budget was
// spent: a rule matches it only when its on: lists budget, and it grants
// no retry.
const CauseBudget = "budget"

// rawBudget is budget: on the plan, a phase or a step.
type rawBudget struct {
	rawMeta
	MaxCostUSD  costv `yaml:"max_cost_usd" doc:"Spent when the cost_usd its processes reported reaches this (a number more than 0, in US dollars)."`
	MaxTurns    intv  `yaml:"max_turns" min:"1" doc:"Spent when the turns its processes reported reach this."`
	MaxAttempts intv  `yaml:"max_attempts" min:"1" doc:"Spent when this many attempts have started (the run's, every session's)."`
}

// costv is an amount of money: a number more than 0.
type costv struct{ scalar[float64] }

func (v *costv) decode(p *parser, n *yaml.Node, where string) {
	v.decodeScalar(p, n, where, "a number like 2.50", numberTag, func(n *yaml.Node) (float64, bool) {
		f, err := strconv.ParseFloat(n.Value, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 || f > 1e12 {
			p.errorf(nodePos(n), "%s: %s must be a number more than 0 (US dollars)", where, n.Value)
			return 0, false
		}
		return f, true
	})
}

func (v *costv) schema(*schemaGen) map[string]any {
	return map[string]any{"type": "number", "exclusiveMinimum": 0}
}

// SetsBudget reports whether p sets a budget anywhere: the plan, a phase,
// a step or the end step.
func (p *Plan) SetsBudget() bool {
	if p.Budget != nil || p.End != nil && p.End.Budget != nil {
		return true
	}
	for _, ph := range p.Phases {
		if ph.Budget != nil {
			return true
		}
	}
	for _, s := range p.Steps {
		if s.Budget != nil {
			return true
		}
	}
	return false
}

// Text is the budget's limits on one line: "$1.00 · 40 turns · 3
// attempts"; "" for no budget.
func (b *Budget) Text() string {
	if b == nil {
		return ""
	}
	var parts []string
	if b.MaxCostUSD > 0 {
		parts = append(parts, "$"+strconv.FormatFloat(b.MaxCostUSD, 'f', 2, 64))
	}
	if b.MaxTurns > 0 {
		parts = append(parts, strconv.FormatInt(b.MaxTurns, 10)+" turns")
	}
	if b.MaxAttempts > 0 {
		parts = append(parts, strconv.Itoa(b.MaxAttempts)+" attempts")
	}
	return strings.Join(parts, " · ")
}

// budget builds a budget from its raw form; nil when there is none.
func (b *builder) budget(rb *rawBudget, where string) *Budget {
	if rb == nil {
		return nil
	}
	g := &Budget{MaxCostUSD: rb.MaxCostUSD.V, MaxTurns: int64(rb.MaxTurns.V), MaxAttempts: rb.MaxAttempts.V, Pos: rb.Pos}
	if !rb.has("max_cost_usd") && !rb.has("max_turns") && !rb.has("max_attempts") {
		b.errorf(rb.Pos, "%s: budget: sets no limit (use max_cost_usd, max_turns or max_attempts)", where)
		return nil
	}
	return g
}
