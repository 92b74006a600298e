package exec

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/faber-run/faber/spec"
)

// Secret is what a secret value is shown as.
const Secret = "***"

// Masker replaces the values of a plan's secrets (spec.Plan.Secrets) with
// *** in text faber records or shows. Programs still get the real values:
// masking applies to events, output lines handed to renderers, and what
// readers answer. A nil Masker masks nothing.
type Masker struct {
	r *strings.Replacer
}

// SecretValues are the values of the plan's secrets that are masked: those
// of at least spec.MinSecret bytes.
func SecretValues(p *spec.Plan) []string {
	var vals []string
	for _, k := range p.Secrets {
		if v := p.Context[k]; len(v) >= spec.MinSecret {
			vals = append(vals, v)
		}
	}
	return vals
}

// NewMasker masks the plan's secret values.
func NewMasker(p *spec.Plan) *Masker { return NewMaskerOf(SecretValues(p)) }

// NewMaskerOf masks vals, longest first, also as they appear escaped inside
// JSON strings; nil when there is nothing to mask.
func NewMaskerOf(vals []string) *Masker {
	if len(vals) == 0 {
		return nil
	}
	vals = append([]string(nil), vals...)
	sort.Slice(vals, func(i, j int) bool { return len(vals[i]) > len(vals[j]) })
	var pairs []string
	for _, v := range vals {
		pairs = append(pairs, v, Secret)
		if b, err := json.Marshal(v); err == nil {
			if esc := string(b[1 : len(b)-1]); esc != v {
				pairs = append(pairs, esc, Secret)
			}
		}
	}
	return &Masker{r: strings.NewReplacer(pairs...)}
}

// String masks s.
func (m *Masker) String(s string) string {
	if m == nil {
		return s
	}
	return m.r.Replace(s)
}

// Bytes masks b (b itself when there is nothing to mask).
func (m *Masker) Bytes(b []byte) []byte {
	if m == nil {
		return b
	}
	s := m.r.Replace(string(b))
	if len(s) == len(b) && s == string(b) {
		return b
	}
	return []byte(s)
}

// Event masks the text of an event's fields, in place.
func (m *Masker) Event(e *Event) {
	if m == nil {
		return
	}
	for k, v := range e.Fields {
		e.Fields[k] = m.value(v)
	}
	e.Line = m.Bytes(e.Line)
}

func (m *Masker) value(v any) any {
	switch x := v.(type) {
	case string:
		return m.String(x)
	case []string:
		out := make([]string, len(x))
		for i, s := range x {
			out[i] = m.String(s)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, y := range x {
			out[i] = m.value(y)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, y := range x {
			out[k] = m.value(y)
		}
		return out
	case *HandlerResult:
		if x == nil {
			return x
		}
		c := *x
		c.Message = m.String(c.Message)
		return &c
	case HandlerResult:
		x.Message = m.String(x.Message)
		return x
	}
	return v
}
