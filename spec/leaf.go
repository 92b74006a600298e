// Leaf values: the field types of the raw structures that decode
// themselves from a node (str, intv, list, omap, words, ...) and describe
// themselves in the JSON Schema.

package spec

import (
	"encoding/base64"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// leaf is a value type that decodes itself from a node and describes itself
// in the JSON Schema.
type leaf interface {
	decode(p *parser, n *yaml.Node, where string)
	schema(g *schemaGen) map[string]any
}

// scalar is the shape of the scalar leaves (intv, boolv, durv, sizev,
// factorv): the value, where it was written, and whether it was.
type scalar[T any] struct {
	V   T
	Pos Pos
	Set bool
}

// decodeScalar is the decoding every scalar leaf shares: it records where n
// is, reports a node that is not a scalar with a tag the leaf takes (see
// isScalar), and sets the leaf to what conv makes of the node; conv reports
// its own errors and returns false after them.
func (s *scalar[T]) decodeScalar(p *parser, n *yaml.Node, where, want string, takes func(tag string) bool, conv func(n *yaml.Node) (T, bool)) {
	s.Pos = nodePos(n)
	if !p.isScalar(n, where, want, takes) {
		return
	}
	if v, ok := conv(n); ok {
		s.V, s.Set = v, true
	}
}

// isScalar reports whether n is a scalar with a tag that takes accepts;
// otherwise it reports "where: must be <want>, not <what n is>", the one
// wording of every scalar leaf's type error.
func (p *parser) isScalar(n *yaml.Node, where, want string, takes func(tag string) bool) bool {
	if n.Kind == yaml.ScalarNode && takes(n.ShortTag()) {
		return true
	}
	if n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle != 0 && strings.Contains(want, "string") {
		// run: {msg} — faber's {var} is YAML's flow mapping.
		if t := p.flowText(n); t != "" {
			p.errorf(nodePos(n), "%s: YAML reads %s as a mapping; quote it: %s", where, t, strconv.Quote(t))
			return false
		}
	}
	p.errorf(nodePos(n), "%s: must be %s, not %s", where, want, kindName(n))
	return false
}

// flowText is the source text of a flow mapping or list that starts and
// ends on one line ({msg}, [a, b]), or "".
func (p *parser) flowText(n *yaml.Node) string {
	t := p.lineText(n.Line)
	if n.Column < 1 || n.Column > len(t) {
		return ""
	}
	t = t[n.Column-1:]
	if end := flowEnd(t); end > 0 {
		return t[:end]
	}
	return ""
}

// flowEnd is the length of the flow collection that t starts with ({...} or
// [...], nested and quoted parts skipped), or 0 when it does not close on
// this line.
func flowEnd(t string) int {
	depth := 0
	var quote byte
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' {
				i++
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return 0
}

// Which scalars a leaf takes, by tag.
func anyTag(string) bool        { return true }
func notNull(tag string) bool   { return tag != "!!null" }
func intTag(tag string) bool    { return tag == "!!int" }
func boolTag(tag string) bool   { return tag == "!!bool" }
func numberTag(tag string) bool { return tag == "!!int" || tag == "!!float" }

// str is a scalar string (numbers and other scalars are kept as written).
// An empty value (null) counts as not written.
type str struct {
	V    string
	Pos  Pos
	Set  bool
	Node *yaml.Node
}

func (s *str) decode(p *parser, n *yaml.Node, where string) {
	s.Pos, s.Node = nodePos(n), n
	if !p.isScalar(n, where, "a string", anyTag) || n.ShortTag() == "!!null" {
		return
	}
	s.V, s.Set = n.Value, true
}

func (s *str) schema(*schemaGen) map[string]any { return map[string]any{"type": "string"} }

// intv is an integer.
type intv struct{ scalar[int] }

func (v *intv) decode(p *parser, n *yaml.Node, where string) {
	v.decodeScalar(p, n, where, "an integer", intTag, func(n *yaml.Node) (int, bool) {
		var i int64
		if err := n.Decode(&i); err != nil || int64(int(i)) != i || i > 1<<31-1 || i < -(1<<31) {
			p.errorf(nodePos(n), "%s: integer %s out of range", where, n.Value)
			return 0, false
		}
		return int(i), true
	})
}

func (v *intv) schema(*schemaGen) map[string]any { return map[string]any{"type": "integer"} }

// boolv is true or false.
type boolv struct{ scalar[bool] }

func (v *boolv) decode(p *parser, n *yaml.Node, where string) {
	v.decodeScalar(p, n, where, "true or false", boolTag, func(n *yaml.Node) (b bool, ok bool) {
		if err := n.Decode(&b); err != nil {
			p.errorf(nodePos(n), "%s: must be true or false, not %s", where, kindName(n))
			return false, false
		}
		return b, true
	})
}

func (v *boolv) schema(*schemaGen) map[string]any { return map[string]any{"type": "boolean"} }

// durv is a Go duration ("90s"); negative durations are rejected.
type durv struct{ scalar[time.Duration] }

func (v *durv) decode(p *parser, n *yaml.Node, where string) {
	v.decodeScalar(p, n, where, "a duration like 90s, 10m or 1h30m", notNull, func(n *yaml.Node) (time.Duration, bool) {
		d, err := time.ParseDuration(strings.TrimSpace(n.Value))
		if err != nil {
			p.errorf(nodePos(n), "%s: bad duration %q (use Go syntax like 90s, 10m or 1h30m)", where, n.Value)
			return 0, false
		}
		if d < 0 {
			p.errorf(nodePos(n), "%s: duration %s must not be negative", where, n.Value)
			return 0, false
		}
		return d, true
	})
}

func (v *durv) schema(*schemaGen) map[string]any {
	return map[string]any{"type": "string", "pattern": `^([0-9]+(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$|^0$`}
}

// list is a YAML sequence; an empty value (null) is an empty list.
type list[T any] struct {
	Items []T
	Pos   Pos
	Set   bool
	Bad   bool // not a list: an error was reported
}

func (l *list[T]) decode(p *parser, n *yaml.Node, where string) {
	l.Pos, l.Set = nodePos(n), true
	var items []*yaml.Node
	if items, l.Bad = p.seqItems(n, where); items == nil {
		return
	}
	l.Items = make([]T, len(items))
	for i, c := range items {
		if c != nil {
			p.decodeValue(reflect.ValueOf(&l.Items[i]).Elem(), c, where+"["+strconv.Itoa(i)+"]")
		}
	}
}

// seqItems returns the items of the list n, nil for an empty item (`- ` or
// `~`, reported: a mistake, not a value); none for an empty value (null), and
// bad when n is not a list (reported).
func (p *parser) seqItems(n *yaml.Node, where string) (items []*yaml.Node, bad bool) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil, false
	}
	if n.Kind != yaml.SequenceNode {
		p.errorf(nodePos(n), "%s: must be a list, not %s", where, kindName(n))
		return nil, true
	}
	items = make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		if d := deref(c); d != nil && d.Kind == yaml.ScalarNode && d.ShortTag() == "!!null" {
			p.errorf(nodePos(d), "%s[%d]: is empty", where, i)
			continue
		}
		items[i] = c
	}
	return items, false
}

func (l *list[T]) schema(g *schemaGen) map[string]any {
	return map[string]any{"type": "array", "items": g.schemaOf(reflect.TypeFor[T]())}
}

// stepList is a list of steps that the builder decodes one at a time
// (stepList.item), so that a step's raw form, about a kilobyte mostly of
// fields not written, lives only while the step is built and checked: a
// plan may have 100,000 steps.
type stepList struct {
	Nodes []*yaml.Node // the items; nil for an empty item (already reported)
	Where string       // how messages name the list
	Pos   Pos
	Set   bool
	Bad   bool // not a list: an error was reported
}

func (l *stepList) decode(p *parser, n *yaml.Node, where string) {
	l.Pos, l.Set, l.Where = nodePos(n), true, where
	l.Nodes, l.Bad = p.seqItems(n, where)
}

// item decodes step i, or returns nil for an empty item or a list whose
// decoding was aborted.
func (l *stepList) item(p *parser, i int) *rawStep {
	if l.Nodes[i] == nil || p.aborted {
		return nil
	}
	var rs *rawStep
	p.decodeValue(reflect.ValueOf(&rs).Elem(), l.Nodes[i], l.Where+"["+strconv.Itoa(i)+"]")
	return rs
}

func (l *stepList) schema(g *schemaGen) map[string]any {
	return map[string]any{"type": "array", "items": g.schemaOf(reflect.TypeFor[*rawStep]())}
}

// omap is a mapping of names to scalar values, in file order.
type omap struct {
	Keys []str
	Vals []str
	Pos  Pos
	Set  bool
}

func (m *omap) decode(p *parser, n *yaml.Node, where string) {
	m.Pos, m.Set = nodePos(n), true
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return
	}
	if n.Kind != yaml.MappingNode {
		p.errorf(m.Pos, "%s: must be a mapping, not %s", where, kindName(n))
		return
	}
	for _, kv := range p.pairs(n, where) {
		v := deref(kv.v)
		s := str{Pos: nodePos(v), Node: v, Set: true}
		switch {
		case v.Kind != yaml.ScalarNode:
			p.errorf(s.Pos, "%s: %s: must be a string or number, not %s", where, kv.key, kindName(v))
		case v.ShortTag() == "!!binary":
			// YAML text is UTF-8; !!binary (base64) carries any bytes, which
			// programs then get unchanged (SPEC §4.1).
			raw, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(v.Value), ""))
			if err != nil {
				p.errorf(s.Pos, "%s: %s: !!binary value is not base64: %v", where, kv.key, err)
			}
			s.V = string(raw)
		case v.ShortTag() != "!!null":
			s.V = v.Value
		}
		m.Keys = append(m.Keys, str{V: kv.key, Pos: nodePos(kv.k), Set: true, Node: kv.k})
		m.Vals = append(m.Vals, s)
	}
}

func (m *omap) schema(*schemaGen) map[string]any {
	return map[string]any{
		"type":                 "object",
		"additionalProperties": map[string]any{"type": []any{"string", "number", "boolean", "null"}},
	}
}

// words is an argv: a list of strings, or one string split as shell words.
type words struct {
	List   []str
	Line   str // set when written as one string
	IsLine bool
	Pos    Pos
	Set    bool
}

func (w *words) decode(p *parser, n *yaml.Node, where string) {
	w.Pos, w.Set = nodePos(n), true
	switch {
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null":
	case n.Kind == yaml.ScalarNode:
		w.IsLine = true
		w.Line.decode(p, n, where)
	case n.Kind == yaml.SequenceNode:
		var l list[str]
		l.decode(p, n, where)
		w.List = l.Items
	default:
		p.errorf(w.Pos, "%s: must be a list of strings or a string, not %s", where, kindName(n))
	}
}

func (w *words) schema(*schemaGen) map[string]any {
	return map[string]any{"oneOf": []any{
		map[string]any{"type": "string"},
		map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
	}}
}

// onFailure is result_handling.on_failure: a string or a structured handler.
// Its meaning is decided when the plan is built.
type onFailure struct {
	Str    str // written as a scalar
	Obj    *rawStructured
	Node   *yaml.Node
	Pos    Pos
	Set    bool
	Scalar bool
}

func (o *onFailure) decode(p *parser, n *yaml.Node, where string) {
	o.Pos, o.Set, o.Node = nodePos(n), true, n
	switch n.Kind {
	case yaml.ScalarNode:
		o.Scalar = true
		o.Str = str{V: n.Value, Pos: o.Pos, Set: n.ShortTag() != "!!null", Node: n}
	case yaml.MappingNode:
		o.Obj = &rawStructured{}
		p.decodeObject(reflect.ValueOf(o.Obj).Elem(), n, where)
	}
}

func (o *onFailure) schema(g *schemaGen) map[string]any {
	return map[string]any{"oneOf": []any{
		map[string]any{"type": "string", "description": "stop, continue, retry, or a /command line."},
		g.schemaOf(reflect.TypeFor[*rawStructured]()),
	}}
}

// args are a structured handler's arguments, in file order.
type args struct {
	Items []Arg
	Vals  []str // the value of each item (for substitution checks)
	Keys  []str
	Pos   Pos
	Set   bool
}

var argKey = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]*$`)

func (a *args) decode(p *parser, n *yaml.Node, where string) {
	a.Pos, a.Set = nodePos(n), true
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return
	}
	if n.Kind != yaml.MappingNode {
		p.errorf(a.Pos, "%s: must be a mapping of --key values, not %s", where, kindName(n))
		return
	}
	for _, kv := range p.pairs(n, where) {
		v := deref(kv.v)
		if !argKey.MatchString(kv.key) {
			p.errorf(nodePos(kv.k), "%s: key %q must match [A-Za-z0-9][A-Za-z0-9._:-]* (it becomes --%s)", where, kv.key, strings.TrimLeft(kv.key, "-"))
			continue
		}
		arg := Arg{Key: kv.key}
		val := str{Pos: nodePos(v), Node: v}
		switch {
		case v.Kind != yaml.ScalarNode:
			p.errorf(val.Pos, "%s: %s: must be a string, number or boolean, not %s", where, kv.key, kindName(v))
			continue
		case v.ShortTag() == "!!null":
			p.errorf(val.Pos, "%s: %s: has no value (use true for a flag)", where, kv.key)
			continue
		case v.ShortTag() == "!!bool":
			var b bool
			if err := v.Decode(&b); err != nil {
				p.errorf(val.Pos, "%s: %s: bad boolean %q", where, kv.key, v.Value)
				continue
			}
			arg.Flag, arg.Omit = b, !b
		default:
			arg.Value = v.Value
			val.V, val.Set = v.Value, true
		}
		a.Items = append(a.Items, arg)
		a.Vals = append(a.Vals, val)
		a.Keys = append(a.Keys, str{V: kv.key, Pos: nodePos(kv.k), Set: true})
	}
}

func (a *args) schema(*schemaGen) map[string]any {
	return map[string]any{
		"type":                 "object",
		"propertyNames":        map[string]any{"pattern": argKey.String()},
		"additionalProperties": map[string]any{"type": []any{"string", "number", "boolean"}},
	}
}

// fanNode is a raw fan-out value (foreach: or matrix:), interpreted by the
// builder (fanout.go); its schema is foreach:'s.
type fanNode struct {
	N   *yaml.Node
	Pos Pos
	Set bool
}

func (f *fanNode) decode(p *parser, n *yaml.Node, where string) {
	f.N, f.Pos, f.Set = n, nodePos(n), true
}

// fanScalar is what a fan-out item, field or value may be.
var fanScalar = []any{"string", "number", "boolean", "null"}

// schema describes the forms of foreach: (README, "Fan-out").
func (f *fanNode) schema(*schemaGen) map[string]any {
	source := func(key, doc string, s map[string]any) map[string]any {
		s["description"] = doc
		return map[string]any{
			"type":                 "object",
			"properties":           map[string]any{key: s},
			"required":             []any{key},
			"additionalProperties": false,
		}
	}
	return map[string]any{"oneOf": []any{
		map[string]any{
			"type":        "array",
			"description": "One item per value ({item} the value), or per mapping: fields [a-z_][a-z0-9_]* with scalar values are {item.<name>}, {item} is the id field, else name, else the item's number.",
			"items": map[string]any{"oneOf": []any{
				map[string]any{"type": fanScalar},
				map[string]any{
					"type":                 "object",
					"propertyNames":        map[string]any{"pattern": fieldName.String()},
					"additionalProperties": map[string]any{"type": fanScalar},
				},
			}},
		},
		source("range", "Integers [from, to] or [from, to, step], to included; step may be negative, not 0.",
			map[string]any{"type": "array", "items": map[string]any{"type": "integer"}, "minItems": 2, "maxItems": 3}),
		source("glob", "Read when the step is ready: one item per matching path (Go's filepath.Glob: *, ?, [...], no **), sorted, relative to the step's dir (else the plan's directory).",
			map[string]any{"type": "string", "minLength": 1}),
		source("lines", "Read when the step is ready: one item per non-blank line of the file (relative to the plan's directory).",
			map[string]any{"type": "string", "minLength": 1}),
		source("from", "Read when the step is ready from a value an upstream step published, written {steps.<id>.outputs.<KEY>}: a JSON array of strings, numbers or booleans, else one item per non-blank line.",
			map[string]any{"type": "string", "minLength": 1}),
	}}
}

// matrixNode is matrix:, a fan-out value with a schema of its own.
type matrixNode struct{ fanNode }

// schema describes matrix: (README, "Fan-out").
func (m *matrixNode) schema(*schemaGen) map[string]any {
	return map[string]any{
		"type":          "object",
		"propertyNames": map[string]any{"pattern": fieldName.String()},
		"properties": map[string]any{
			"exclude": map[string]any{
				"type":        "array",
				"description": "Combinations to leave out: an item matching every name of an entry is not made.",
				"items": map[string]any{
					"type":                 "object",
					"propertyNames":        map[string]any{"pattern": fieldName.String()},
					"additionalProperties": map[string]any{"type": fanScalar},
				},
			},
		},
		"additionalProperties": map[string]any{
			"type":     "array",
			"minItems": 1,
			"items":    map[string]any{"type": fanScalar},
		},
		"minProperties": 1,
	}
}
