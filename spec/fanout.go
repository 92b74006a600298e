package spec

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/faber-run/faber/spec/subst"
	"gopkg.in/yaml.v3"
)

// Fan-out (README, "Fan-out"): a step with foreach: or matrix: becomes one
// step per item, <id>[<key>], and a join step <id> that needs them all and
// succeeds when every item did.

// MaxItems is the most items one fan-out may have, MaxPlanItems the most
// all the fan-outs of a plan may have together (a small plan of many
// fan-outs must not make millions of steps).
const (
	MaxItems     = 100000
	MaxPlanItems = 1000000
)

// maxKey is the longest item key kept as written; longer ones, and ones
// with characters outside keyChars, are cleaned (see itemKey).
const maxKey = 64

// Item is one item of a fan-out step.
type Item struct {
	Key    string            // in the step id: <id>[<key>]
	Value  string            // {item}
	Fields map[string]string // {item.<name>}
	Names  []string          // Fields' names in order
	Index  int               // 0-based position
}

// Vars are the item's substitution variables: item and item.<name>.
func (it *Item) Vars() map[string]string {
	v := make(map[string]string, len(it.Fields)+1)
	v["item"] = it.Value
	for k, x := range it.Fields {
		v["item."+k] = x
	}
	return v
}

// FanOut is the fan-out of a step: on the template while the plan is built,
// then on the join step.
type FanOut struct {
	Kind        string   // list, range, glob, lines or matrix
	Items       []Item   // a dynamic fan-out's: none until SetItems
	MaxParallel int      // 0: no bound but jobs
	Names       []string // the names of {item.<name>}: a matrix's, or the fields of a list's mappings
	ItemIDs     []string // the item steps' ids (join step)
	// Needs are the fan-out step's own dependencies (its needs: less the
	// item-wise ones, which each item carries): the join step needs them
	// as well as its items, so that a fan-out with no item still waits
	// for what it needs.
	Needs []string
	// Dynamic is set for glob: and lines:, whose items are read when the
	// step is ready (ReadItems, SetItems), not when the plan is loaded;
	// Source is the pattern or file name as written.
	Dynamic bool
	Source  string
	// from is a from: source while the plan is built (checkFrom).
	from *str
}

var (
	fieldName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
	keyChars  = regexp.MustCompile(`[^A-Za-z0-9._=,+@:-]`)
)

// fanOut reads a step's foreach:/matrix:/max_parallel: into s.FanOut.
func (b *builder) fanOut(s *Step, rs *rawStep) {
	if !rs.Foreach.Set && !rs.Matrix.Set {
		if rs.MaxParallel.Set {
			b.errorf(rs.MaxParallel.Pos, "step %q: max_parallel is only for fan-out steps (foreach: or matrix:)", s.ID)
		}
		return
	}
	where := fmt.Sprintf("step %q", s.ID)
	if rs.Foreach.Set && rs.Matrix.Set {
		b.errorf(rs.Matrix.Pos, "%s: has both foreach and matrix; use one of them", where)
		return
	}
	if rs.Plan.Set {
		b.errorf(rs.keyPos("plan"), "%s: a plan: step cannot fan out (yet); fan out a run: step", where)
		return
	}
	fo := &FanOut{MaxParallel: rs.MaxParallel.V}
	if rs.Foreach.Set {
		b.foreach(fo, rs.Foreach.N, where+": foreach")
	} else {
		b.matrix(fo, rs.Matrix.N, where+": matrix")
	}
	if len(fo.Items) > MaxItems {
		b.errorf(rs.Foreach.Pos, "%s: %d items; at most %d", where, len(fo.Items), MaxItems)
		return
	}
	if b.items += len(fo.Items); b.items > MaxPlanItems {
		if !b.tooManyItems {
			b.tooManyItems = true
			b.errorf(s.Pos, "%s: the plan's fan-outs have more than %d items in all; at most %d (each item is a step)", where, MaxPlanItems, MaxPlanItems)
		}
		fo.Items = nil // still a fan-out (its {item} is known), of nothing
		s.FanOut = fo
		return
	}
	keyItems(fo.Items)
	s.FanOut = fo
}

func (b *builder) foreach(fo *FanOut, n *yaml.Node, where string) {
	n = deref(n)
	switch n.Kind {
	case yaml.SequenceNode:
		fo.Kind = "list"
		named := map[string]bool{} // fo.Names as a set
		for i, e := range n.Content {
			e = deref(e)
			switch e.Kind {
			case yaml.ScalarNode:
				fo.Items = append(fo.Items, Item{Value: e.Value, Index: i})
			case yaml.MappingNode:
				it := Item{Index: i, Fields: map[string]string{}}
				for _, kv := range b.pairs(e, where) {
					v := deref(kv.v)
					switch {
					case !fieldName.MatchString(kv.key):
						b.errorf(nodePos(kv.k), "%s: item %d: field %q must match [a-z_][a-z0-9_]* (it is {item.%s})", where, i+1, kv.key, kv.key)
						continue
					case v.Kind != yaml.ScalarNode:
						b.errorf(nodePos(v), "%s: item %d: %s: must be a string or number, not %s", where, i+1, kv.key, kindName(v))
						continue
					}
					it.Fields[kv.key] = v.Value
					it.Names = append(it.Names, kv.key)
					if !named[kv.key] {
						named[kv.key] = true
						fo.Names = append(fo.Names, kv.key)
					}
				}
				it.Value = it.Fields["id"]
				if it.Value == "" {
					it.Value = it.Fields["name"]
				}
				if it.Value == "" {
					it.Value = strconv.Itoa(i + 1)
				}
				fo.Items = append(fo.Items, it)
			default:
				b.errorf(nodePos(e), "%s: item %d: must be a string, number or mapping, not %s", where, i+1, kindName(e))
			}
		}
	case yaml.MappingNode:
		pairs := b.pairs(n, where)
		if len(pairs) != 1 {
			b.errorf(nodePos(n), "%s: a mapping takes exactly one of range, glob, lines or from", where)
			return
		}
		kv := pairs[0]
		v := deref(kv.v)
		// source reads a dynamic fan-out's source: a non-empty scalar,
		// read when the step is ready (ReadItems), not now.
		source := func(kind, want string) bool {
			fo.Kind, fo.Dynamic = kind, true
			if v.Kind != yaml.ScalarNode || v.Value == "" {
				b.errorf(nodePos(v), "%s.%s: must be %s", where, kind, want)
				return false
			}
			fo.Source = v.Value
			return true
		}
		switch kv.key {
		case "range":
			fo.Kind = "range"
			b.rangeItems(fo, v, where+".range")
		case "glob":
			// The files are often what an upstream step makes.
			if !source("glob", "a pattern such as data/*.csv") {
				return
			}
			if _, err := filepath.Match(filepath.FromSlash(v.Value), ""); err != nil {
				b.errorf(nodePos(v), "%s.glob: bad pattern %q: %v", where, v.Value, err)
				return
			}
		case "lines":
			source("lines", "a file name")
		case "from":
			// A value an upstream step published; its references are
			// checked with the step's (checkFrom).
			if source("from", "an output of an upstream step, such as \"{steps.list.outputs.files}\"") {
				fo.from = &str{V: v.Value, Pos: nodePos(v), Set: true, Node: v}
			}
		default:
			b.errorf(nodePos(kv.k), "%s: unknown key %q; use range, glob, lines or from%s", where, kv.key, suggest(kv.key, []string{"range", "glob", "lines", "from"}))
		}
	default:
		b.errorf(nodePos(n), "%s: must be a list, or a mapping with range, glob, lines or from, not %s", where, kindName(n))
	}
}

func (b *builder) rangeItems(fo *FanOut, v *yaml.Node, where string) {
	var nums []int
	if v.Kind == yaml.SequenceNode {
		for _, e := range v.Content {
			e = deref(e)
			var x int
			if e.Kind != yaml.ScalarNode || e.ShortTag() != "!!int" || e.Decode(&x) != nil {
				b.errorf(nodePos(e), "%s: must be integers [from, to] or [from, to, step]", where)
				return
			}
			nums = append(nums, x)
		}
	}
	if len(nums) < 2 || len(nums) > 3 {
		b.errorf(nodePos(v), "%s: must be [from, to] or [from, to, step] (to included)", where)
		return
	}
	step := 1
	if len(nums) == 3 {
		step = nums[2]
	}
	from, to := nums[0], nums[1]
	if step == 0 || (to-from)/step < 0 {
		b.errorf(nodePos(v), "%s: step %d never gets from %d to %d", where, step, from, to)
		return
	}
	if (to-from)/step >= MaxItems {
		b.errorf(nodePos(v), "%s: more than %d items", where, MaxItems)
		return
	}
	fo.Items = make([]Item, 0, (to-from)/step+1)
	for i, x := 0, from; (step > 0 && x <= to) || (step < 0 && x >= to); i, x = i+1, x+step {
		fo.Items = append(fo.Items, Item{Value: strconv.Itoa(x), Index: i})
	}
}

func (b *builder) matrix(fo *FanOut, n *yaml.Node, where string) {
	fo.Kind = "matrix"
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		b.errorf(nodePos(n), "%s: must be a mapping of name: [values], not %s", where, kindName(n))
		return
	}
	var names []string
	var values [][]string
	var exclude []map[string]string
	for _, kv := range b.pairs(n, where) {
		v := deref(kv.v)
		if kv.key == "exclude" {
			if v.Kind != yaml.SequenceNode {
				b.errorf(nodePos(v), "%s.exclude: must be a list of mappings", where)
				continue
			}
			for _, e := range v.Content {
				e = deref(e)
				if e.Kind != yaml.MappingNode {
					b.errorf(nodePos(e), "%s.exclude: must be a list of mappings, not %s", where, kindName(e))
					continue
				}
				m := map[string]string{}
				for _, ekv := range b.pairs(e, where+".exclude") {
					m[ekv.key] = deref(ekv.v).Value
				}
				exclude = append(exclude, m)
			}
			continue
		}
		if !fieldName.MatchString(kv.key) {
			b.errorf(nodePos(kv.k), "%s: name %q must match [a-z_][a-z0-9_]* (it is {item.%s})", where, kv.key, kv.key)
			continue
		}
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			b.errorf(nodePos(v), "%s.%s: must be a non-empty list of values", where, kv.key)
			continue
		}
		var vals []string
		for _, e := range v.Content {
			e = deref(e)
			if e.Kind != yaml.ScalarNode {
				b.errorf(nodePos(e), "%s.%s: values must be strings or numbers, not %s", where, kv.key, kindName(e))
				continue
			}
			vals = append(vals, e.Value)
		}
		names = append(names, kv.key)
		values = append(values, vals)
	}
	fo.Names = names
	if len(names) == 0 {
		b.errorf(nodePos(n), "%s: has no names", where)
		return
	}
	for _, ex := range exclude {
		for k := range ex {
			if !contains(names, k) {
				b.errorf(nodePos(n), "%s.exclude: %q is not a name of the matrix%s", where, k, suggest(k, names))
			}
		}
	}
	total := 1
	for _, v := range values {
		total *= len(v)
		if total > MaxItems {
			b.errorf(nodePos(n), "%s: more than %d combinations", where, MaxItems)
			return
		}
	}
	ex := newExclusions(exclude)
	idx := make([]int, len(names))
	for c := 0; c < total; c++ {
		f := make(map[string]string, len(names))
		parts := make([]string, len(names))
		for i, nm := range names {
			f[nm] = values[i][idx[i]]
			parts[i] = nm + "=" + f[nm]
		}
		b.ops += 1 + len(ex.groups)
		if !excluded(f, ex) {
			fo.Items = append(fo.Items, Item{Value: strings.Join(parts, ","), Fields: f, Names: names, Index: len(fo.Items)})
		}
		for i := len(idx) - 1; i >= 0; i-- { // the last name varies fastest
			idx[i]++
			if idx[i] < len(values[i]) {
				break
			}
			idx[i] = 0
		}
	}
}

func excluded(f map[string]string, ex *exclusions) bool {
	for _, g := range ex.groups {
		if g.tuples[tuple(f, g.names)] {
			return true
		}
	}
	return false
}

// exclusions are a matrix's exclude: entries grouped by the names they
// set, each group a set of value tuples, so that an item is checked with
// one lookup per group rather than a comparison per entry (items ×
// entries, both up to 100,000).
type exclusions struct {
	groups []exclusionGroup
}

type exclusionGroup struct {
	names  []string // sorted
	tuples map[string]bool
}

func newExclusions(exclude []map[string]string) *exclusions {
	ex := &exclusions{}
	at := map[string]int{} // names joined -> group
	for _, m := range exclude {
		if len(m) == 0 {
			continue // excludes nothing
		}
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
		key := tuple(nil, names)
		i, ok := at[key]
		if !ok {
			i = len(ex.groups)
			at[key] = i
			ex.groups = append(ex.groups, exclusionGroup{names: names, tuples: map[string]bool{}})
		}
		ex.groups[i].tuples[tuple(m, names)] = true
	}
	return ex
}

// tuple encodes the values of names in m (each length-prefixed, so any
// bytes may occur); with m nil, the names themselves.
func tuple(m map[string]string, names []string) string {
	var b strings.Builder
	for _, n := range names {
		v := n
		if m != nil {
			v = m[n]
		}
		b.WriteString(strconv.Itoa(len(v)))
		b.WriteByte(':')
		b.WriteString(v)
	}
	return b.String()
}

// keyItems gives each item its key: its value where that is short and made
// of [A-Za-z0-9._=,+@:-], else the value with other characters as _ and cut
// to 64; a key taken already (or empty) becomes the item's number #<n>.
func keyItems(items []Item) {
	seen := make(map[string]bool, len(items))
	for i := range items {
		k := items[i].Value // shared with the value when clean (most are)
		if !cleanKey(k) {
			k = keyChars.ReplaceAllString(k, "_")
		}
		if len(k) > maxKey {
			k = k[:maxKey]
		}
		if k == "" || seen[k] || strings.HasPrefix(k, "#") {
			k = "#" + strconv.Itoa(i+1)
		}
		seen[k] = true
		items[i].Key = k
	}
}

// cleanKey reports whether v has only the characters of a key as
// written ([A-Za-z0-9._=,+@:-], keyChars' complement), without the
// regexp's copy.
func cleanKey(v string) bool {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("._=,+@:-", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// ItemID is the id of the item step of a fan-out step.
func ItemID(stepID, key string) string { return stepID + "[" + key + "]" }

// SplitItemID splits <id>[<key>] into id and key (ok false for other ids).
func SplitItemID(id string) (step, key string, ok bool) {
	i := strings.IndexByte(id, '[')
	if i <= 0 || !strings.HasSuffix(id, "]") {
		return "", "", false
	}
	return id[:i], id[i+1 : len(id)-1], true
}

// itemNeed is a needs: entry naming items of a fan-out step: base[key
// template], resolved per item when the plan is expanded.
type itemNeed struct {
	base, tmpl string
	pos        Pos
}

// expandFanOuts replaces every fan-out step by its item steps followed by
// its join step, which keeps the step's id, so whatever needs the step
// needs all its items.
func (b *builder) expandFanOuts() {
	pl := b.plan
	fanning := false
	for _, s := range pl.Steps {
		if s.FanOut != nil || len(b.itemNeeds[s]) > 0 {
			fanning = true
			break
		}
	}
	if !fanning {
		return
	}
	if _, ok := pl.Context["item"]; ok {
		b.errorf(Pos{Line: 1, Col: 1}, "context: item is reserved in a plan with fan-out steps ({item} is the item)")
	}
	// The ids of all items, for the needs that name items: only a plan
	// that has some needs them (10,000 strings for a fan-out of 10,000).
	var itemIDs map[string]bool
	if len(b.itemNeeds) > 0 {
		itemIDs = map[string]bool{}
		for _, s := range pl.Steps {
			if s.FanOut != nil {
				for _, it := range s.FanOut.Items {
					itemIDs[ItemID(s.ID, it.Key)] = true
				}
			}
		}
	}
	// resolve gives the dependencies of step s (of its item it, or nil):
	// deps with its item-wise needs resolved.
	resolve := func(s *Step, deps []string, it *Item) []string {
		needs := b.itemNeeds[s]
		if len(needs) == 0 {
			return deps
		}
		var vars map[string]string
		if it != nil {
			vars = it.Vars()
		}
		bases := needBases(needs)
		out := make([]string, 0, len(deps)+len(needs))
		have := make(map[string]bool, len(deps)+len(needs))
		for _, d := range deps {
			b.ops++
			if b.plainNeed[s][d] || !bases[d] {
				out = append(out, d)
				have[d] = true
			}
		}
		for _, n := range needs {
			b.ops++
			key, err := subst.Expand(n.tmpl, vars)
			if err != nil {
				b.errorf(n.pos, "step %q: needs %s[%s]: %v", s.ID, n.base, n.tmpl, err)
				continue
			}
			id := ItemID(n.base, key)
			if !itemIDs[id] {
				b.errorf(n.pos, "step %q: needs %s, which is not an item of step %q", s.ID, id, n.base)
				continue
			}
			if !have[id] {
				have[id] = true
				out = append(out, id)
			}
		}
		return out
	}
	var steps []*Step
	for _, ph := range pl.Phases {
		var phSteps []*Step
		for _, s := range ph.Steps {
			if s.FanOut == nil {
				s.Deps = resolve(s, s.Deps, nil)
				phSteps = append(phSteps, s)
				continue
			}
			fo := s.FanOut
			// The join needs the fan-out's own needs, then its items:
			// ItemIDs is that list's tail (joinDeps).
			deps := make([]string, 0, len(s.Deps)+len(fo.Items))
			for i := range fo.Items {
				it := &fo.Items[i]
				c := itemStep(s, it, resolve(s, s.Deps, it))
				deps = append(deps, c.ID)
				phSteps = append(phSteps, c)
			}
			fo.ItemIDs = deps
			s.Join = true
			if fo.Dynamic {
				// Item-wise needs naming its items are rejected (needs),
				// so every item needs what the step needs.
				fo.Needs = resolve(s, s.Deps, nil)
				if fo.Needs == nil {
					fo.Needs = []string{}
				}
				s.Deps = append([]string{}, fo.Needs...)
				phSteps = append(phSteps, s)
				continue
			}
			fo.Needs = ownNeeds(s.Deps, b.itemNeeds[s], b.plainNeed[s], itemIDs)
			s.Deps, fo.ItemIDs = joinDeps(fo.Needs, fo.ItemIDs)
			phSteps = append(phSteps, s)
		}
		ph.Steps = phSteps
		steps = append(steps, phSteps...)
	}
	for i, s := range steps {
		s.Index = i
	}
	pl.Steps = steps
}

// joinDeps are the dependencies of a join step, needs then the item ids
// ids, and ids as the tail of that list: one array of up to 100,000 ids,
// not two. ids' array is reused when it has room for needs in front (the
// capacity expandFanOuts gives it); both slices are full (no append
// writes into the other), and neither is written after.
func joinDeps(needs, ids []string) (deps, items []string) {
	n := len(needs) + len(ids)
	if cap(ids) >= n {
		deps = ids[:n]
		copy(deps[len(needs):], ids) // overlapping: copy moves
		copy(deps, needs)
	} else {
		deps = make([]string, n)
		copy(deps, needs)
		copy(deps[len(needs):], ids)
	}
	return deps[:n:n], deps[len(needs):n:n]
}

// ownNeeds are the dependencies of a fan-out step as a whole: deps less
// the steps named only through item-wise needs (base[{item}]), plus the
// items named by a fixed key (base[key]).
func ownNeeds(deps []string, needs []itemNeed, plain, itemIDs map[string]bool) []string {
	out := []string{}
	bases := needBases(needs)
	have := map[string]bool{}
	for _, d := range deps {
		if plain[d] || !bases[d] {
			out = append(out, d)
			have[d] = true
		}
	}
	for _, n := range needs {
		if id := ItemID(n.base, n.tmpl); itemIDs[id] && !strings.Contains(n.tmpl, "{") && !have[id] {
			have[id] = true
			out = append(out, id)
		}
	}
	return out
}

// needBases is the set of the steps that item-wise needs name. Looked up
// once per dependency: a step that needs each of 100,000 items by name
// must not compare every need with every other.
func needBases(needs []itemNeed) map[string]bool {
	m := make(map[string]bool, 1)
	for _, n := range needs {
		m[n.base] = true
	}
	return m
}

// itemStep is the item step of fan-out step s (its template: its fields
// as written; not yet, or no longer, its join) for item it. It shares the
// template's maps, slices and strings; its name is its id when the
// template's is (one string, not two, for each of up to 100,000 items).
func itemStep(s *Step, it *Item, deps []string) *Step {
	c := *s
	c.ID = ItemID(s.ID, it.Key)
	c.Name = c.ID
	if s.Name != s.ID {
		c.Name = s.Name + "[" + it.Key + "]"
	}
	c.FanOut = nil
	c.Join = false
	c.Item = it
	c.FanOutOf = s.ID
	c.Deps = deps
	return &c
}

// ReadItems reads the items of a dynamic fan-out (foreach: glob: or
// lines:) as the files are now: the paths matching the pattern, sorted,
// relative to the step's dir (dir: substituted with vars; the plan's
// directory when that fails), or the non-blank lines of the file (relative
// to the plan's directory, \r trimmed). It is what the runner calls when the
// step becomes ready.
func (p *Plan) ReadItems(s *Step, vars map[string]string) ([]string, error) {
	fo := s.FanOut
	if fo == nil || !fo.Dynamic {
		return nil, fmt.Errorf("step %q does not fan out over glob:, lines: or from:", s.ID)
	}
	var values []string
	switch fo.Kind {
	case "from":
		v, err := subst.Expand(fo.Source, vars)
		if err != nil {
			return nil, fmt.Errorf("foreach.from: %v", err)
		}
		if values, err = ListItems(v); err != nil {
			return nil, fmt.Errorf("foreach.from: %v", err)
		}
	case "glob":
		dir := p.Dir
		if s.Dir != "" {
			if d, err := subst.Expand(s.Dir, vars); err == nil {
				dir = filepath.Join(p.Dir, filepath.FromSlash(d))
				if filepath.IsAbs(d) {
					dir = d
				}
			}
		}
		pat := filepath.FromSlash(fo.Source)
		abs := pat
		if !filepath.IsAbs(pat) {
			abs = filepath.Join(dir, pat)
		}
		matches, err := filepath.Glob(abs)
		if err != nil {
			return nil, fmt.Errorf("foreach.glob: bad pattern %q: %v", fo.Source, err)
		}
		for _, m := range matches {
			val := m
			if !filepath.IsAbs(pat) {
				if rel, err := filepath.Rel(dir, m); err == nil {
					val = filepath.ToSlash(rel)
				}
			}
			values = append(values, val)
		}
	case "lines":
		path := filepath.FromSlash(fo.Source)
		if !filepath.IsAbs(path) {
			path = filepath.Join(p.Dir, path)
		}
		data, err := readRegular(path, maxLinesFile, func(size int64) error {
			return fmt.Errorf("%s is %d bytes; a lines: file may be at most %d MiB", path, size, maxLinesFile>>20)
		})
		if err == nil && len(data) > maxLinesFile {
			err = fmt.Errorf("%s grew past %d MiB while read", path, maxLinesFile>>20)
		}
		if err != nil {
			return nil, fmt.Errorf("foreach.lines: %v", err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			l = strings.TrimRight(l, "\r")
			if strings.TrimSpace(l) != "" {
				values = append(values, l)
			}
		}
	}
	if len(values) > MaxItems {
		return nil, fmt.Errorf("foreach.%s: %d items; at most %d", fo.Kind, len(values), MaxItems)
	}
	return values, nil
}

// SourceText is how messages name where a dynamic fan-out's items come
// from: glob PATTERN or lines FILE.
func (fo *FanOut) SourceText() string { return fo.Kind + " " + fo.Source }

// SetItems makes values the items of the dynamic fan-out whose join step is
// s: their item steps (keyed as at load, each needing the fan-out's own
// needs) replace the ones it had, right before s in the plan and in its
// phase, and s needs its own needs and them. An item step whose id and
// value stay is kept as it was (the same *Step). Indexes and the step
// index of the plan are updated. It is not safe while another goroutine
// reads the plan's step list.
func (p *Plan) SetItems(s *Step, values []string) {
	p.SetItemsAll(map[*Step][]string{s: values})
}

// SetItemsAll is SetItems for several join steps at once, in one pass over
// the plan's steps (the dry run reads every dynamic fan-out: one pass
// each would be fan-outs × steps).
func (p *Plan) SetItemsAll(sets map[*Step][]string) {
	if len(sets) == 0 {
		return
	}
	news := make(map[*Step][]*Step, len(sets)) // join -> its new item steps
	joins := make(map[string]bool, len(sets))  // their ids
	var gone []string
	var added []*Step
	for s, values := range sets {
		fo := s.FanOut
		items := make([]Item, len(values))
		for i, v := range values {
			items[i] = Item{Value: v, Index: i}
		}
		keyItems(items)
		old := make(map[string]*Step, len(fo.ItemIDs))
		for _, id := range fo.ItemIDs {
			if st := p.Step(id); st != nil && st.FanOutOf == s.ID {
				old[id] = st
			}
		}
		steps := make([]*Step, len(items))
		ids := make([]string, len(items), len(fo.Needs)+len(items))
		needs := fo.Needs[:len(fo.Needs):len(fo.Needs)] // every item's, shared
		for i := range items {
			it := &items[i]
			id := ItemID(s.ID, it.Key)
			if o := old[id]; o != nil && o.Item != nil && o.Item.Value == it.Value {
				steps[i] = o
			} else {
				steps[i] = itemStep(s, it, needs)
			}
			ids[i] = steps[i].ID
		}
		fo.Items = items
		s.Deps, fo.ItemIDs = joinDeps(fo.Needs, ids)
		news[s] = steps
		joins[s.ID] = true
		for id := range old {
			gone = append(gone, id)
		}
		added = append(added, steps...)
	}
	splice := func(list []*Step) []*Step {
		out := make([]*Step, 0, len(list))
		for _, x := range list {
			if x.FanOutOf != "" && joins[x.FanOutOf] {
				continue
			}
			if steps, ok := news[x]; ok {
				out = append(out, steps...)
			}
			out = append(out, x)
		}
		return out
	}
	for _, ph := range p.Phases {
		for _, x := range ph.Steps {
			if _, ok := news[x]; ok {
				ph.Steps = splice(ph.Steps)
				break
			}
		}
	}
	p.Steps = splice(p.Steps)
	for i, x := range p.Steps {
		x.Index = i
	}
	if p.byID != nil {
		for _, id := range gone {
			delete(p.byID, id)
		}
		for _, x := range added {
			p.byID[x.ID] = x
		}
	}
}

// ListItems reads the items of a foreach: {from: ...} value: a JSON array
// (of strings, numbers or booleans, each an item as written) when it starts
// with '[', else one item per non-blank line (\r trimmed).
func ListItems(v string) ([]string, error) {
	if t := strings.TrimSpace(v); strings.HasPrefix(t, "[") {
		var raw []json.RawMessage
		if err := json.Unmarshal([]byte(t), &raw); err != nil {
			return nil, fmt.Errorf("the value starts with [ but is not a JSON array: %v", err)
		}
		out := make([]string, 0, len(raw))
		for i, r := range raw {
			var s string
			switch r[0] {
			case '"':
				if err := json.Unmarshal(r, &s); err != nil {
					return nil, fmt.Errorf("item %d: %v", i+1, err)
				}
			case '{', '[', 'n':
				return nil, fmt.Errorf("item %d is %s; items must be strings, numbers or booleans", i+1, string(r))
			default:
				s = string(r) // a number or a boolean, as written
			}
			out = append(out, s)
		}
		return out, nil
	}
	var out []string
	for _, l := range strings.Split(v, "\n") {
		l = strings.TrimRight(l, "\r")
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out, nil
}

// checkFrom checks a foreach: {from: ...} source of step s: a template
// naming at least one output of a step upstream of s.
func (b *builder) checkFrom(s *Step, where string) {
	fo := s.FanOut
	if fo == nil || fo.from == nil {
		return
	}
	src := fo.from
	fo.from = nil
	if len(OutputNames(src.V)) == 0 {
		b.errorf(src.Pos, "%s: foreach.from: %q names no output; write the output of an upstream step, such as \"{steps.list.outputs.files}\"", where, src.V)
		return
	}
	b.checkTemplate(src, where+": foreach.from", false, refsHandler)
}
