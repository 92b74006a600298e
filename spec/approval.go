package spec

import (
	"reflect"
	"time"

	"gopkg.in/yaml.v3"
)

// Approval is a gate (approval:) on a step or a phase (README "Approval
// gates"): the step waits, awaiting_approval, until a person approves or
// rejects it, or its timeout decides.
type Approval struct {
	// Prompt is the text shown to whoever decides ("" when approval: true).
	Prompt string
	// Timeout bounds the wait from when the gate opened (0: none);
	// OnTimeout is then what is decided: ApproveDecision or RejectDecision.
	Timeout   time.Duration
	OnTimeout string
	Pos       Pos
}

// Gate decisions.
const (
	ApproveDecision = "approve"
	RejectDecision  = "reject"
)

// CauseRejected is the cause of a failure that is a rejected approval: a
// rule matches it only when its on: lists rejected.
const CauseRejected = "rejected"

// rawApproval is approval: written as a mapping.
type rawApproval struct {
	rawMeta
	Prompt    str  `yaml:"prompt" doc:"What the person deciding is asked."`
	Timeout   durv `yaml:"timeout" doc:"Bound on the wait, counted from when the gate opened (Go duration); then on_timeout decides."`
	OnTimeout str  `yaml:"on_timeout" enum:"reject,approve" doc:"What a timeout decides: reject (default) or approve (only with timeout)."`
}

// approvalv is approval: true, a prompt, or {prompt, timeout, on_timeout}.
type approvalv struct {
	Set    bool
	Pos    Pos
	On     bool // true, a string or a mapping (not false or null)
	Prompt string
	Obj    *rawApproval
}

func (a *approvalv) decode(p *parser, n *yaml.Node, where string) {
	a.Pos, a.Set = nodePos(n), true
	switch {
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null":
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool":
		var b bool
		_ = n.Decode(&b)
		a.On = b
	case n.Kind == yaml.ScalarNode:
		a.On, a.Prompt = true, n.Value
	case n.Kind == yaml.MappingNode:
		a.On = true
		a.Obj = &rawApproval{}
		p.decodeObject(reflect.ValueOf(a.Obj).Elem(), n, where)
	default:
		p.errorf(a.Pos, "%s: must be true, a prompt, or {prompt, timeout, on_timeout}, not %s", where, kindName(n))
	}
}

func (a *approvalv) schema(g *schemaGen) map[string]any {
	return map[string]any{"oneOf": []any{
		map[string]any{"type": "boolean", "description": "true: the step waits for approval."},
		map[string]any{"type": "string", "description": "The prompt shown to whoever decides."},
		g.schemaOf(reflect.TypeFor[*rawApproval]()),
	}}
}

// approval builds a gate from its raw form; nil when there is none.
func (b *builder) approval(a *approvalv, where string) *Approval {
	if !a.Set || !a.On {
		return nil
	}
	g := &Approval{Prompt: a.Prompt, Pos: a.Pos, OnTimeout: RejectDecision}
	if o := a.Obj; o != nil {
		g.Prompt = o.Prompt.V
		g.Timeout = o.Timeout.V
		if o.Timeout.Set && o.Timeout.V <= 0 {
			b.errorf(o.Timeout.Pos, "%s: approval: timeout must be more than 0", where)
		}
		if o.OnTimeout.Set {
			if !o.Timeout.Set {
				b.errorf(o.OnTimeout.Pos, "%s: approval: on_timeout without timeout", where)
			}
			g.OnTimeout = o.OnTimeout.V
		}
	}
	return g
}
