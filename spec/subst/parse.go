package subst

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// tokenized is a template rewritten for the shell parser: faber's brace syntax is
// replaced by text the parser treats as ordinary word characters, so that what the
// parser sees is exactly the shell syntax the user wrote around it.
type tokenized struct {
	src  string
	orig []int    // orig[i]: offset in the template of src byte i; len(src)+1 entries
	refs []tokRef // the references, in order
}

// tokRef is one reference's token in src.
type tokRef struct {
	name    string
	off     int // offset of the token in src
	len     int // length of the token in src
	origOff int // offset of the '{' in the template
}

// tokenize rewrites segs: each reference becomes ref(name), "{{" open and "}}" close,
// and each carriage return in the text cr (unless cr is empty).
func tokenize(tmpl string, segs []segment, ref func(name string) string, open, close, cr string) *tokenized {
	t := &tokenized{orig: make([]int, 0, len(tmpl)+1)}
	var b strings.Builder
	b.Grow(len(tmpl) + 16)
	emit := func(s string, off int, oneToOne bool) {
		for i := range len(s) {
			if oneToOne {
				t.orig = append(t.orig, off+i)
			} else {
				t.orig = append(t.orig, off)
			}
		}
		b.WriteString(s)
	}
	for _, s := range segs {
		switch s.kind {
		case segText:
			text := s.text
			for cr != "" {
				i := strings.IndexByte(text, '\r')
				if i < 0 {
					break
				}
				emit(text[:i], s.off+len(s.text)-len(text), true)
				emit(cr, s.off+len(s.text)-len(text)+i, false)
				text = text[i+1:]
			}
			emit(text, s.off+len(s.text)-len(text), true)
		case segOpen:
			emit(open, s.off, false)
		case segClose:
			emit(close, s.off, false)
		case segRef:
			tok := ref(s.name)
			t.refs = append(t.refs, tokRef{name: s.name, off: b.Len(), len: len(tok), origOff: s.off})
			emit(tok, s.off, false)
		}
	}
	t.orig = append(t.orig, len(tmpl))
	t.src = b.String()
	return t
}

// standIns are runes that stand in for template bytes while the shell parser reads
// it: faber's braces, which the parser must take as ordinary word characters, and the
// carriage return, which sh and bash take as an ordinary character but the parser
// as a blank (and drops before a line feed, even inside quotes).
type standIns struct {
	refOpen, refClose, open, close, cr string
}

// pickStandIns picks stand-ins whose UTF-8 lead byte does not occur in tmpl. Then no
// stand-in can appear in the parser's output except where it was put: no template
// byte can begin one, even when quote removal joins invalid UTF-8 fragments.
func pickStandIns(tmpl string) (standIns, bool) {
	// Lead bytes of three-byte sequences whose continuations 0x80 0x80..0x84 are
	// valid: private use first, then ordinary letters.
	for _, lead := range []byte{0xEE, 0xEF, 0xE1, 0xE2, 0xE3, 0xE4, 0xE5, 0xE6, 0xE7, 0xE8, 0xE9, 0xEA, 0xEB, 0xEC} {
		if strings.IndexByte(tmpl, lead) >= 0 {
			continue
		}
		r := func(last byte) string { return string([]byte{lead, 0x80, last}) }
		return standIns{refOpen: r(0x80), refClose: r(0x81), open: r(0x82), close: r(0x83), cr: r(0x84)}, true
	}
	return standIns{}, false
}

// origOff maps an offset in src back to the template, clamped so that a parser
// position one past the end, or a bogus one, never indexes out of range.
func (t *tokenized) origOff(off int) int {
	if off < 0 {
		return 0
	}
	if off >= len(t.orig) {
		return t.orig[len(t.orig)-1]
	}
	return t.orig[off]
}

// parseShell parses src as bash, the superset of the POSIX shells faber supports.
// The parser is third-party code fed with user input, so a panic in it is turned
// into an error rather than allowed to take faber down.
func parseShell(src string) (f *syntax.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("shell parser failed: %v", r)
		}
	}()
	p := syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true))
	return p.Parse(strings.NewReader(src), "")
}

// walk is syntax.Walk with the same panic guard as parseShell.
func walk(f *syntax.File, fn func(syntax.Node) bool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("shell parser failed: %v", r)
		}
	}()
	syntax.Walk(f, fn)
	return nil
}

var posPrefix = regexp.MustCompile(`^\d+:\d+: `)

// parseErr rewrites a parser error for the user: its position is moved back to the
// template (the tokens have other lengths than the braces they replace), and any
// token text in the message is shown as the template's braces again. The message is
// kept on one line.
func parseErr(err error, tmpl string, t *tokenized, untoken *strings.Replacer) error {
	var off = -1
	var pe syntax.ParseError
	var le syntax.LangError
	switch {
	case errors.As(err, &pe):
		off = int(pe.Pos.Offset())
	case errors.As(err, &le):
		off = int(le.Pos.Offset())
	}
	msg := posPrefix.ReplaceAllString(err.Error(), "")
	if untoken != nil {
		msg = untoken.Replace(msg)
	}
	msg = oneLine(msg)
	if off < 0 {
		return errors.New(msg)
	}
	line, col := lineCol(tmpl, t.origOff(off))
	return fmt.Errorf("%d:%d: %s", line, col, msg)
}

// lineCol returns the 1-based line and byte column of off in s.
func lineCol(s string, off int) (line, col int) {
	off = min(max(off, 0), len(s))
	line = 1 + strings.Count(s[:off], "\n")
	col = off - strings.LastIndexByte(s[:off], '\n')
	return line, col
}

// oneLine replaces line breaks so that an error message stays one line.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", `\n`, "\n", `\n`, "\r", `\r`).Replace(s)
}

// snippet returns template text for an error message, shortened and on one line.
func snippet(s string) string {
	const max = 40
	if len(s) > max {
		cut := max
		for cut > 0 && s[cut]&0xC0 == 0x80 { // don't split a UTF-8 sequence
			cut--
		}
		s = s[:cut] + "..."
	}
	return oneLine(s)
}
