package run

import (
	"strings"

	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/state"
)

// SelectPart is the part of plan that a run was asked to run (its meta's
// Part; README "Running a part of a plan"): plan itself for the whole plan.
// Every reader and writer of a run that parses its stored plan takes the
// same part, so that resume, reset and the live view see the steps the run
// has.
func SelectPart(plan *spec.Plan, part *state.Part) (*spec.Plan, error) {
	if part == nil {
		return plan, nil
	}
	return plan.Select(part.Steps, part.From)
}

// PartText is how status and the dry run name a part: the steps named,
// then --from and its steps; "" for the whole plan.
func PartText(part *state.Part) string {
	if part == nil {
		return ""
	}
	var words []string
	words = append(words, part.Steps...)
	if len(part.From) > 0 {
		words = append(words, "--from", strings.Join(part.From, ","))
	}
	return strings.Join(words, " ")
}
