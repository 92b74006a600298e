package subst

import (
	"errors"
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Words splits a command template into POSIX shell words — quotes removed,
// backslash escapes applied — without any expansion. {name} references, "{{" and
// "}}" come back as written, for Expand to substitute; Argv does both in one step.
//
// The command runs without a shell, so shell syntax that would need one is an error
// rather than literal text: expansions ($x, ${x}, $(...), backquotes, $((...))),
// operators and redirections (; | & > <), more than one command, assignments,
// comments, compound commands, $'...' and unterminated quotes. An empty template is
// an error too.
func Words(tmpl string) ([]string, error) {
	words, err := splitWords(tmpl)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(words))
	for i, w := range words {
		var b strings.Builder
		for _, p := range w {
			switch p.kind {
			case segText:
				b.WriteString(p.text)
			case segOpen:
				b.WriteString("{{")
			case segClose:
				b.WriteString("}}")
			case segRef:
				b.WriteString("{" + p.name + "}")
			}
		}
		out[i] = b.String()
	}
	return out, nil
}

// Argv splits tmpl into words like Words, then substitutes each word like Expand:
// split first, substituted second, so a value never changes word boundaries. Whether
// the template writes {v}, "{v}" or '{v}', the value arrives as exactly one argument,
// byte for byte (see CleanValue); an empty value is one empty argument.
//
// Argv substitutes the words' parsed pieces rather than re-reading Words' output, so
// quote removal can neither create nor hide a reference: '{'v} is the literal text
// {v}, exactly as Names reports.
func Argv(tmpl string, vars map[string]string) ([]string, error) {
	words, err := splitWords(tmpl)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(words))
	for i, w := range words {
		var b strings.Builder
		for _, p := range w {
			switch p.kind {
			case segText:
				b.WriteString(p.text)
			case segOpen:
				b.WriteByte('{')
			case segClose:
				b.WriteByte('}')
			case segRef:
				v, ok := vars[p.name]
				if !ok {
					return nil, unknownVar(p.name)
				}
				b.WriteString(CleanValue(v))
			}
		}
		out[i] = b.String()
	}
	return out, nil
}

// splitWords parses tmpl as one simple command and returns its words as sequences
// of pieces: decoded literal text, escaped braces and references.
func splitWords(tmpl string) ([][]segment, error) {
	if strings.IndexByte(tmpl, 0) >= 0 {
		return nil, errors.New("the command contains a NUL byte")
	}
	br, ok := pickStandIns(tmpl)
	if !ok {
		return nil, errors.New("cannot split the command: it uses too many different non-ASCII bytes")
	}
	t := tokenize(tmpl, scan(tmpl), func(name string) string { return br.refOpen + name + br.refClose }, br.open, br.close, br.cr)
	untoken := strings.NewReplacer(br.refOpen, "{", br.refClose, "}", br.open, "{{", br.close, "}}", br.cr, "\r")

	f, err := parseShell(t.src)
	if err != nil {
		return nil, parseErr(err, tmpl, t, untoken)
	}
	// what names the template text of a node for an error message.
	what := func(n syntax.Node) string {
		start, end := t.origOff(int(n.Pos().Offset())), t.origOff(int(n.End().Offset()))
		if end < start {
			end = start
		}
		return snippet(tmpl[start:end])
	}
	noShell := func(format string, args ...any) error {
		return fmt.Errorf(format+" is not allowed: the command runs without a shell (quote it to pass it literally)", args...)
	}

	if len(f.Last) > 0 {
		return nil, fmt.Errorf("%q starts a comment here (quote it to pass it literally)", "#")
	}
	switch len(f.Stmts) {
	case 0:
		return nil, errors.New("empty command")
	case 1:
	default:
		return nil, errors.New("only one command is allowed: the command runs without a shell (quote ; or the line break to pass it literally)")
	}
	st := f.Stmts[0]
	switch {
	case len(st.Comments) > 0:
		return nil, fmt.Errorf("%q starts a comment here (quote it to pass it literally)", "#")
	case st.Negated:
		return nil, noShell("%q", "!")
	case st.Background:
		return nil, noShell("%q", "&")
	case st.Coprocess:
		return nil, noShell("%q", "|&")
	case st.Semicolon.IsValid():
		return nil, noShell("%q", ";")
	case len(st.Redirs) > 0:
		return nil, noShell("redirection %q", st.Redirs[0].Op.String())
	}
	var call *syntax.CallExpr
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		call = c
	case *syntax.BinaryCmd:
		return nil, noShell("%q", c.Op.String())
	case nil:
		return nil, errors.New("empty command")
	default:
		return nil, noShell("shell syntax %q", what(c))
	}
	if len(call.Assigns) > 0 {
		return nil, noShell("variable assignment %q", what(call.Assigns[0]))
	}
	if len(call.Args) == 0 {
		return nil, errors.New("empty command")
	}

	words := make([][]segment, 0, len(call.Args))
	for _, w := range call.Args {
		var b strings.Builder
		for _, part := range w.Parts {
			switch p := part.(type) {
			case *syntax.Lit:
				unescape(&b, p.Value, false)
			case *syntax.SglQuoted:
				if p.Dollar {
					return nil, fmt.Errorf("$'...' quoting is not supported in %q: use '...'", what(p))
				}
				b.WriteString(p.Value)
			case *syntax.DblQuoted:
				if p.Dollar {
					return nil, fmt.Errorf("$\"...\" quoting is not supported in %q: use \"...\"", what(p))
				}
				for _, dp := range p.Parts {
					lit, ok := dp.(*syntax.Lit)
					if !ok {
						return nil, noShell("%s %q", partKind(dp), what(dp))
					}
					unescape(&b, lit.Value, true)
				}
			default:
				return nil, noShell("%s %q", partKind(p), what(p))
			}
		}
		pieces, err := splitPieces(b.String(), br)
		if err != nil {
			return nil, err
		}
		words = append(words, pieces)
	}
	return words, nil
}

// partKind names a word part for an error message.
func partKind(p syntax.WordPart) string {
	switch p.(type) {
	case *syntax.ParamExp:
		return "parameter expansion"
	case *syntax.CmdSubst:
		return "command substitution"
	case *syntax.ArithmExp:
		return "arithmetic expansion"
	case *syntax.ProcSubst:
		return "process substitution"
	case *syntax.ExtGlob:
		return "extended glob"
	case *syntax.BraceExp:
		return "brace expansion"
	default:
		return "shell syntax"
	}
}

// unescape appends a literal's value with the shell's backslash rules applied:
// unquoted, a backslash quotes any next byte; inside double quotes only $ ` " \ and
// a line break. A backslash before a line break is a line continuation and vanishes.
func unescape(b *strings.Builder, s string, dquoted bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		next := s[i+1]
		switch {
		case next == '\n':
			i++
		case !dquoted || strings.IndexByte("$`\"\\", next) >= 0:
			b.WriteByte(next)
			i++
		default:
			b.WriteByte(c)
		}
	}
}

// splitPieces cuts a decoded word at the stand-ins.
func splitPieces(s string, br standIns) ([]segment, error) {
	var out []segment
	text := func(t string) {
		if t != "" {
			out = append(out, segment{kind: segText, text: t})
		}
	}
	for s != "" {
		i := strings.IndexByte(s, br.refOpen[0]) // every stand-in starts with this lead byte
		if i < 0 {
			text(s)
			break
		}
		text(s[:i])
		s = s[i:]
		switch {
		case strings.HasPrefix(s, br.open):
			out = append(out, segment{kind: segOpen})
			s = s[len(br.open):]
		case strings.HasPrefix(s, br.close):
			out = append(out, segment{kind: segClose})
			s = s[len(br.close):]
		case strings.HasPrefix(s, br.cr):
			text("\r")
			s = s[len(br.cr):]
		case strings.HasPrefix(s, br.refOpen):
			rest := s[len(br.refOpen):]
			n := nameLen(rest)
			if n == 0 || !strings.HasPrefix(rest[n:], br.refClose) {
				// Cannot happen: a reference's token is contiguous word characters.
				return nil, errors.New("cannot split the command: a {name} reference was broken up")
			}
			out = append(out, segment{kind: segRef, name: rest[:n]})
			s = rest[n+len(br.refClose):]
		default:
			// Cannot happen: the lead byte does not occur in the template.
			return nil, errors.New("cannot split the command: unexpected character")
		}
	}
	return out, nil
}
