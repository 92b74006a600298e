package exec

import "strings"

// Text is what one process (or a step, over the run) reported spending,
// for the readers that show it beside an attempt: "$0.75 · 4 turns · 1200
// tokens" ("" for nothing). Attempts started are left out: the budget
// lines count them (BudgetLine.Text).
func (s Spent) Text() string {
	var parts []string
	if s.CostUSD > 0 {
		parts = append(parts, "$"+FormatCost(s.CostUSD))
	}
	if s.Turns > 0 {
		parts = append(parts, Count(s.Turns, "turn"))
	}
	if s.Tokens > 0 {
		parts = append(parts, Count(s.Tokens, "token"))
	}
	return strings.Join(parts, " · ")
}
