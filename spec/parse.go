// Reading a plan: the entry points Load and Parse, the parser's state, and
// the diagnostics it collects.

package spec

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"sort"

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
	// torc|faber|noetl) instead of detecting it; Import tunes its conversion.
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

// Error returns the first error that is a cause (FirstCause) as
// "file:line:col: message".
func (e *Invalid) Error() string {
	if len(e.Errors) == 0 {
		return "invalid plan"
	}
	return e.FirstCause().Error()
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

	subPlans     map[string]error    // sub-plan validation results by path and context keys
	childNames   map[string]string   // sub-plan names by the same key
	childOutputs map[string][]string // the keys sub-plans declare in outputs:, by the same key

	// ops counts the steps of the dependency loops (resolveDeps, needs,
	// expandFanOuts), for TestNeedsLinear: they must grow linearly.
	ops int
}

func (p *parser) errorf(pos Pos, format string, args ...any) {
	p.errs = append(p.errs, Diagnostic{File: p.file, Line: pos.Line, Col: pos.Col, Message: fmt.Sprintf(format, args...)})
}

// consequencef records an error that another error of the plan usually
// causes (see Diagnostic.Consequence).
func (p *parser) consequencef(pos Pos, format string, args ...any) {
	p.errorf(pos, format, args...)
	p.errs[len(p.errs)-1].Consequence = true
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
