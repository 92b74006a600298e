package exec

import (
	"encoding/json"
	"reflect"
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

// Event masks the text of an event's payload and line, in place. The payload
// is replaced by a masked copy: it may share a slice or a HandlerResult with
// the runner's own records.
func (m *Masker) Event(e *Event) {
	if m == nil {
		return
	}
	switch d := e.Data.(type) {
	case nil:
	case Other:
		o := make(Other, len(d))
		for k, v := range d {
			o[k] = m.Bytes(v) // raw JSON: escaped forms are masked too
		}
		e.Data = o
	default:
		e.Data = m.copy(reflect.ValueOf(d)).Interface().(Payload)
	}
	e.Line = m.Bytes(e.Line)
}

var stepInfoType = reflect.TypeFor[StepInfo]()

// copy returns a deep copy of v with every string masked, but the plan's
// step descriptions (ids and names are not values of the context).
func (m *Masker) copy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.String:
		return reflect.ValueOf(m.String(v.String())).Convert(v.Type())
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		n := reflect.New(v.Type().Elem())
		n.Elem().Set(m.copy(v.Elem()))
		return n
	case reflect.Struct:
		if v.Type() == stepInfoType {
			return v
		}
		n := reflect.New(v.Type()).Elem()
		n.Set(v)
		for i := range n.NumField() {
			if f := n.Field(i); f.CanSet() {
				f.Set(m.copy(v.Field(i)))
			}
		}
		return n
	case reflect.Slice:
		if v.IsNil() || v.Type().Elem() == stepInfoType {
			return v
		}
		n := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			n.Index(i).Set(m.copy(v.Index(i)))
		}
		return n
	}
	return v
}
