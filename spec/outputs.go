package spec

import (
	"strings"

	"github.com/faber-run/faber/spec/subst"
)

// OutputRef names one output of a step: {steps.<Step>.outputs.<Key>}.
type OutputRef struct {
	Step string
	Key  string
}

// Name is the reference's name in a substitution map.
func (r OutputRef) Name() string { return subst.OutputName(r.Step, r.Key) }

// HandlerTemplates are the templates of step s's failure handling: its
// on_failure command and args, and the recovery scripts of its failure
// handler. Their output references are found when they run.
func (p *Plan) HandlerTemplates(s *Step) []string {
	tmpls := s.OnFailure.Templates()
	if h := p.FailureHandlers[s.FailureHandler]; h != nil {
		for _, r := range h.Rules {
			tmpls = append(tmpls, r.RecoveryScript)
		}
	}
	return tmpls
}

// Templates are the on_failure command's templates: the command line and
// a structured handler's arg values.
func (of *OnFailure) Templates() []string {
	tmpls := []string{of.Command}
	for _, a := range of.Args {
		tmpls = append(tmpls, a.Value)
	}
	return tmpls
}

// OutputNames are the output references ({steps.ID.outputs.KEY}) in
// tmpls, as reference names, in order (a name may repeat).
func OutputNames(tmpls ...string) []string {
	var out []string
	for _, t := range tmpls {
		if !strings.Contains(t, "{steps.") {
			continue
		}
		for _, ref := range subst.Names(t) {
			if _, _, ok := subst.OutputRef(ref.Name); ok {
				out = append(out, ref.Name)
			}
		}
	}
	return out
}
