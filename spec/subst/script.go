package subst

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// EnvPrefix starts the names of the environment variables through which Script
// hands values to the shell: {error} is read from FABER_SUB_error.
const EnvPrefix = "FABER_SUB_"

// envName is the variable that hands {name} to the shell; the dot of
// {item.x} becomes __, as a shell name has no dots. In an output reference
// the step id, which may hold '-', '.' and '_', is spelt with '_' as "_u",
// '-' as "_d" and '.' as "_o", so that two ids never share a variable:
// {steps.a-b.outputs.v} is FABER_SUB_steps__a_db__outputs__v.
func envName(name string) string {
	if step, key, ok := OutputRef(name); ok {
		id := strings.NewReplacer("_", "_u", "-", "_d", ".", "_o").Replace(step)
		return EnvPrefix + "steps__" + id + "__outputs__" + key
	}
	return EnvPrefix + strings.ReplaceAll(name, ".", "__")
}

// Script renders a run: or recovery script for a POSIX shell (see IsPOSIXShell).
// Each {name} is replaced by a reference to the environment variable EnvPrefix+name,
// quoted for the place where the template put it, and env holds the
// "FABER_SUB_name=value" entries (one per distinct name, values per CleanValue) to
// add to the process environment. The shell thus never parses a value: it expands
// it once, without field splitting or globbing, and the value lands as exactly its
// literal text in the shell word where the template put it:
//
//	printf %s {v}      ->  printf %s "${FABER_SUB_v}"
//	echo "a {v}"       ->  echo "a ${FABER_SUB_v}"
//	echo 'a {v}'       ->  echo 'a '"${FABER_SUB_v}"''
//	cat <<EOF ... {v}  ->  ... ${FABER_SUB_v}
//
// Where no quoting keeps a value literal, Script returns an error instead of a
// script: inside arithmetic (bash evaluates a[$(cmd)] there), a parameter, variable
// or function name, a quoted here-document, backquotes, right after a backslash,
// in the code that eval, trap or alias run, and in the variable names that
// builtins such as read, unset and printf -v take. A template without
// references is returned as written, with "{{" and "}}" unescaped, and is never
// parsed, so a script without variables always runs exactly as its author wrote it.
func Script(tmpl string, vars map[string]string) (script string, env []string, err error) {
	segs := scan(tmpl)
	hasRef := false
	for _, s := range segs {
		if s.kind != segRef {
			continue
		}
		hasRef = true
		if _, ok := vars[s.name]; !ok {
			return "", nil, unknownVar(s.name)
		}
	}
	if !hasRef {
		text, _ := Expand(tmpl, nil) // cannot fail: there is no reference
		return text, nil, nil
	}

	// The shell cannot receive a NUL byte, and the parser would skip it.
	if strings.IndexByte(tmpl, 0) >= 0 {
		return "", nil, errors.New("cannot substitute variables in a script that contains a NUL byte")
	}

	// The token stands for a reference while the script is parsed. It is made of
	// word characters, so the parser puts it inside whatever word, name or
	// expression the reference is part of, and we learn the reference's context.
	tok := "FaberSubstToken"
	for n := 0; strings.Contains(tmpl, tok); n++ {
		tok = "FaberSubstToken" + strconv.Itoa(n) + "X"
	}
	// The parser must see carriage returns the way the shell will: as ordinary
	// characters. A stand-in does that; it becomes \r again in the output.
	var cr string
	if strings.IndexByte(tmpl, '\r') >= 0 {
		si, ok := pickStandIns(tmpl)
		if !ok {
			return "", nil, errors.New("cannot substitute variables: the script uses too many different non-ASCII bytes")
		}
		cr = si.cr
	}
	t := tokenize(tmpl, segs, func(string) string { return tok }, "{", "}", cr)
	untoken := strings.NewReplacer(tok, "{…}")
	if cr != "" {
		untoken = strings.NewReplacer(tok, "{…}", cr, `\r`)
	}
	f, err := parseShell(t.src)
	if err != nil {
		return "", nil, fmt.Errorf("cannot parse the script: %w", parseErr(err, tmpl, t, untoken))
	}

	// For each reference, the replacement text or why there is none.
	repl := make([]string, len(t.refs))
	whyNot := make([]string, len(t.refs))
	done := make([]bool, len(t.refs))
	var stack []syntax.Node
	err = walk(f, func(n syntax.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, n)
		switch n.(type) {
		case *syntax.Lit, *syntax.SglQuoted, *syntax.Comment:
		default:
			return true
		}
		start, end := int(n.Pos().Offset()), int(n.End().Offset())
		for i, r := range t.refs {
			if done[i] || r.off+r.len <= start || r.off >= end {
				continue
			}
			done[i] = true
			if r.off < start || r.off+r.len > end {
				// The token straddles two parts of the syntax tree; there is no
				// single context to quote for.
				whyNot[i] = "here"
				continue
			}
			st, why := classify(stack)
			if why == "" && st != styleSingle && st != styleComment && oddBackslashesBefore(t.src, r.off) {
				why = "right after a backslash"
			}
			whyNot[i] = why
			repl[i] = render(st, r.name)
		}
		return true
	})
	if err != nil {
		return "", nil, err
	}

	var b strings.Builder
	b.Grow(len(t.src) + 16*len(t.refs))
	last := 0
	for i, r := range t.refs {
		if !done[i] {
			whyNot[i] = "here" // not in any word or comment the parser reported
		}
		if whyNot[i] != "" {
			msg := fmt.Sprintf("cannot substitute {%s} %s", r.name, whyNot[i])
			if strings.Contains(tmpl, "\n") {
				line, _ := lineCol(tmpl, r.origOff)
				msg += fmt.Sprintf(" (line %d of the script)", line)
			}
			return "", nil, fmt.Errorf("%s", msg)
		}
		b.WriteString(t.src[last:r.off])
		b.WriteString(repl[i])
		last = r.off + r.len
	}
	b.WriteString(t.src[last:])
	script = b.String()
	if cr != "" {
		script = strings.ReplaceAll(script, cr, "\r")
	}

	seen := make(map[string]bool)
	for _, r := range t.refs {
		if !seen[r.name] {
			seen[r.name] = true
			env = append(env, envName(r.name)+"="+CleanValue(vars[r.name]))
		}
	}
	return script, env, nil
}

// style is how a reference is written into the script.
type style int

const (
	styleQuoted       style = iota // "${FABER_SUB_v}": unquoted context
	styleBare                      // ${FABER_SUB_v}: double quotes, here-document
	styleSingle                    // '"${FABER_SUB_v}"': close '...', expand, reopen
	styleDollarSingle              // '"${FABER_SUB_v}"$': the same for $'...'
	styleComment                   // "${FABER_SUB_v}": never evaluated; quoted all the same
)

// render writes the reference to name in style st.
func render(st style, name string) string {
	ref := "${" + envName(name) + "}"
	switch st {
	case styleQuoted, styleComment:
		return `"` + ref + `"`
	case styleSingle:
		return `'"` + ref + `"'`
	case styleDollarSingle:
		return `'"` + ref + `"$'`
	default:
		return ref
	}
}

// oddBackslashesBefore reports whether the byte at off is escaped by a backslash.
// An escaped '$' or '"' would turn our expansion into literal text or, worse, leave
// it unquoted.
func oddBackslashesBefore(src string, off int) bool {
	n := 0
	for i := off - 1; i >= 0 && src[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// classify decides how to write a reference found in the leaf at the top of stack
// (a *syntax.Lit, *syntax.SglQuoted or *syntax.Comment; below it, its ancestors up
// to the *syntax.File). It returns a non-empty reason when no writing keeps the
// value literal.
func classify(stack []syntax.Node) (style, string) {
	leaf := stack[len(stack)-1]
	if _, ok := leaf.(*syntax.Comment); ok {
		return styleComment, ""
	}

	// Places where the shell reads a word as something other than data. Arithmetic
	// is refused even through a nested $(...): bash evaluates a value such as
	// a[$(cmd)] that reaches arithmetic, so it must never get there.
	for i := len(stack) - 1; i > 0; i-- {
		child, parent := stack[i], stack[i-1]
		switch p := parent.(type) {
		case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause, *syntax.CStyleLoop,
			*syntax.BinaryArithm, *syntax.UnaryArithm, *syntax.ParenArithm, *syntax.FlagsArithm:
			return 0, "inside an arithmetic expression"
		case *syntax.ParamExp:
			switch {
			case isNode(child, p.Param), isNode(child, p.Flags), isNode(child, p.NestedParam):
				return 0, "inside a parameter name"
			case p.Index != nil && isNode(child, p.Index):
				return 0, "inside an array index"
			case p.Slice != nil:
				return 0, "inside a ${var:offset:length} expansion"
			case p.Repl != nil:
			case p.Exp != nil:
				if !defaultOp(p.Exp.Op) && !patternOp(p.Exp.Op) {
					return 0, "after this ${var" + p.Exp.Op.String() + "...} operator"
				}
			default:
				return 0, "inside this ${...} expansion"
			}
		case *syntax.Assign:
			switch {
			case isNode(child, p.Name):
				return 0, "inside a variable name"
			case p.Index != nil && isNode(child, p.Index):
				return 0, "inside an array index"
			case p.Naked:
				// declare, export, local, readonly, typeset read a bare argument as a
				// name, and bash evaluates the index of a name like a[$(cmd)].
				return 0, "as a bare argument of declare, export, local, readonly or typeset (write NAME={...})"
			}
		case *syntax.ArrayElem:
			if p.Index != nil && isNode(child, p.Index) {
				return 0, "inside an array index"
			}
		case *syntax.Redirect:
			switch {
			case isNode(child, p.N):
				return 0, "inside a file descriptor name"
			case isNode(child, p.Word) && (p.Op == syntax.Hdoc || p.Op == syntax.DashHdoc):
				return 0, "inside a here-document delimiter"
			case isNode(child, p.Hdoc) && quotedDelim(p.Word):
				return 0, "inside a quoted here-document (<<'EOF' expands nothing; use <<EOF)"
			}
		case *syntax.FuncDecl:
			if isNode(child, p.Name) {
				return 0, "inside a function name"
			}
			for _, n := range p.Names {
				if isNode(child, n) {
					return 0, "inside a function name"
				}
			}
		case *syntax.WordIter:
			if isNode(child, p.Name) {
				return 0, "inside a loop variable name"
			}
		case *syntax.CoprocClause:
			if isNode(child, p.Name) {
				return 0, "inside a coprocess name"
			}
		case *syntax.CallExpr:
			i := argIndex(p.Args, child)
			if i < 1 {
				continue
			}
			switch name := p.Args[0].Lit(); name {
			case "eval", "trap", "alias":
				// Their arguments are shell code, parsed again when it runs.
				return 0, "into code that " + name + ` runs (pass it in a variable: x={...}; ` + name + ` '... "$x"')`
			case "read", "unset", "getopts", "mapfile", "readarray":
				return 0, "as an argument of " + name + ", which takes variable names (bash runs the index of a name like a[$(cmd)])"
			case "printf", "test", "[", "wait":
				if opt := p.Args[i-1].Lit(); opt == "-v" || (name == "wait" && opt == "-p") {
					return 0, "as the variable name of " + name + " " + opt
				}
			}
		case *syntax.DeclClause:
			// declare -n and friends make a variable a reference to the variable
			// named by its value.
			for _, a := range p.Args {
				if p.Variant != nil && a.Naked && a.Value != nil && strings.HasPrefix(a.Value.Lit(), "-") && strings.Contains(a.Value.Lit(), "n") {
					return 0, "into a name reference (" + p.Variant.Value + " " + a.Value.Lit() + ")"
				}
			}
		case *syntax.BinaryTest:
			switch p.Op {
			case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
				// [[ x -eq y ]] evaluates its operands as arithmetic.
				return 0, "inside an arithmetic comparison (" + p.Op.String() + ")"
			}
		case *syntax.UnaryTest:
			if p.Op == syntax.TsVarSet || p.Op == syntax.TsRefVar {
				return 0, "as the variable name of " + p.Op.String()
			}
		case *syntax.ExtGlob:
			return 0, "inside an extended glob pattern"
		case *syntax.BraceExp:
			return 0, "inside a brace expansion"
		case *syntax.CmdSubst:
			if p.Backquotes {
				// Backquotes re-read their text after removing backslashes; use the
				// $(...) form, which nests cleanly.
				return 0, "inside backquotes (use $(...) instead)"
			}
		case *syntax.DblQuoted:
			if p.Dollar {
				return 0, `inside $"..." (use "...")`
			}
		}
	}

	// The quoting that applies: the innermost double quotes or here-document, up to
	// the nearest command or process substitution, which starts afresh.
	const (
		outUnquoted = iota
		outDouble
		outHeredoc
	)
	outer := outUnquoted
	found := false
	inParamWord := false // the word of ${var-word}, ${var#word}, ... is met before the quoting
	patternSeen := false // an operator reading its word as a pattern is met
scope:
	for i := len(stack) - 1; i > 0; i-- {
		child, parent := stack[i], stack[i-1]
		switch p := parent.(type) {
		case *syntax.ParamExp:
			inParamWord = inParamWord || !found
			patternSeen = patternSeen || p.Repl != nil || (p.Exp != nil && patternOp(p.Exp.Op))
		case *syntax.DblQuoted:
			if !found {
				outer, found = outDouble, true
			}
		case *syntax.Redirect:
			if !isNode(child, p.Hdoc) {
				continue
			}
			if patternSeen {
				// dash does not honour quotes inside ${var#"word"} in a
				// here-document, so the value would be read as a pattern.
				return 0, "inside a ${...} pattern or replacement in a here-document"
			}
			if !found {
				outer = outHeredoc
			}
			break scope
		case *syntax.CmdSubst, *syntax.ProcSubst:
			break scope
		}
	}

	switch sq := leaf.(type) {
	case *syntax.SglQuoted:
		if outer != outUnquoted {
			// Inside "${var-'word'}" or a here-document, single quotes are literal
			// characters, not quoting.
			return 0, "inside single quotes that are literal here (inside ${...} within double quotes or a here-document)"
		}
		if sq.Dollar {
			return styleDollarSingle, ""
		}
		return styleSingle, ""
	case *syntax.Lit:
		switch {
		case inParamWord && outer == outHeredoc:
			return styleBare, ""
		case inParamWord:
			// In "${var-word}" quotes inside word are honoured, and needed: without
			// them ${var#$x} reads $x as a pattern.
			return styleQuoted, ""
		case outer == outUnquoted:
			return styleQuoted, ""
		default:
			return styleBare, ""
		}
	}
	return 0, "here"
}

// argIndex returns the index of child among args, or -1.
func argIndex(args []*syntax.Word, child syntax.Node) int {
	for i, a := range args {
		if isNode(child, a) {
			return i
		}
	}
	return -1
}

// isNode reports whether n is the node held in field, which may be a nil pointer
// or a nil interface.
func isNode[T any](n syntax.Node, field T) bool {
	f, ok := any(field).(syntax.Node)
	if !ok || f == nil {
		return false
	}
	return f == n
}

// defaultOp reports whether op substitutes its word as a string: - :- = := ? :? + :+.
func defaultOp(op syntax.ParExpOperator) bool {
	switch op {
	case syntax.AlternateUnset, syntax.AlternateUnsetOrNull, syntax.DefaultUnset,
		syntax.DefaultUnsetOrNull, syntax.ErrorUnset, syntax.ErrorUnsetOrNull,
		syntax.AssignUnset, syntax.AssignUnsetOrNull:
		return true
	}
	return false
}

// patternOp reports whether op reads its word as a pattern: % %% # ## ^ ^^ , ,,.
func patternOp(op syntax.ParExpOperator) bool {
	switch op {
	case syntax.RemSmallSuffix, syntax.RemLargeSuffix, syntax.RemSmallPrefix,
		syntax.RemLargePrefix, syntax.UpperFirst, syntax.UpperAll,
		syntax.LowerFirst, syntax.LowerAll:
		return true
	}
	return false
}

// quotedDelim reports whether a here-document delimiter is quoted, which makes the
// shell expand nothing in the body.
func quotedDelim(w *syntax.Word) bool {
	if w == nil {
		return false
	}
	for _, p := range w.Parts {
		lit, ok := p.(*syntax.Lit)
		if !ok || strings.Contains(lit.Value, `\`) {
			return true
		}
	}
	return false
}
