package exec

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/spec/subst"
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

// NewMaskerOf masks vals in every form faber renders them (see Forms),
// longest first; nil when there is nothing to mask.
func NewMaskerOf(vals []string) *Masker {
	seen := map[string]bool{}
	var olds []string
	for _, v := range vals {
		for _, f := range Forms(v) {
			if !seen[f] {
				seen[f] = true
				olds = append(olds, f)
			}
		}
	}
	if len(olds) == 0 {
		return nil
	}
	// At one place of the text, the first pair that matches wins: the
	// whole value before one of its lines, a quoted form before the raw.
	sort.SliceStable(olds, func(i, j int) bool { return len(olds[i]) > len(olds[j]) })
	pairs := make([]string, 0, 2*len(olds))
	for _, o := range olds {
		pairs = append(pairs, o, Secret)
	}
	return &Masker{r: strings.NewReplacer(pairs...)}
}

// Forms are the texts a secret value v may take in what faber writes or
// shows, each masked wherever it appears: the value, and each of its lines
// (without a trailing CR, and without the spaces around it) of at least
// spec.MinSecret bytes, since output is read and shown line by line; each
// of those as a program gets it (NUL as U+FFFD), with each byte that is not
// UTF-8 as U+FFFD (what JSON makes of it), inside POSIX single quotes
// (as subst.Quote writes them: each quote closed, escaped, reopened), and
// escaped inside a JSON string (with and without HTML escaping) or a Go
// quoted string.
func Forms(v string) []string {
	if len(v) < spec.MinSecret {
		return nil
	}
	units := []string{v}
	if strings.ContainsAny(v, "\n\r") {
		for _, l := range strings.FieldsFunc(v, func(r rune) bool { return r == '\n' || r == '\r' }) {
			for _, u := range []string{l, strings.TrimSpace(l)} {
				if len(u) >= spec.MinSecret {
					units = append(units, u)
				}
			}
		}
	}
	var out []string
	add := func(s string) {
		if len(s) >= spec.MinSecret {
			out = append(out, s)
		}
	}
	for _, u := range units {
		base := []string{u, subst.CleanValue(u), toValidUTF8(u)}
		for _, b := range base {
			for _, q := range []string{b, strings.ReplaceAll(b, "'", `'\''`)} {
				add(q)
				add(jsonInner(q, true))
				add(jsonInner(q, false))
				if g := strconv.Quote(q); len(g) >= 2 {
					add(g[1 : len(g)-1])
				}
			}
		}
	}
	return out
}

// toValidUTF8 replaces each byte of s that is not UTF-8 with U+FFFD, as
// encoding/json does.
func toValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// jsonInner is s escaped as inside a JSON string.
func jsonInner(s string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	if enc.Encode(s) != nil {
		return s
	}
	out := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	return string(out[1 : len(out)-1])
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

// CacheEntry returns a copy of e with every secret masked and no Mask: as
// it is shown. A nil Masker masks nothing.
func (m *Masker) CacheEntry(e *CacheEntry) *CacheEntry {
	c := *e
	c.Mask = nil
	if m == nil {
		return &c
	}
	return m.copy(reflect.ValueOf(&c)).Interface().(*CacheEntry)
}

// CacheEntryMasker masks the secrets an entry records (CacheEntry.Mask).
func CacheEntryMasker(e *CacheEntry) *Masker {
	vals := make([]string, len(e.Mask))
	for i, v := range e.Mask {
		vals[i] = string(v)
	}
	return NewMaskerOf(vals)
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
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		n := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			n.SetMapIndex(m.copy(it.Key()), m.copy(it.Value()))
		}
		return n
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		n := reflect.New(v.Type()).Elem()
		n.Set(m.copy(v.Elem()))
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
