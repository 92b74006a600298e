package spec

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	exprparser "github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
)

// A step's condition (README "Conditions"): `when:` is an expression in
// the expr language (github.com/expr-lang/expr: no side effects, always
// ends, typed) over what the step may know when it is ready, giving true or
// false. False makes the step skipped.

// WhenEnv is what a condition sees.
type WhenEnv struct {
	Steps   map[string]WhenStep `expr:"steps"`
	Context map[string]string   `expr:"context"`
	// Item is a fan-out item's value, or its fields (a map) for an item
	// that has them; nil outside a fan-out.
	Item any `expr:"item"`
}

// WhenStep is an upstream step as a condition sees it.
type WhenStep struct {
	Status  string            `expr:"status"`
	Outputs map[string]string `expr:"outputs"`
}

// When is a compiled condition.
type When struct {
	Src string
	// Steps are the step ids the condition names (steps.<id> or
	// steps["<id>"]), Uses the outputs it reads with constant names, and
	// Context the context keys; each once, in the order written, with the
	// byte offset in Src where each is first named.
	Steps   []WhenName
	Uses    []OutputRef
	UsesAt  []int
	Context []WhenName
	// Item is the byte offset where the condition first reads item, or -1.
	Item int
	prog *vm.Program
}

// WhenName is a name a condition reads, with its byte offset in the source.
type WhenName struct {
	Name   string
	Offset int
}

// WhenError is a condition that does not compile; Offset is the byte
// offset in the source where the problem is.
type WhenError struct {
	Offset int
	Msg    string
}

func (e *WhenError) Error() string { return e.Msg }

// CompileWhen compiles a condition and lists the names it reads.
func CompileWhen(src string) (*When, error) {
	if strings.TrimSpace(src) == "" {
		return nil, &WhenError{Msg: "the condition is empty"}
	}
	prog, err := expr.Compile(src, expr.Env(WhenEnv{}), expr.AsBool())
	if err != nil {
		return nil, whenError(src, err)
	}
	w := &When{Src: src, prog: prog, Item: -1}
	tree, err := exprparser.Parse(src)
	if err != nil {
		return nil, whenError(src, err)
	}
	byteOff := func(n ast.Node) int { return runeToByte(src, n.Location().From) }
	seenStep, seenUse, seenCtx := map[string]bool{}, map[string]bool{}, map[string]bool{}
	ast.Walk(&tree.Node, visitor(func(n *ast.Node) {
		if id, ok := (*n).(*ast.IdentifierNode); ok && id.Value == "item" && w.Item < 0 {
			w.Item = byteOff(id)
		}
		chain, at := memberChain(*n)
		if len(chain) < 2 {
			return
		}
		switch chain[0] {
		case "steps":
			if !seenStep[chain[1]] {
				seenStep[chain[1]] = true
				w.Steps = append(w.Steps, WhenName{chain[1], byteOff(at)})
			}
			if len(chain) == 4 && chain[2] == "outputs" {
				ref := OutputRef{Step: chain[1], Key: chain[3]}
				if !seenUse[ref.Name()] {
					seenUse[ref.Name()] = true
					w.Uses = append(w.Uses, ref)
					w.UsesAt = append(w.UsesAt, byteOff(at))
				}
			}
		case "context":
			if !seenCtx[chain[1]] {
				seenCtx[chain[1]] = true
				w.Context = append(w.Context, WhenName{chain[1], byteOff(at)})
			}
		}
	}))
	return w, nil
}

// Eval runs the condition.
func (w *When) Eval(env WhenEnv) (bool, error) {
	v, err := expr.Run(w.prog, env)
	if err != nil {
		return false, fmt.Errorf("when: %s", firstLine(err.Error()))
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("when: the condition gave %v (%T), not true or false", v, v)
	}
	return b, nil
}

type visitor func(*ast.Node)

func (f visitor) Visit(n *ast.Node) { f(n) }

// memberChain is a member expression with constant names as a list:
// steps.a.outputs.v and steps["a"].outputs["v"] are [steps a outputs v].
// Anything else gives nil. at is the identifier it starts with.
func memberChain(n ast.Node) (chain []string, at ast.Node) {
	switch m := n.(type) {
	case *ast.IdentifierNode:
		return []string{m.Value}, m
	case *ast.MemberNode:
		prop, ok := m.Property.(*ast.StringNode)
		if !ok || m.Optional {
			return nil, nil
		}
		base, at := memberChain(m.Node)
		if base == nil {
			return nil, nil
		}
		return append(base, prop.Value), at
	}
	return nil, nil
}

// whenError turns expr's error into a WhenError at its place.
func whenError(src string, err error) error {
	if fe, ok := err.(*file.Error); ok {
		return &WhenError{Offset: runeToByte(src, fe.From), Msg: firstLine(fe.Message)}
	}
	return &WhenError{Msg: firstLine(err.Error())}
}

func runeToByte(s string, runes int) int {
	off := 0
	for i := 0; i < runes && off < len(s); i++ {
		_, w := utf8.DecodeRuneInString(s[off:])
		off += w
	}
	return off
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// checkWhen compiles a step's when: and checks the names it reads that
// need no other step: context keys and item. The steps it names are
// checked with the other references to upstream steps.
func (b *builder) checkWhen(s *Step, raw *str, where string) {
	w, err := CompileWhen(raw.V)
	if err != nil {
		we, _ := err.(*WhenError)
		off := 0
		if we != nil {
			off = we.Offset
		}
		b.errorf(b.exprPos(raw, off), "%s: when: %s", where, whenMessage(err.Error()))
		return
	}
	for _, c := range w.Context {
		if _, ok := b.plan.Context[c.Name]; !ok {
			b.errorf(b.exprPos(raw, c.Offset), "%s: when: context.%s: not a context variable%s", where, c.Name, suggest(c.Name, b.plan.ContextKeys))
			continue
		}
		b.used[c.Name] = true
	}
	if w.Item >= 0 && s.FanOut == nil {
		b.errorf(b.exprPos(raw, w.Item), "%s: when: item is only known in a fan-out (foreach:, matrix:)", where)
	}
	b.whenRefs(s, raw, w, where)
	s.When = w
}

// whenMessage says expr's type errors in the plan's words.
func whenMessage(msg string) string {
	if _, field, ok := strings.Cut(msg, "type spec.WhenStep has no field "); ok {
		return fmt.Sprintf("a step has no %s (it has status and outputs)", field)
	}
	return strings.ReplaceAll(msg, "spec.WhenStep", "step")
}

// exprPos is the position of byte off of a scalar's value: exact on a
// one-line plain or quoted scalar without escapes, else the value's start.
func (b *builder) exprPos(s *str, off int) Pos {
	n := s.Node
	if n == nil || n.Line <= 0 || strings.Contains(s.V, "\n") || off < 0 || off > len(s.V) {
		return s.Pos
	}
	col := n.Column
	switch n.Style {
	case 0:
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		if strings.ContainsAny(s.V, `\'"`) {
			return s.Pos // escapes change the columns
		}
		col++
	default:
		return s.Pos
	}
	return Pos{Line: n.Line, Col: col + utf8.RuneCountInString(s.V[:off])}
}

// whenRefs records the steps a condition names for the check that they
// are upstream (checkOutputUses): the outputs it reads as output
// references, the others by their status.
func (b *builder) whenRefs(s *Step, raw *str, w *When, where string) {
	at := map[string]bool{}
	for i, u := range w.Uses {
		at[u.Step] = true
		b.outputUses = append(b.outputUses, outputUse{step: s, ref: u, pos: b.exprPos(raw, w.UsesAt[i]),
			where: where + ": when", name: "steps." + u.Step + ".outputs." + u.Key})
	}
	for _, n := range w.Steps {
		if !at[n.Name] {
			b.outputUses = append(b.outputUses, outputUse{step: s, ref: OutputRef{Step: n.Name}, pos: b.exprPos(raw, n.Offset),
				where: where + ": when", status: true, name: "steps." + n.Name})
		}
	}
}
