// Package subst implements faber's {name} substitution (SPEC §4.1) and the shell
// quoting around it.
//
// The one property everything here serves: a substituted value is never parsed by
// anything. Handler commands are split into words first and substituted second
// (Argv), so a value can never change word boundaries; run: scripts receive values
// through environment variables that the script expands exactly once, in a quoting
// context chosen from the script's syntax tree (Script), so the shell never sees a
// value's text as code.
package subst

import (
	"fmt"
	"strings"
)

// NameRef is one {name} reference in a template.
type NameRef struct {
	Name   string
	Offset int // byte offset of the '{'
}

// segKind says what a piece of a template is.
type segKind int

const (
	segText  segKind = iota // literal text, copied as is
	segOpen                 // "{{", a literal '{'
	segClose                // "}}", a literal '}'
	segRef                  // "{name}"
)

// segment is one piece of a template; off is its byte offset in the template.
type segment struct {
	kind segKind
	text string // the template bytes of this piece
	name string // for segRef
	off  int
}

// scan cuts a template into text, escaped braces and references. It is the single
// definition of the template grammar: Names, Expand, Words and Script all use it, so
// validation and substitution can never disagree about what is a reference.
func scan(tmpl string) []segment {
	segs := make([]segment, 0, 4)
	textStart := 0
	flush := func(end int) {
		if end > textStart {
			segs = append(segs, segment{kind: segText, text: tmpl[textStart:end], off: textStart})
		}
	}
	for i := 0; i < len(tmpl); {
		switch {
		case strings.HasPrefix(tmpl[i:], "{{"):
			flush(i)
			segs = append(segs, segment{kind: segOpen, text: "{{", off: i})
			i += 2
			textStart = i
		case strings.HasPrefix(tmpl[i:], "}}"):
			flush(i)
			segs = append(segs, segment{kind: segClose, text: "}}", off: i})
			i += 2
			textStart = i
		case tmpl[i] == '{' && (i == 0 || tmpl[i-1] != '$'):
			// A '$' right before the brace makes it the shell's ${name}, which
			// scripts must be able to use unchanged.
			n := nameLen(tmpl[i+1:])
			if n > 0 && i+1+n < len(tmpl) && tmpl[i+1+n] == '}' {
				flush(i)
				end := i + n + 2
				segs = append(segs, segment{kind: segRef, text: tmpl[i:end], name: tmpl[i+1 : i+1+n], off: i})
				i = end
				textStart = i
				continue
			}
			i++
		default:
			i++
		}
	}
	flush(len(tmpl))
	return segs
}

// nameLen returns the length of the [a-z_][a-z0-9_]* prefix of s, or of
// item.[a-z_][a-z0-9_]* (a field of a fan-out item), or of
// steps.<id>.outputs.<key> (an output of an upstream step, OutputRef).
func nameLen(s string) int {
	n := plainNameLen(s)
	if n == len("item") && strings.HasPrefix(s, "item.") {
		if m := plainNameLen(s[n+1:]); m > 0 {
			return n + 1 + m
		}
	}
	if n == len("steps") && strings.HasPrefix(s, "steps.") {
		if m := outputRefLen(s); m > 0 {
			return m
		}
	}
	return n
}

// OutputsInfix separates a step id from an output key in a reference.
const OutputsInfix = ".outputs."

// outputRefLen is the length of a steps.<id>.outputs.<key> prefix of s
// (id: [A-Za-z0-9_.-]+, key: [A-Za-z_][A-Za-z0-9_]*), or 0. A step id may
// hold dots, a key may not: the last ".outputs." ends the id.
func outputRefLen(s string) int {
	i := len("steps.")
	j := i
	for j < len(s) && idByte(s[j]) {
		j++
	}
	k := strings.LastIndex(s[i:j], OutputsInfix)
	if k <= 0 {
		return 0
	}
	key := s[i+k+len(OutputsInfix) : j]
	if key == "" || KeyLen(key) != len(key) {
		return 0
	}
	return j
}

func idByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

// KeyLen returns the length of the [A-Za-z_][A-Za-z0-9_]* prefix of s: an
// output key.
func KeyLen(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return i
		}
	}
	return len(s)
}

// OutputRef splits a reference name steps.<id>.outputs.<key> into the step
// id and the key; ok is false for any other name.
func OutputRef(name string) (step, key string, ok bool) {
	if !strings.HasPrefix(name, "steps.") || outputRefLen(name) != len(name) {
		return "", "", false
	}
	rest := name[len("steps."):]
	i := strings.LastIndex(rest, OutputsInfix)
	return rest[:i], rest[i+len(OutputsInfix):], true
}

// OutputName is the reference name of output key of step id (OutputRef's
// inverse): the key under which the value is in a substitution map.
func OutputName(step, key string) string { return "steps." + step + OutputsInfix + key }

func plainNameLen(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c == '_':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return i
		}
	}
	return len(s)
}

// Names returns every {name} reference in tmpl, in order. Names match
// [a-z_][a-z0-9_]* (or item.[a-z_][a-z0-9_]*, a fan-out item's field); "{{" and "}}" are literal braces; any other brace text is
// literal; "${name}" (a '$' right before the '{') is the shell's parameter syntax
// and not a faber variable.
func Names(tmpl string) []NameRef {
	var refs []NameRef
	for _, s := range scan(tmpl) {
		if s.kind == segRef {
			refs = append(refs, NameRef{Name: s.name, Offset: s.off})
		}
	}
	return refs
}

// Expand substitutes tmpl as plain text, for env values, dir and structured args:
// "{{" becomes "{", "}}" becomes "}" and {name} becomes vars[name] (see CleanValue).
// An unknown name is an error.
func Expand(tmpl string, vars map[string]string) (string, error) {
	if strings.IndexAny(tmpl, "{}") < 0 {
		return tmpl, nil // no reference, no {{ or }}: nothing to do
	}
	var b strings.Builder
	b.Grow(len(tmpl))
	for _, s := range scan(tmpl) {
		switch s.kind {
		case segText:
			b.WriteString(s.text)
		case segOpen:
			b.WriteByte('{')
		case segClose:
			b.WriteByte('}')
		case segRef:
			v, ok := vars[s.name]
			if !ok {
				return "", unknownVar(s.name)
			}
			b.WriteString(CleanValue(v))
		}
	}
	return b.String(), nil
}

// CleanValue returns v as it is delivered to a program: a NUL byte becomes U+FFFD,
// because neither an argument nor an environment variable can hold NUL; every other
// byte, invalid UTF-8 included, is kept.
func CleanValue(v string) string {
	if strings.IndexByte(v, 0) < 0 {
		return v
	}
	return strings.ReplaceAll(v, "\x00", "\uFFFD")
}

func unknownVar(name string) error {
	return fmt.Errorf("unknown variable {%s}", name)
}
