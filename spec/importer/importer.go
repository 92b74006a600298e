// Package importer turns workflow files written for other orchestrators
// (Torc workflow specifications, FABER plan.json files, NoETL playbooks)
// into faber plans.
//
// The result is a yaml.v3 node tree whose nodes carry the line and column
// of the source node they came from, so that spec can validate the
// converted plan and still point its messages at the original file.
// Convert renders that tree as faber plan YAML (faber import).
//
// The package knows nothing of faber's other packages: it emits the plan
// format as text and leaves every check of it to spec.
package importer

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Format is a kind of workflow file.
type Format int

const (
	// FormatNone is a faber plan, or nothing importable.
	FormatNone Format = iota
	// FormatTorc is a Torc workflow specification (top-level jobs: list).
	FormatTorc
	// FormatFaber is a FABER plan.json (top-level workflow: with phases).
	FormatFaber
	// FormatNoetl is a NoETL playbook (kind: Playbook, workflow: a list of
	// steps).
	FormatNoetl
)

// String names the format as faber import takes it.
func (f Format) String() string {
	switch f {
	case FormatTorc:
		return "torc"
	case FormatFaber:
		return "faber"
	case FormatNoetl:
		return "noetl"
	}
	return "none"
}

// Diagnostic is one error or warning, at a position of the source file
// (Line 0: no position).
type Diagnostic struct {
	Line    int
	Col     int
	Message string
}

// Errors is the error of a conversion that failed: every problem found,
// in file order.
type Errors struct {
	File  string
	Diags []Diagnostic
}

// Error returns the first problem as file:line:col: message.
func (e *Errors) Error() string {
	if len(e.Diags) == 0 {
		return e.File + ": cannot convert"
	}
	return format(e.File, e.Diags[0])
}

func format(file string, d Diagnostic) string {
	s := file
	if d.Line > 0 {
		s += fmt.Sprintf(":%d:%d", d.Line, d.Col)
	}
	if s != "" {
		s += ": "
	}
	return s + d.Message
}

// Options tune a conversion.
type Options struct {
	// Agent is the agent argv that FABER prompts and skills run through
	// (default: claude -p), unless the FABER plan names one itself.
	Agent []string
}

// defaultAgent is the agent of converted FABER plans that name none.
func defaultAgent() []string { return []string{"claude", "-p"} }

// Detect says which format data (YAML or JSON) is written in. A faber
// plan (top-level name: with steps: or phases:), anything unparsable and
// anything ambiguous is FormatNone.
func Detect(data []byte) Format {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return FormatNone
	}
	return DetectNode(&doc)
}

// DetectNode is Detect on a parsed document (or its root mapping).
func DetectNode(n *yaml.Node) Format {
	root := rootMap(n)
	if root == nil {
		return FormatNone
	}
	_, name := get(root, "name")
	_, steps := get(root, "steps")
	_, phases := get(root, "phases")
	if name != nil && (steps != nil || phases != nil) {
		return FormatNone // a faber plan
	}
	torc, fab, noetl := isTorc(root), isFaber(root), isNoetl(root)
	switch {
	case torc && !fab && !noetl:
		return FormatTorc
	case fab && !torc && !noetl:
		return FormatFaber
	case noetl && !torc && !fab:
		return FormatNoetl
	}
	return FormatNone
}

// isTorc: a top-level jobs: list whose items are mappings with command.
func isTorc(root *yaml.Node) bool {
	_, jobs := get(root, "jobs")
	if jobs == nil || jobs.Kind != yaml.SequenceNode || len(jobs.Content) == 0 {
		return false
	}
	for _, j := range jobs.Content {
		j = deref(j)
		if j.Kind != yaml.MappingNode {
			return false
		}
		if _, c := get(j, "command"); c == nil {
			return false
		}
	}
	return true
}

// isFaber: a top-level workflow: mapping with phases.
func isFaber(root *yaml.Node) bool {
	_, wf := get(root, "workflow")
	if wf == nil || wf.Kind != yaml.MappingNode {
		return false
	}
	_, ph := get(wf, "phases")
	return ph != nil && (ph.Kind == yaml.MappingNode || ph.Kind == yaml.SequenceNode)
}

// Convert converts data, written in format f, into faber plan YAML. file
// names the source in messages. Warnings are formatted file:line:col:
// message. On failure err is an *Errors.
func Convert(f Format, file string, data []byte, opts Options) (out []byte, warnings []string, err error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, &Errors{File: file, Diags: []Diagnostic{{Message: "cannot parse: " + strings.TrimPrefix(err.Error(), "yaml: ")}}}
	}
	plan, warns, err := ConvertNode(f, file, &doc, opts)
	for _, w := range warns {
		warnings = append(warnings, format(file, w))
	}
	if err != nil {
		return nil, warnings, err
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# faber plan converted from %s (%s) by faber import\n", file, f)
	if err := encodePlan(&buf, plan); err != nil {
		return nil, warnings, &Errors{File: file, Diags: []Diagnostic{{Message: "cannot write the plan: " + err.Error()}}}
	}
	return buf.Bytes(), warnings, nil
}

// encodePlan writes the root mapping as YAML, a top-level pair at a time
// and a block list (steps:) an item at a time. The text is what one Encode
// of the whole plan writes, but yaml.v3's emitter keeps every event of an
// Encode until it ends: one Encode of 100,000 steps held 2 GB.
func encodePlan(buf *bytes.Buffer, plan *yaml.Node) error {
	one := func(n *yaml.Node) ([]byte, error) {
		var b bytes.Buffer
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(n); err != nil {
			return nil, err
		}
		if err := enc.Close(); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	}
	pair := func(k, v *yaml.Node) *yaml.Node {
		return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{k, v}}
	}
	for i := 0; i+1 < len(plan.Content); i += 2 {
		k, v := plan.Content[i], plan.Content[i+1]
		if v.Kind != yaml.SequenceNode || v.Style&yaml.FlowStyle != 0 || len(v.Content) < 2 {
			b, err := one(pair(k, v))
			if err != nil {
				return err
			}
			buf.Write(b)
			continue
		}
		for j, it := range v.Content {
			seq := *v
			seq.Content = []*yaml.Node{it}
			b, err := one(pair(k, &seq))
			if err != nil {
				return err
			}
			if j > 0 { // the key's line was written with the first item
				nl := bytes.IndexByte(b, '\n')
				b = b[nl+1:]
			}
			buf.Write(b)
		}
	}
	return nil
}

// ConvertNode converts a parsed document (or its root mapping) into the
// root mapping of a faber plan. Every node of the result carries the
// position of the source node it came from. On failure err is an *Errors
// and the plan is nil.
func ConvertNode(f Format, file string, doc *yaml.Node, opts Options) (plan *yaml.Node, warnings []Diagnostic, err error) {
	c := &conv{file: file, opts: opts}
	defer func() {
		// Input must never crash faber; a bug here becomes a message.
		if r := recover(); r != nil {
			plan, warnings = nil, c.warns
			err = &Errors{File: file, Diags: []Diagnostic{{Message: fmt.Sprintf("internal error while converting: %v (please report this)", r)}}}
		}
	}()
	root := rootMap(doc)
	if root == nil {
		return nil, nil, &Errors{File: file, Diags: []Diagnostic{{Line: doc.Line, Col: doc.Column, Message: "not a mapping of fields"}}}
	}
	switch f {
	case FormatTorc:
		if !isTorc(root) {
			c.errorf(root, "not a Torc workflow specification: no jobs: list of jobs with a command")
		} else {
			plan = c.torc(root)
		}
	case FormatFaber:
		if !isFaber(root) {
			c.errorf(root, "not a FABER plan: no workflow: with phases")
		} else {
			plan = c.faber(root)
		}
	case FormatNoetl:
		if !isNoetl(root) {
			c.errorf(root, "not a NoETL playbook: no kind: Playbook with a workflow: list of steps")
		} else {
			plan = c.noetl(root)
		}
	default:
		c.errorf(root, "unknown import format")
	}
	sortDiags(c.warns)
	if len(c.errs) > 0 {
		sortDiags(c.errs)
		return nil, c.warns, &Errors{File: file, Diags: c.errs}
	}
	return plan, c.warns, nil
}

// conv holds the state of one conversion.
type conv struct {
	file   string
	opts   Options
	errs   []Diagnostic
	warns  []Diagnostic
	cloned int  // nodes copied so far (YAML alias bombs)
	tooBig bool // the copy limit was reported
	ops    int  // steps of the dependency loops (TestTorcDepsLinear)
}

// maxCloned bounds the nodes copied from the source: aliases could
// otherwise expand a small file into a huge plan.
const maxCloned = 100000

func (c *conv) errorf(at *yaml.Node, f string, a ...any) {
	c.errs = append(c.errs, Diagnostic{Line: at.Line, Col: at.Column, Message: fmt.Sprintf(f, a...)})
}

func (c *conv) warnf(at *yaml.Node, f string, a ...any) {
	c.warns = append(c.warns, Diagnostic{Line: at.Line, Col: at.Column, Message: fmt.Sprintf(f, a...)})
}

func sortDiags(d []Diagnostic) {
	sort.SliceStable(d, func(i, j int) bool {
		if d[i].Line != d[j].Line {
			return d[i].Line < d[j].Line
		}
		return d[i].Col < d[j].Col
	})
}

// ---- reading nodes ----

func rootMap(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		n = n.Content[0]
	}
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	return n
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// get returns the key and value nodes of key in mapping m (nil, nil when
// absent or null).
func get(m *yaml.Node, key string) (k, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			v := deref(m.Content[i+1])
			if isNull(v) {
				return nil, nil
			}
			return m.Content[i], v
		}
	}
	return nil, nil
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// field is one key/value of a source mapping.
type field struct {
	key  string
	k, v *yaml.Node
}

// fields returns the non-null pairs of mapping m in file order, reporting
// duplicate keys and non-mappings (where names m in messages).
func (c *conv) fields(m *yaml.Node, where string) []field {
	if m.Kind != yaml.MappingNode {
		c.errorf(m, "%s: must be a mapping, not %s", where, kindName(m))
		return nil
	}
	var out []field
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], deref(m.Content[i+1])
		if seen[k.Value] {
			c.errorf(k, "%s: duplicate key %q", where, k.Value)
			continue
		}
		seen[k.Value] = true
		if isNull(v) {
			continue
		}
		out = append(out, field{key: k.Value, k: k, v: v})
	}
	return out
}

// str returns a scalar's text, or reports that it is not one.
func (c *conv) str(n *yaml.Node, where string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		c.errorf(n, "%s: must be a string, not %s", where, kindName(n))
		return "", false
	}
	return n.Value, true
}

// strList returns a list of scalars (a single scalar counts as a list of one).
func (c *conv) strList(n *yaml.Node, where string) []*yaml.Node {
	if n.Kind == yaml.ScalarNode {
		return []*yaml.Node{n}
	}
	if n.Kind != yaml.SequenceNode {
		c.errorf(n, "%s: must be a list of strings, not %s", where, kindName(n))
		return nil
	}
	var out []*yaml.Node
	for _, it := range n.Content {
		it = deref(it)
		if it.Kind != yaml.ScalarNode || isNull(it) {
			c.errorf(it, "%s: must be a list of strings, not a list holding %s", where, kindName(it))
			continue
		}
		out = append(out, it)
	}
	return out
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "empty"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "an alias"
}

// ---- writing nodes ----

// newMap returns an empty block mapping at the position of at.
func newMap(at *yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: at.Line, Column: at.Column}
}

// newSeq returns an empty sequence at the position of at.
func newSeq(at *yaml.Node, flow bool) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: at.Line, Column: at.Column}
	if flow {
		n.Style = yaml.FlowStyle
	}
	return n
}

// newStr returns a string scalar at the position of at; multi-line text
// is written as a literal block.
func newStr(at *yaml.Node, v string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v, Line: at.Line, Column: at.Column}
	if strings.Contains(strings.TrimRight(v, "\n"), "\n") && !strings.ContainsAny(v, "\t\r") && !hasTrailingSpace(v) {
		n.Style = yaml.LiteralStyle
	}
	return n
}

func hasTrailingSpace(v string) bool {
	for _, l := range strings.Split(v, "\n") {
		if strings.HasSuffix(l, " ") {
			return true
		}
	}
	return false
}

// newScalar returns a scalar whose tag is what its text resolves to
// (numbers stay numbers, everything else a string).
func newScalar(at *yaml.Node, v string) *yaml.Node {
	n := newStr(at, v)
	var probe yaml.Node
	if err := yaml.Unmarshal([]byte(v), &probe); err == nil && len(probe.Content) == 1 {
		if t := probe.Content[0].ShortTag(); probe.Content[0].Kind == yaml.ScalarNode && (t == "!!int" || t == "!!float") && probe.Content[0].Value == v {
			n.Tag = t
		}
	}
	return n
}

// set appends key: v to mapping m; the key sits at keyAt (or at v).
func set(m *yaml.Node, keyAt *yaml.Node, key string, v *yaml.Node) {
	if keyAt == nil {
		keyAt = v
	}
	k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key, Line: keyAt.Line, Column: keyAt.Column}
	m.Content = append(m.Content, k, v)
}

// clone copies a subtree (aliases resolved) with its positions and plain
// styles, so that JSON input comes out as ordinary YAML.
func (c *conv) clone(n *yaml.Node, depth int) *yaml.Node {
	n = deref(n)
	c.cloned++
	if depth > 100 || c.cloned > maxCloned {
		if !c.tooBig {
			c.tooBig = true
			c.errorf(n, "too deeply nested, or expands too many YAML aliases")
		}
		return newStr(n, "")
	}
	out := &yaml.Node{Kind: n.Kind, Tag: n.Tag, Value: n.Value, Line: n.Line, Column: n.Column}
	if n.Kind == yaml.ScalarNode {
		if n.ShortTag() == "!!str" {
			out = newStr(n, n.Value)
		}
		return out
	}
	if n.Kind == yaml.SequenceNode && allScalars(n) {
		out.Style = yaml.FlowStyle
	}
	for _, k := range n.Content {
		out.Content = append(out.Content, c.clone(k, depth+1))
	}
	return out
}

func allScalars(n *yaml.Node) bool {
	for _, c := range n.Content {
		if c = deref(c); c.Kind != yaml.ScalarNode || strings.Contains(c.Value, "\n") {
			return false
		}
	}
	return true
}

// ---- ids ----

// sanitizeID turns a name into a faber step id ([a-z0-9][a-z0-9._-]*):
// lower case, every other character (runs of them) becomes '-', leading
// and trailing separators go. Deterministic; "" when nothing is left.
func sanitizeID(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		ok := (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '.' || r == '_' || r == '-'
		if !ok {
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = true
			continue
		}
		dash = false
		b.WriteRune(r)
	}
	return strings.Trim(b.String(), "-._")
}
