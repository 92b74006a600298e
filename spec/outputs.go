package spec

import "github.com/faber-run/faber/spec/subst"

// OutputRef names one output of a step: {steps.<Step>.outputs.<Key>}.
type OutputRef struct {
	Step string
	Key  string
}

// Name is the reference's name in a substitution map.
func (r OutputRef) Name() string { return subst.OutputName(r.Step, r.Key) }
