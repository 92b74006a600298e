package spec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/faber-run/faber/spec/importer"
)

// Options controls how a plan is loaded.
type Options struct {
	Sets    map[string]string // --set KEY=VALUE overrides (may also add new context keys)
	SetKeys []string          // order of --set on the command line
	// SetFrom names how each key of Sets was given, for messages: "--set"
	// (also when absent), "--set-file" or "FABER_SET_<KEY>".
	SetFrom map[string]string
	Strict  bool   // an invalid on_failure value is an error, not a warning
	GOOS    string // "" = runtime.GOOS (the default shell is cmd on windows)
	// NoProgramChecks skips checking that the plan's programs exist: for
	// what reads a stored plan and runs nothing (classify, reset, attach),
	// so that a script removed after a run does not lock the run away.
	NoProgramChecks bool
	// ImportFormat reads the plan file as this format (faber import
	// torc|faber) instead of detecting it; Import tunes its conversion.
	ImportFormat importer.Format
	Import       importer.Options

	// setsFrom names where Sets come from in messages: "--set" when
	// empty, "context" for a sub-plan's (its plan: step's context:).
	setsFrom string

	// stack holds the absolute paths of the plans that include this one
	// through `plan:` steps, outermost first, to reject plans that include
	// themselves.
	stack []string
}

// Invalid is the error returned for a plan that cannot be used. It lists every
// error found (sorted by position) and the warnings found along the way.
type Invalid struct {
	Errors   []Diagnostic
	Warnings []Diagnostic
}

// Error returns the first error as "file:line:col: message".
func (e *Invalid) Error() string {
	if len(e.Errors) == 0 {
		return "invalid plan"
	}
	return e.Errors[0].Error()
}

// Load reads, parses and validates the plan at path. On failure the error is
// an *Invalid.
func Load(path string, opts Options) (*Plan, error) {
	data, err := ReadPlanFile(path)
	var inv *Invalid
	if errors.As(err, &inv) {
		return nil, err
	}
	if err != nil {
		msg := err.Error()
		var pe *fs.PathError
		if errors.As(err, &pe) {
			msg = pe.Err.Error()
		}
		return nil, &Invalid{Errors: []Diagnostic{{File: path, Message: "cannot read plan: " + msg}}}
	}
	return Parse(path, data, opts)
}

// MaxPlanSize is the largest plan file faber takes, in bytes: every run
// stores a copy of its plan (state.MaxPlanSize is what one run's store can
// hold). 16 MiB is a plan of about 400,000 one-line steps.
const MaxPlanSize = 16 << 20

// Parse parses and validates a plan already read into data. file names the
// plan in messages and locates the plan directory (relative paths, the
// .faber/commands directory). On failure the error is an *Invalid.
func Parse(file string, data []byte, opts Options) (plan *Plan, err error) {
	p := &parser{file: file, data: data, opts: opts, tables: map[reflect.Type]*fieldTable{}}
	return p.parse()
}

func (p *parser) parse() (plan *Plan, err error) {
	data := p.data
	if len(data) > MaxPlanSize {
		p.errorf(Pos{}, "%s", sizeMessage(int64(len(data))))
		return nil, p.invalid()
	}
	defer func() {
		// A bug here must not crash faber with a stack trace (SPEC §1); the
		// fuzz test fails on this message.
		if r := recover(); r != nil {
			p.errorf(Pos{}, "internal error while reading the plan: %v (please report this)", r)
			plan, err = nil, p.invalid()
		}
	}()
	root := p.parseYAML()
	if root == nil {
		return nil, p.invalid()
	}
	if root = p.imported(root); root == nil {
		return nil, p.invalid()
	}
	var raw rawPlan
	p.decodeObject(reflect.ValueOf(&raw).Elem(), root, "")
	plan = p.build(&raw)
	if len(p.errs) > 0 {
		return nil, p.invalid()
	}
	plan.Warnings = p.warns
	return plan, nil
}

// imported returns the plan root itself, or, for a Torc workflow or a
// FABER plan.json, the faber plan it converts to (nil after recording the
// conversion's errors). The converted nodes keep the positions of the
// source, so every later message points into the file as written.
func (p *parser) imported(root *yaml.Node) *yaml.Node {
	f := p.opts.ImportFormat
	if f == importer.FormatNone {
		f = importer.DetectNode(root)
	}
	if f == importer.FormatNone {
		return root
	}
	plan, warns, err := importer.ConvertNode(f, p.file, root, p.opts.Import)
	for _, w := range warns {
		p.warnf(Pos{Line: w.Line, Col: w.Col}, "%s", w.Message)
	}
	if err != nil {
		var ie *importer.Errors
		if errors.As(err, &ie) {
			for _, d := range ie.Diags {
				p.errorf(Pos{Line: d.Line, Col: d.Col}, "%s", d.Message)
			}
		} else {
			p.errorf(Pos{}, "%v", err)
		}
		return nil
	}
	p.budget = 16*countNodes(plan) + 100000
	return plan
}

// parser holds the state of one Parse call.
type parser struct {
	file       string
	data       []byte
	opts       Options
	lines      [][]byte // data split into lines, computed on first use
	lineStarts []int    // offset of each line, computed on first use

	errs  []Diagnostic
	warns []Diagnostic

	tables  map[reflect.Type]*fieldTable
	budget  int                 // nodes that may still be decoded (alias bombs)
	aborted bool                // budget exhausted: stop decoding
	active  map[*yaml.Node]bool // alias targets being decoded (self-containing anchors)

	subPlans   map[string]error  // sub-plan validation results by path and context keys
	childNames map[string]string // sub-plan names by the same key

	// ops counts the steps of the dependency loops (resolveDeps, needs,
	// expandFanOuts), for TestNeedsLinear: they must grow linearly.
	ops int
}

func (p *parser) errorf(pos Pos, format string, args ...any) {
	p.errs = append(p.errs, Diagnostic{File: p.file, Line: pos.Line, Col: pos.Col, Message: fmt.Sprintf(format, args...)})
}

func (p *parser) warnf(pos Pos, format string, args ...any) {
	p.warns = append(p.warns, Diagnostic{File: p.file, Line: pos.Line, Col: pos.Col, Message: fmt.Sprintf(format, args...)})
}

func (p *parser) invalid() *Invalid {
	sortDiags(p.errs)
	sortDiags(p.warns)
	return &Invalid{Errors: p.errs, Warnings: p.warns}
}

func sortDiags(d []Diagnostic) {
	sort.SliceStable(d, func(i, j int) bool {
		if d[i].Line != d[j].Line {
			return d[i].Line < d[j].Line
		}
		return d[i].Col < d[j].Col
	})
}

var yamlLineErr = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseYAML parses the single YAML (or JSON) document of the plan and returns
// its root node, or nil after recording an error.
func (p *parser) parseYAML() (root *yaml.Node) {
	defer func() {
		// yaml.v3 is not supposed to panic, but a plan must never crash faber.
		if r := recover(); r != nil {
			p.errorf(Pos{}, "cannot parse plan: %v", r)
			root = nil
		}
	}()
	if len(bytes.TrimSpace(withoutBOM(p.data))) == 0 {
		p.errorf(Pos{}, "plan is empty")
		return nil
	}
	if strings.EqualFold(filepath.Ext(p.file), ".json") {
		return p.parseJSON()
	}
	dec := yaml.NewDecoder(bytes.NewReader(p.data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.errorf(Pos{}, "plan is empty")
		} else {
			p.yamlError(err)
		}
		return nil
	}
	for {
		// Further documents are an error, unless empty (a trailing ---).
		var extra yaml.Node
		err := dec.Decode(&extra)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			p.yamlError(err)
			return nil
		}
		if len(extra.Content) > 0 && !(extra.Content[0].Kind == yaml.ScalarNode && extra.Content[0].ShortTag() == "!!null") {
			p.errorf(nodePos(extra.Content[0]), "plan has more than one YAML document")
			return nil
		}
	}
	return p.rootOf(&doc)
}

// rootOf checks the document node of a plan and returns its mapping.
func (p *parser) rootOf(doc *yaml.Node) *yaml.Node {
	n := doc
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			p.errorf(Pos{}, "plan is empty")
			return nil
		}
		n = n.Content[0]
	}
	n = deref(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		p.errorf(nodePos(n), "plan is empty")
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.errorf(nodePos(n), "plan must be a mapping of fields (name, steps, ...), not %s", kindName(n))
		return nil
	}
	// Budget for alias expansion: a plan decodes each of its nodes a few times
	// at most; an alias bomb would decode millions.
	p.budget = 16*countNodes(doc) + 100000
	p.active = map[*yaml.Node]bool{}
	return n
}

// withoutBOM returns data without a UTF-8 byte order mark.
func withoutBOM(b []byte) []byte {
	return bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
}

// yamlError records a YAML syntax error. yaml.v3 reports the line where the
// enclosing structure starts (0-based for parser errors), or no line at all,
// so the line is found again as the first line at which a prefix of the
// plan fails with the same message.
func (p *parser) yamlError(err error) {
	msg := yamlMessage(err)
	line := p.locateYAMLError(msg)
	if line == 0 {
		if m := yamlLineErr.FindStringSubmatch(err.Error()); m != nil {
			line, _ = strconv.Atoi(m[1])
		}
	}
	hint, col := yamlHint(msg, p.lineText(line)), 0
	if line > 0 && hint != "" {
		// The errors with a hint are about indentation or an open
		// structure: the column is where this line's content starts.
		col = p.lineIndentEnd(line)
		if t := p.lineText(line); strings.Contains(msg, "cannot start any token") && !strings.Contains(t, "\t") {
			if i := strings.IndexAny(t, "@`%"); i >= 0 {
				col = i + 1 // the character itself
			}
		}
	}
	p.errorf(Pos{Line: line, Col: col}, "%s%s", msg, hint)
}

// lineText is line n (1-based) of the plan, without its line ending.
func (p *parser) lineText(n int) string {
	if n <= 0 {
		return ""
	}
	lines := bytes.SplitN(p.data, []byte("\n"), n+1)
	if len(lines) < n {
		return ""
	}
	return strings.TrimRight(string(lines[n-1]), "\r")
}

// lineIndentEnd is the column (1-based, in bytes) where a YAML syntax error
// on line n is best looked for: a tab in the indentation, else the first
// character after it.
func (p *parser) lineIndentEnd(n int) int {
	t := p.lineText(n)
	for i := 0; i < len(t); i++ {
		if t[i] == '\t' || t[i] != ' ' {
			return i + 1
		}
	}
	return 1
}

// yamlHint says what usually causes a yaml.v3 syntax error, as
// " (hint: ...)", or "".
func yamlHint(msg, line string) string {
	if strings.Contains(msg, "cannot start any token") && strings.Contains(line, "\t") {
		return " (hint: YAML indents with spaces, not tabs)"
	}
	for _, h := range yamlHints {
		for _, m := range h.msgs {
			if strings.Contains(msg, m) {
				return " (hint: " + h.hint + ")"
			}
		}
	}
	return ""
}

// yamlHints are the usual causes of yaml.v3's syntax errors, by message.
var yamlHints = []struct {
	msgs []string
	hint string
}{
	{[]string{"expected '-' indicator", "did not find expected key", "block sequence entries are not allowed"},
		"check this line's indentation against the lines above: keys of one mapping line up, list items start with '- '"},
	{[]string{"mapping values are not allowed"}, "a value that holds ': ' needs quotes, or this line is indented too far"},
	{[]string{"could not find expected ':'"}, "a key needs ': ' after it; a value on its own line belongs to the key above"},
	{[]string{"unexpected end of stream", "did not find expected node content", "did not find expected ',' or"},
		"is a quote or a bracket left open above? values starting with {, [, *, &, !, |, >, %, @ or ` need quotes"},
	{[]string{"cannot start any token"}, "values starting with @, ` or % need quotes"},
}

// yamlMessage returns a yaml.v3 error without its "yaml: line N: " prefix.
func yamlMessage(err error) string {
	msg := err.Error()
	if m := yamlLineErr.FindStringSubmatch(msg); m != nil {
		return m[2]
	}
	return strings.TrimPrefix(msg, "yaml: ")
}

// locateYAMLError returns the first line L such that the first L lines of
// the plan fail to parse with message msg, or 0. Plans are scanned line by
// line up to 200 lines, and by bisection beyond.
func (p *parser) locateYAMLError(msg string) int {
	var ends []int // offset just past each line
	for i, c := range p.data {
		if c == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(p.data) {
		ends = append(ends, len(p.data))
	}
	fails := func(k int) bool {
		err := parseAllYAML(p.data[:ends[k-1]])
		return err != nil && yamlMessage(err) == msg
	}
	n := len(ends)
	if n <= 200 {
		for k := 1; k <= n; k++ {
			if fails(k) {
				return k
			}
		}
		return 0
	}
	lo, hi := 1, n
	if !fails(hi) {
		return 0
	}
	for lo < hi {
		mid := (lo + hi) / 2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// parseAllYAML parses every document of data and returns the first error.
func parseAllYAML(data []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// parseJSON parses a .json plan into the same node tree as YAML, with
// positions, so that everything after parsing is shared.
func (p *parser) parseJSON() *yaml.Node {
	data := p.data
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		// encoding/json rejects a byte order mark; blank it, keeping offsets.
		data = append([]byte("   "), data[3:]...)
	}
	j := &jsonParser{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	j.dec.UseNumber()
	root, err := j.value(0)
	if err == nil {
		if _, extra := j.dec.Token(); !errors.Is(extra, io.EOF) {
			off := j.skip(int(j.dec.InputOffset()))
			err = &jsonError{off: off, msg: "unexpected data after the plan"}
		}
	}
	if err != nil {
		var se *json.SyntaxError
		var je *jsonError
		switch {
		case errors.As(err, &je):
			p.errorf(p.offsetPos(je.off), "%s", je.msg)
		case errors.As(err, &se):
			p.errorf(p.offsetPos(int(se.Offset)), "%s", se.Error())
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
			p.errorf(p.offsetPos(len(p.data)), "unexpected end of JSON input")
		default:
			p.errorf(Pos{}, "%v", err)
		}
		return nil
	}
	p.fixOffsets(root)
	return p.rootOf(root)
}

// fixOffsets turns the byte offsets that parseJSON keeps in Node.Line into
// line and column.
func (p *parser) fixOffsets(n *yaml.Node) {
	pos := p.offsetPos(n.Line)
	n.Line, n.Column = pos.Line, pos.Col
	for _, c := range n.Content {
		p.fixOffsets(c)
	}
}

// offsetPos returns the line and column (in characters, 1-based) of a byte
// offset in the plan.
func (p *parser) offsetPos(off int) Pos {
	if p.lineStarts == nil {
		p.lineStarts = []int{0}
		for i, c := range p.data {
			if c == '\n' {
				p.lineStarts = append(p.lineStarts, i+1)
			}
		}
	}
	off = max(0, min(off, len(p.data)))
	i := sort.SearchInts(p.lineStarts, off+1) - 1
	return Pos{Line: i + 1, Col: utf8.RuneCount(p.data[p.lineStarts[i]:off]) + 1}
}

type jsonError struct {
	off int
	msg string
}

func (e *jsonError) Error() string { return e.msg }

type jsonParser struct {
	data []byte
	dec  *json.Decoder
}

// skip returns the offset of the next token at or after off.
func (j *jsonParser) skip(off int) int {
	for off < len(j.data) {
		switch j.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}

// value reads one JSON value as a node. Node positions are byte offsets
// here; offsetPos turns them into line:col once parsing is done.
func (j *jsonParser) value(depth int) (*yaml.Node, error) {
	start := j.skip(int(j.dec.InputOffset()))
	if depth > 1000 {
		return nil, &jsonError{off: start, msg: "JSON nested too deeply"}
	}
	tok, err := j.dec.Token()
	if err != nil {
		return nil, err
	}
	n := &yaml.Node{Line: start} // Line holds the offset until fixed up
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			n.Kind, n.Tag, n.Style = yaml.MappingNode, "!!map", yaml.FlowStyle
			for j.dec.More() {
				k, err := j.value(depth + 1)
				if err != nil {
					return nil, err
				}
				val, err := j.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, k, val)
			}
		case '[':
			n.Kind, n.Tag, n.Style = yaml.SequenceNode, "!!seq", yaml.FlowStyle
			for j.dec.More() {
				val, err := j.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, val)
			}
		default:
			return nil, &jsonError{off: start, msg: fmt.Sprintf("unexpected %q", string(v))}
		}
		if _, err := j.dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
	case string:
		n.Kind, n.Tag, n.Value, n.Style = yaml.ScalarNode, "!!str", v, yaml.DoubleQuotedStyle
	case json.Number:
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!int", v.String()
		if strings.ContainsAny(n.Value, ".eE") {
			n.Tag = "!!float"
		}
	case bool:
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!bool", strconv.FormatBool(v)
	case nil:
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!null", "null"
	}
	return n, nil
}

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

// ---- the raw structures: what a plan file may contain ----
//
// These structs are the single definition of the plan format: the decoder
// walks them by reflection (every key a struct accepts is its `yaml` tag) and
// Schema generates the JSON Schema from them, so the two cannot drift.
//
// Tags:
//   yaml:"key"         the accepted key; yaml:",inline" flattens an embedded struct
//   doc:"..."          description in the JSON Schema
//   required:"true"    the key must be present
//   ident:"step"       this scalar names the object in messages: step "deploy"
//   label:"end step"   messages about this object say label instead of its path
//   enum:"a,b"         allowed values of a string
//   pattern:"^re$"     a string must match; on a map, every key must match

// rawMeta is embedded in every raw object: where it is and how to name it.
type rawMeta struct {
	Pos   Pos
	Where string
	// keys are the keys present with their positions: a slice, not a map,
	// as objects have few keys and a plan may have 100,000 of them.
	keys []keyAt
}

type keyAt struct {
	key string
	pos Pos
}

func (m *rawMeta) meta() *rawMeta { return m }

func (m *rawMeta) find(key string) (Pos, bool) {
	for _, k := range m.keys {
		if k.key == key {
			return k.pos, true
		}
	}
	return Pos{}, false
}

// has reports whether key was written in the object.
func (m *rawMeta) has(key string) bool {
	_, ok := m.find(key)
	return ok
}

// keyPos returns the position of key, or of the object when the key is absent.
func (m *rawMeta) keyPos(key string) Pos {
	if p, ok := m.find(key); ok {
		return p
	}
	return m.Pos
}

type rawPlan struct {
	rawMeta
	Name             str               `yaml:"name" required:"true" doc:"Name of the plan; part of every run id."`
	Description      str               `yaml:"description" doc:"What the plan does."`
	Context          omap              `yaml:"context" pattern:"^[a-z_][a-z0-9_]*$" doc:"Variables for {name} substitution; --set overrides and adds. Values are scalars, kept as written."`
	Secrets          list[str]         `yaml:"secrets" doc:"Context variables (from context: or --set) whose values are secret: programs get them, everything faber records or shows masks them as ***."`
	Jobs             intv              `yaml:"jobs" doc:"Maximum number of steps running at once (default: CPU count; --jobs overrides)." min:"1"`
	Shell            str               `yaml:"shell" doc:"Shell for run scripts, run as <shell> -c <script> (default sh; cmd on Windows)."`
	Env              omap              `yaml:"env" doc:"Environment variables added to every step; values may use {name} substitution."`
	UsePendingFailed boolv             `yaml:"use_pending_failed" doc:"A failure no rule matched, on a step without explicit on_failure, becomes pending_failed (awaiting classification)."`
	StopMode         str               `yaml:"stop_mode" enum:"drain,cancel" doc:"On a stop: drain lets running steps finish (default); cancel terminates them."`
	Agent            words             `yaml:"agent" doc:"Agent command (argv, or a string split as shell words) that runs /commands without a registry entry; the slash-command line is its last argument."`
	Commands         omap              `yaml:"commands" pattern:"^/[A-Za-z0-9][A-Za-z0-9._:/-]*$" doc:"Slash-command registry: /name -> command line; the /command's arguments are appended."`
	FailureHandlers  list[*rawHandler] `yaml:"failure_handlers" doc:"Named lists of exit-code rules that steps refer to with failure_handler."`
	HandlerTimeout   durv              `yaml:"handler_timeout" doc:"Timeout of on_failure handlers (Go duration, default 30m)."`
	KillGrace        durv              `yaml:"kill_grace" doc:"Time between SIGTERM and SIGKILL when a step is stopped (Go duration, default 10s)."`
	Memory           sizev             `yaml:"memory" doc:"Default memory limit of every step's attempt (512MiB, 2GiB; binary units): a cgroup locally where faber can make one, --mem on Slurm."`
	CPUs             intv              `yaml:"cpus" min:"1" doc:"Default CPU limit of every step's attempt: a cgroup cpu.max locally where faber can make one, --cpus-per-task on Slurm."`
	Executor         str               `yaml:"executor" enum:"local,slurm,sge" doc:"Where steps run: local (default), slurm or sge (Grid Engine)."`
	Slurm            *rawSlurm         `yaml:"slurm" doc:"Slurm settings for steps run with executor: slurm."`
	Sge              *rawSge           `yaml:"sge" doc:"Grid Engine settings for steps run with executor: sge."`
	Phases           list[*rawPhase]   `yaml:"phases" doc:"Named groups of steps, run in order (use either phases or steps)."`
	Steps            stepList          `yaml:"steps" doc:"The steps of a single phase named main (use either phases or steps)."`
	End              *rawEnd           `yaml:"end" label:"end step" doc:"A step run at the end of every session that was not interrupted, whatever happened."`
}

type rawPhase struct {
	rawMeta
	Name     str      `yaml:"name" required:"true" ident:"phase" doc:"Name of the phase."`
	Parallel boolv    `yaml:"parallel" doc:"Steps of a parallel phase all depend on the previous phase only; otherwise each step needs the previous one."`
	Steps    stepList `yaml:"steps" required:"true" doc:"The steps of the phase."`
}

// rawStepBody holds the fields shared by steps and the end step.
type rawStepBody struct {
	Name           str                `yaml:"name" doc:"Display name (default: the id)."`
	Description    str                `yaml:"description" doc:"What the step does."`
	Run            str                `yaml:"run" doc:"Shell script run as <shell> -c, or a /command line; {name} is substituted safely."`
	Prompt         str                `yaml:"prompt" doc:"Alias of run (for plans written for agent orchestrators)."`
	Timeout        durv               `yaml:"timeout" doc:"Time limit of one attempt (Go duration); a timeout exits 124."`
	Env            omap               `yaml:"env" doc:"Environment variables of the step; values may use {name} substitution."`
	Dir            str                `yaml:"dir" doc:"Working directory, relative to the plan file's directory."`
	Shell          str                `yaml:"shell" doc:"Shell for this step's run script (overrides the plan's)."`
	FailureHandler str                `yaml:"failure_handler" doc:"Name of the failure handler whose exit-code rules apply."`
	ResultHandling *rawResultHandling `yaml:"result_handling" doc:"What happens when the rules decline a failure."`
	HandlerTimeout durv               `yaml:"handler_timeout" doc:"Timeout of this step's on_failure handler (Go duration)."`
	KillGrace      durv               `yaml:"kill_grace" doc:"Time between SIGTERM and SIGKILL for this step (Go duration)."`
	Memory         sizev              `yaml:"memory" doc:"Memory limit of one attempt (512MiB, 2GiB; binary units), overriding the plan's: a cgroup locally where faber can make one, --mem on Slurm."`
	CPUs           intv               `yaml:"cpus" min:"1" doc:"CPU limit of one attempt, overriding the plan's: a cgroup cpu.max locally where faber can make one, --cpus-per-task on Slurm."`
	Executor       str                `yaml:"executor" enum:"local,slurm,sge" doc:"Where this step runs: local, slurm or sge (overrides the plan's)."`
	Slurm          *rawSlurm          `yaml:"slurm" doc:"Slurm settings of this step (merged over the plan's)."`
	Sge            *rawSge            `yaml:"sge" doc:"Grid Engine settings of this step (merged over the plan's)."`
}

type rawStep struct {
	rawMeta
	ID          str `yaml:"id" required:"true" ident:"step" pattern:"^[a-z0-9][a-z0-9._-]*$" doc:"Unique id of the step."`
	rawStepBody `yaml:",inline"`
	Needs       list[str] `yaml:"needs" doc:"Ids of the steps this one depends on; replaces the implicit dependencies (needs: [] for none)."`
	Plan        str       `yaml:"plan" doc:"A child plan file to run as a linked child run (instead of run), relative to this plan's directory."`
	Context     omap      `yaml:"context" pattern:"^[a-z_][a-z0-9_]*$" doc:"Context passed to the child plan (with plan:); values may use {name} substitution."`
	Foreach     fanNode   `yaml:"foreach" doc:"Fan out over a list (scalars, or mappings whose fields are {item.<name>}), or {range: [from, to, step]}, {glob: pattern}, {lines: file}: one step <id>[<key>] per item, {item} its value."`
	Matrix      fanNode   `yaml:"matrix" doc:"Fan out over every combination of name: [values] (exclude: a list of combinations to leave out); {item.<name>} is a value, {item} the combination."`
	MaxParallel intv      `yaml:"max_parallel" min:"1" doc:"At most this many items of the fan-out run at once (within jobs)."`
	rawCache    `yaml:",inline"`
}

type rawEnd struct {
	rawMeta
	rawStepBody `yaml:",inline"`
}

type rawResultHandling struct {
	rawMeta
	OnFailure  onFailure `yaml:"on_failure" doc:"stop (default), continue, retry, a /command line, or a structured handler {command, args, ...}."`
	MaxRetries intv      `yaml:"max_retries" min:"0" doc:"Retries granted by on_failure retry or a handler command (default 1)."`
}

type rawStructured struct {
	rawMeta
	Command        str   `yaml:"command" doc:"The /command (or absolute program path) to run."`
	Args           args  `yaml:"args" doc:"Arguments: --key value; true gives --key alone, false omits it."`
	RetryOnSuccess boolv `yaml:"retry_on_success" doc:"Retry the step when the handler succeeds (default true)."`
	MaxRetries     intv  `yaml:"max_retries" min:"0" doc:"How many times the handler may run and retry the step (default 1)."`
	HandlerTimeout durv  `yaml:"handler_timeout" doc:"Timeout of the handler (Go duration, default 30m)."`
}

type rawHandler struct {
	rawMeta
	Name  str            `yaml:"name" required:"true" ident:"failure handler" doc:"Name that steps refer to with failure_handler."`
	Rules list[*rawRule] `yaml:"rules" required:"true" doc:"Exit-code rules; the first rule listing the exit code wins, else the first catch-all."`
}

type rawRule struct {
	rawMeta
	ExitCodes      list[intv] `yaml:"exit_codes" doc:"Exit codes this rule matches (124 = timeout, 128+N = signal N)."`
	MatchAll       boolv      `yaml:"match_all_exit_codes" doc:"Match any failure (catch-all)."`
	StderrMatches  str        `yaml:"stderr_matches" doc:"RE2 regexp that the last 64 KiB of stderr must also match."`
	RecoveryScript str        `yaml:"recovery_script" doc:"Shell script run before the retry; may use {error}, {exit_code}, {stdout_file}, {stderr_file}."`
	MaxRetries     intv       `yaml:"max_retries" min:"0" doc:"Retries this rule grants a step per run session (default 3; 0 = never retry)."`
	Delay          durv       `yaml:"delay" doc:"Wait before the retry (Go duration)."`
	Backoff        str        `yaml:"backoff" enum:"fixed,exponential" doc:"fixed (default) or exponential (the delay doubles on each retry)."`
	MaxDelay       durv       `yaml:"max_delay" doc:"Cap of an exponential delay (Go duration)."`
	On             list[str]  `yaml:"on" doc:"Causes this rule matches besides exit_codes: oom (killed for memory), timeout (a time limit)."`
	MemoryFactor   factorv    `yaml:"memory_factor" doc:"The retry gets the failed attempt's memory limit times this (1 to 100)."`
	MaxMemory      sizev      `yaml:"max_memory" doc:"Cap of the memory that memory_factor grows to."`
	TimeoutFactor  factorv    `yaml:"timeout_factor" doc:"The retry gets the failed attempt's timeout times this (1 to 100)."`
	MaxTimeout     durv       `yaml:"max_timeout" doc:"Cap of the timeout that timeout_factor grows to (Go duration)."`
}

type rawSlurm struct {
	rawMeta
	Partition str   `yaml:"partition" doc:"Slurm partition (-p)."`
	Account   str   `yaml:"account" doc:"Slurm account (-A)."`
	QOS       str   `yaml:"qos" doc:"Slurm quality of service."`
	CPUs      intv  `yaml:"cpus" min:"1" doc:"CPUs per task."`
	Mem       str   `yaml:"mem" doc:"Memory, as Slurm writes it (4G)."`
	GPUs      str   `yaml:"gpus" doc:"GPUs, as Slurm writes it (2, or a100:2)."`
	Time      str   `yaml:"time" doc:"Slurm time limit (1:00:00)."`
	ExtraArgs words `yaml:"extra_args" doc:"Extra srun arguments (a list, or a string split as shell words)."`
	Mode      str   `yaml:"mode" enum:"batch,blocking" doc:"How attempts run: batch (sbatch: jobs are submitted, polled, and outlive faber) or blocking (one srun per attempt, for interactive use)."`
}

type rawSge struct {
	rawMeta
	PE             str   `yaml:"pe" doc:"Parallel environment that grants cpus (qsub -pe PE N; e.g. smp). Without it cpus is not requested."`
	MemoryResource str   `yaml:"memory_resource" doc:"Resource that memory requests (qsub -l RESOURCE=bytes; default h_vmem)."`
	MemoryPerSlot  boolv `yaml:"memory_per_slot" doc:"Divide memory by cpus (with pe), for a resource Grid Engine counts per slot such as h_vmem: the job as a whole then gets memory."`
	Queue          str   `yaml:"queue" doc:"Grid Engine queue (-q)."`
	Project        str   `yaml:"project" doc:"Grid Engine project (-P)."`
	ExtraArgs      words `yaml:"extra_args" doc:"Extra qsub/qrsh arguments (a list, or a string split as shell words)."`
	Mode           str   `yaml:"mode" enum:"batch,blocking" doc:"How attempts run: batch (qsub: jobs are submitted, polled, and outlive faber) or blocking (one qrsh -now no per attempt, for interactive use)."`
}

// ---- leaf values ----

// leaf is a value type that decodes itself from a node and describes itself
// in the JSON Schema.
type leaf interface {
	decode(p *parser, n *yaml.Node, where string)
	schema(g *schemaGen) map[string]any
}

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
	if n.Kind != yaml.ScalarNode {
		p.errorf(s.Pos, "%s: must be a string, not %s", where, kindName(n))
		return
	}
	if n.ShortTag() == "!!null" {
		return
	}
	s.V, s.Set = n.Value, true
}

func (s *str) schema(*schemaGen) map[string]any { return map[string]any{"type": "string"} }

// intv is an integer.
type intv struct {
	V   int
	Pos Pos
	Set bool
}

func (v *intv) decode(p *parser, n *yaml.Node, where string) {
	v.Pos = nodePos(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		p.errorf(v.Pos, "%s: must be an integer, not %s", where, kindName(n))
		return
	}
	var i int64
	if err := n.Decode(&i); err != nil || int64(int(i)) != i || i > 1<<31-1 || i < -(1<<31) {
		p.errorf(v.Pos, "%s: integer %s out of range", where, n.Value)
		return
	}
	v.V, v.Set = int(i), true
}

func (v *intv) schema(*schemaGen) map[string]any { return map[string]any{"type": "integer"} }

// boolv is true or false.
type boolv struct {
	V   bool
	Pos Pos
	Set bool
}

func (v *boolv) decode(p *parser, n *yaml.Node, where string) {
	v.Pos = nodePos(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		p.errorf(v.Pos, "%s: must be true or false, not %s", where, kindName(n))
		return
	}
	if err := n.Decode(&v.V); err != nil {
		p.errorf(v.Pos, "%s: must be true or false, not %s", where, kindName(n))
		return
	}
	v.Set = true
}

func (v *boolv) schema(*schemaGen) map[string]any { return map[string]any{"type": "boolean"} }

// durv is a Go duration ("90s"); negative durations are rejected.
type durv struct {
	V   time.Duration
	Pos Pos
	Set bool
}

func (v *durv) decode(p *parser, n *yaml.Node, where string) {
	v.Pos = nodePos(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		p.errorf(v.Pos, "%s: must be a duration like 90s, 10m or 1h30m, not %s", where, kindName(n))
		return
	}
	d, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil {
		p.errorf(v.Pos, "%s: bad duration %q (use Go syntax like 90s, 10m or 1h30m)", where, n.Value)
		return
	}
	if d < 0 {
		p.errorf(v.Pos, "%s: duration %s must not be negative", where, n.Value)
		return
	}
	v.V, v.Set = d, true
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

// ---- the reflective decoder ----

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

// hints name the field meant by keys that other tools use.
var hints = map[string]string{
	"on_failure":   "result_handling: {on_failure: ...}",
	"depends_on":   "needs",
	"dependencies": "needs",
	"depends":      "needs",
	"command":      "run",
	"cmd":          "run",
	"script":       "run",
	"retries":      "max_retries",
	"vars":         "context",
	"variables":    "context",
	"environment":  "env",
	"workdir":      "dir",
	"cwd":          "dir",
}

// suggest returns ` (did you mean "x"?)` for the accepted key closest to key.
func suggest(key string, accepted []string) string {
	best, bestD := "", 1<<30
	lk := strings.ToLower(key)
	for _, a := range accepted {
		d := editDistance(lk, a)
		if d < bestD {
			best, bestD = a, d
		}
	}
	limit := 2
	switch n := utf8.RuneCountInString(key); {
	case n <= 2:
		limit = 0
	case n <= 4:
		limit = 1
	}
	if best != "" && bestD <= limit {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	if h, ok := hints[lk]; ok {
		target := strings.SplitN(h, ":", 2)[0]
		if contains(accepted, target) {
			return fmt.Sprintf(" (did you mean %q?)", h)
		}
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b (in runes),
// counting a swap of two adjacent runes as one edit.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		return 1 << 30
	}
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// planDir returns the absolute directory of the plan file.
func planDir(file string) string {
	dir := filepath.Dir(file)
	if file == "" {
		dir = "."
	}
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}
