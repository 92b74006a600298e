// The reflective decoder: node helpers, the field tables built from the raw
// structures' tags, and the walk of a node tree into them.

package spec

import (
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// countNodes counts the nodes of a tree without following aliases.
func countNodes(n *yaml.Node) int {
	c := 1
	for _, k := range n.Content {
		c += countNodes(k)
	}
	return c
}

func nodePos(n *yaml.Node) Pos { return Pos{Line: n.Line, Col: n.Column} }

// deref follows alias nodes to their anchored node.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 1000; i++ {
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "empty"
		case "!!bool":
			return "a boolean"
		case "!!int":
			return "an integer"
		case "!!float":
			return "a number"
		}
		return strconv.Quote(n.Value)
	}
	return "a YAML alias"
}

func join(where, key string) string {
	if where == "" {
		return key
	}
	return where + ": " + key
}

// field is one accepted key of a raw struct.
type field struct {
	key      string
	index    []int
	required bool
	ident    string
	label    string
	enum     []string
	pattern  *regexp.Regexp
	min      *int
	doc      string
}

// fieldTable lists the accepted keys of a raw struct type.
type fieldTable struct {
	fields []*field // in declaration order
	byKey  map[string]*field
	ident  *field
}

// fieldsOf returns the table of t, building it on first use.
func (p *parser) fieldsOf(t reflect.Type) *fieldTable {
	if ft, ok := p.tables[t]; ok {
		return ft
	}
	ft := tableOf(t)
	p.tables[t] = ft
	return ft
}

// tableOf builds the field table of a raw struct type from its tags.
func tableOf(t reflect.Type) *fieldTable {
	ft := &fieldTable{byKey: map[string]*field{}}
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			tag, ok := sf.Tag.Lookup("yaml")
			if !ok {
				continue
			}
			idx := append(append([]int(nil), index...), i)
			if tag == ",inline" {
				walk(sf.Type, idx)
				continue
			}
			f := &field{
				key:      tag,
				index:    idx,
				required: sf.Tag.Get("required") == "true",
				ident:    sf.Tag.Get("ident"),
				label:    sf.Tag.Get("label"),
				doc:      sf.Tag.Get("doc"),
			}
			if e := sf.Tag.Get("enum"); e != "" {
				f.enum = strings.Split(e, ",")
			}
			if pat := sf.Tag.Get("pattern"); pat != "" {
				f.pattern = regexp.MustCompile(pat)
			}
			if m := sf.Tag.Get("min"); m != "" {
				v, _ := strconv.Atoi(m)
				f.min = &v
			}
			if f.ident != "" {
				ft.ident = f
			}
			ft.fields = append(ft.fields, f)
			ft.byKey[f.key] = f
		}
	}
	walk(t, nil)
	return ft
}

// keys returns the accepted keys in declaration order.
func (ft *fieldTable) keys() []string {
	out := make([]string, len(ft.fields))
	for i, f := range ft.fields {
		out[i] = f.key
	}
	return out
}

var leafType = reflect.TypeFor[leaf]()

// decodeValue decodes n into v, a leaf value or a pointer to a raw struct.
func (p *parser) decodeValue(v reflect.Value, n *yaml.Node, where string) {
	if p.aborted {
		return
	}
	p.budget--
	if p.budget < 0 {
		p.aborted = true
		p.errorf(nodePos(n), "plan expands too many YAML aliases")
		return
	}
	if n.Kind == yaml.AliasNode {
		target := deref(n)
		if target == nil || target.Kind == yaml.AliasNode || p.active[target] {
			p.errorf(nodePos(n), "%s: YAML alias %q contains itself", where, n.Value)
			return
		}
		p.active[target] = true
		defer delete(p.active, target)
		n = target
	}
	if v.CanAddr() && v.Addr().Type().Implements(leafType) {
		v.Addr().Interface().(leaf).decode(p, n, where)
		return
	}
	if v.Kind() == reflect.Pointer && v.Type().Elem().Kind() == reflect.Struct {
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
			return // empty block: as if not written
		}
		if n.Kind != yaml.MappingNode {
			p.errorf(nodePos(n), "%s: must be a mapping, not %s", orPlan(where), kindName(n))
			return // left nil: nothing more is said about it
		}
		obj := reflect.New(v.Type().Elem())
		v.Set(obj)
		p.decodeObject(obj.Elem(), n, where)
		return
	}
	// Unreachable with the raw structs above; never panic on input.
	p.errorf(nodePos(n), "%s: unsupported value", where)
}

// pair is one key/value of a mapping.
type pair struct {
	key  string
	k, v *yaml.Node
}

// pairs returns the key/value pairs of a mapping, with YAML merge keys (<<)
// applied, reporting non-string and duplicate keys.
func (p *parser) pairs(n *yaml.Node, where string) []pair {
	var out []pair
	seen := map[string]*yaml.Node{}
	var merged []pair
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		if k == nil || k.Kind != yaml.ScalarNode {
			p.errorf(nodePos(n.Content[i]), "%s: keys must be strings", orPlan(where))
			continue
		}
		if k.ShortTag() == "!!merge" {
			merged = append(merged, p.mergeSources(v, where, 0)...)
			continue
		}
		if first, dup := seen[k.Value]; dup {
			p.errorf(nodePos(k), "%s: duplicate key %q (first at line %d)", orPlan(where), k.Value, first.Line)
			continue
		}
		seen[k.Value] = k
		out = append(out, pair{key: k.Value, k: k, v: v})
	}
	for _, kv := range merged {
		if _, dup := seen[kv.key]; !dup {
			seen[kv.key] = kv.k
			out = append(out, kv)
		}
	}
	return out
}

// mergeSources returns the pairs a merge key (<<) brings: those of a mapping,
// or of each mapping of a list.
func (p *parser) mergeSources(v *yaml.Node, where string, depth int) []pair {
	v = deref(v)
	if depth > 10 || v == nil {
		p.errorf(Pos{}, "%s: merge keys nested too deeply", orPlan(where))
		return nil
	}
	switch v.Kind {
	case yaml.MappingNode:
		return p.pairs(v, where)
	case yaml.SequenceNode:
		var out []pair
		seen := map[string]bool{}
		for _, c := range v.Content {
			for _, kv := range p.mergeSources(c, where, depth+1) {
				if !seen[kv.key] {
					seen[kv.key] = true
					out = append(out, kv)
				}
			}
		}
		return out
	}
	p.errorf(nodePos(v), "%s: merge key (<<) needs a mapping or a list of mappings", orPlan(where))
	return nil
}

func orPlan(where string) string {
	if where == "" {
		return "plan"
	}
	return where
}

// decodeObject decodes the mapping n into the raw struct v.
func (p *parser) decodeObject(v reflect.Value, n *yaml.Node, where string) {
	ft := p.fieldsOf(v.Type())
	meta := v.Addr().Interface().(interface{ meta() *rawMeta }).meta()
	meta.Pos = nodePos(n)
	meta.keys = nil
	if n.Kind != yaml.MappingNode {
		p.errorf(meta.Pos, "%s: must be a mapping, not %s", orPlan(where), kindName(n))
		meta.Where = where
		return
	}
	kvs := p.pairs(n, where)
	// Name the object by its identifying field, as soon as it is known, so
	// that every message about it says `step "deploy"`.
	if ft.ident != nil {
		for _, kv := range kvs {
			if kv.key == ft.ident.key {
				if k := deref(kv.v); k.Kind == yaml.ScalarNode && k.ShortTag() != "!!null" && k.Value != "" {
					where = ft.ident.ident + " " + strconv.Quote(k.Value)
					meta.Pos = nodePos(kv.k)
				}
			}
		}
	}
	meta.Where = where
	meta.keys = make([]keyAt, 0, len(kvs))
	for _, kv := range kvs {
		f := ft.byKey[kv.key]
		if f == nil {
			p.errorf(nodePos(kv.k), "%s: unknown field %q%s", orPlan(where), kv.key, suggest(kv.key, ft.keys()))
			continue
		}
		meta.keys = append(meta.keys, keyAt{kv.key, nodePos(kv.k)})
		fw := join(where, kv.key)
		if f.label != "" {
			fw = f.label
		}
		fv := v.FieldByIndex(f.index)
		if vn := deref(kv.v); f.required && vn != nil && vn.Kind == yaml.ScalarNode && vn.ShortTag() == "!!null" {
			p.errorf(nodePos(vn), "%s: must not be empty", join(where, kv.key))
			continue
		}
		p.decodeValue(fv, kv.v, fw)
		p.checkField(f, fv, join(where, kv.key))
	}
	for _, f := range ft.fields {
		if f.required && !meta.has(f.key) {
			p.errorf(meta.Pos, "%s: missing required field %q", orPlan(where), f.key)
		}
	}
}

// checkField applies the enum, pattern and min tags of f to a decoded value.
func (p *parser) checkField(f *field, v reflect.Value, where string) {
	switch x := v.Addr().Interface().(type) {
	case *str:
		if !x.Set {
			return
		}
		if f.enum != nil && !contains(f.enum, x.V) {
			p.errorf(x.Pos, "%s: must be %s, not %q", where, orList(f.enum), x.V)
		}
		if f.pattern != nil && !f.pattern.MatchString(x.V) {
			p.errorf(x.Pos, "%s: %q must match %s", where, x.V, strings.Trim(f.pattern.String(), "^$"))
		}
	case *omap:
		if f.pattern != nil {
			for _, k := range x.Keys {
				if !f.pattern.MatchString(k.V) {
					p.errorf(k.Pos, "%s: key %q must match %s", where, k.V, strings.Trim(f.pattern.String(), "^$"))
				}
			}
		}
	case *counts:
		if f.pattern != nil {
			for _, k := range x.Keys {
				if !f.pattern.MatchString(k.V) {
					p.errorf(k.Pos, "%s: key %q must match %s", where, k.V, strings.Trim(f.pattern.String(), "^$"))
				}
			}
		}
	case *intv:
		if x.Set && f.min != nil && x.V < *f.min {
			if *f.min == 0 {
				p.errorf(x.Pos, "%s: must not be negative, not %d", where, x.V)
			} else {
				p.errorf(x.Pos, "%s: must be at least %d, not %d", where, *f.min, x.V)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// orList renders [a b c] as "a, b or c".
func orList(l []string) string {
	switch len(l) {
	case 0:
		return ""
	case 1:
		return l[0]
	}
	return strings.Join(l[:len(l)-1], ", ") + " or " + l[len(l)-1]
}
