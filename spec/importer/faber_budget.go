package importer

import (
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// FABER's budgets (workflow.schema.json: a step's max_budget_usd and
// max_turns, and the same two in the workflow's defaults and in
// phase_defaults[phase]) become a step's budget: (README "Budgets"). FABER
// resolves each field for a step as step > phase_defaults[phase] >
// defaults, so defaults and phase_defaults are every step's limits, not
// the workflow's or the phase's together: each converted step gets its
// own budget: from them, as FABER would pass them to its agent call.

// faberBudget is what one level sets: the value nodes of max_budget_usd
// (cost) and max_turns (turns), nil where it sets nothing. A
// max_budget_usd of 0 sets the field to no ceiling (noCost), as FABER's
// cascade stops at it.
type faberBudget struct {
	cost, turns *yaml.Node
	noCost      bool
}

// faberBudgetField reads max_budget_usd or max_turns (f) into b; where
// names the place in messages. It reports whether f is one of them.
func (c *conv) faberBudgetField(f field, where string, b *faberBudget) bool {
	switch f.key {
	case "max_budget_usd":
		n := f.v
		v, err := strconv.ParseFloat(n.Value, 64)
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") || err != nil ||
			math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1e12 {
			c.errorf(n, "%s: max_budget_usd: must be a number from 0 to 1e12 (US dollars), not %s", where, valueText(n))
			return true
		}
		if v == 0 {
			c.warnf(f.k, "%s: max_budget_usd: 0 dropped (faber's max_cost_usd is more than 0): no cost ceiling", where)
			b.cost, b.noCost = nil, true
			return true
		}
		b.cost, b.noCost = n, false
	case "max_turns":
		n := f.v
		v, err := strconv.ParseInt(n.Value, 10, 64)
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || err != nil || v < 1 {
			c.errorf(n, "%s: max_turns: must be a whole number of at least 1, not %s", where, valueText(n))
			return true
		}
		b.turns = n
	default:
		return false
	}
	return true
}

// valueText names a value in a message: a number or boolean as written, a
// string quoted, else its kind.
func valueText(n *yaml.Node) string {
	switch {
	case n.Kind != yaml.ScalarNode || isNull(n):
		return kindName(n)
	case n.ShortTag() == "!!str":
		return "the string " + strconv.Quote(n.Value)
	}
	return n.Value
}

// faberDefaults reads the workflow's defaults (phase "") or one phase's
// phase_defaults: their budget fields; FABER's other runtime defaults
// (prompt, model, harness, allowed_tools, skills, mcp) have no faber
// equivalent.
func (c *conv) faberDefaults(n *yaml.Node, where string) *faberBudget {
	b := &faberBudget{}
	for _, f := range c.fields(n, where) {
		if !c.faberBudgetField(f, where, b) {
			c.errorf(f.k, "%s: %s: no faber equivalent (faber converts max_budget_usd and max_turns here, to each step's budget:)", where, f.key)
		}
	}
	return b
}

// faberPhaseDefaults reads phase_defaults: a mapping of FABER phases.
func (c *conv) faberPhaseDefaults(n *yaml.Node, fp *faberPlan) {
	known := map[string]bool{}
	for _, p := range faberPhases() {
		known[p] = true
	}
	for _, f := range c.fields(n, "workflow: phase_defaults") {
		if !known[f.key] {
			c.errorf(f.k, "workflow: phase_defaults: unknown phase %q (FABER's phases are %s)", f.key, strings.Join(faberPhases(), ", "))
			continue
		}
		fp.phaseBudgets[f.key] = c.faberDefaults(f.v, "workflow: phase_defaults: "+f.key)
	}
}

// faberStepBudget sets the step's budget: from its own fields (own), its
// phase's defaults and the workflow's, field by field in that order.
func (c *conv) faberStepBudget(s *yaml.Node, phase string, own *faberBudget, fp *faberPlan) {
	var cost, turns *yaml.Node
	noCost := false
	for _, b := range []*faberBudget{own, fp.phaseBudgets[phase], fp.wfBudget} {
		if b == nil {
			continue
		}
		if cost == nil && !noCost {
			cost, noCost = b.cost, b.noCost
		}
		if turns == nil {
			turns = b.turns
		}
	}
	if cost == nil && turns == nil {
		return
	}
	m := newMap(s)
	at := cost
	if cost != nil {
		v, _ := strconv.ParseFloat(cost.Value, 64)
		set(m, cost, "max_cost_usd", newScalar(cost, strconv.FormatFloat(v, 'f', -1, 64)))
	}
	if turns != nil {
		v, _ := strconv.ParseInt(turns.Value, 10, 64)
		set(m, turns, "max_turns", newScalar(turns, strconv.FormatInt(v, 10)))
		if at == nil {
			at = turns
		}
	}
	set(s, at, "budget", m)
}
