// YAML: parsing a plan's single document into a node tree, and locating
// yaml.v3's syntax errors (line, column, a hint at the usual cause).

package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

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
	if col, item := flowBrace(p.lineText(line)); line > 0 && col > 0 {
		// outputs: [dist/{release}.tar.gz] — faber's {var} inside a YAML
		// flow list starts a mapping there.
		p.errorf(Pos{Line: line, Col: col}, "YAML reads the { of %s as the start of a mapping; quote the item: %s (YAML: %s)", item, strconv.Quote(item), msg)
		return
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

// flowBrace finds, in a line of YAML, the first item of a flow list ([...])
// that holds a { after its start (dist/{release}.tar.gz): the column of
// that { (1-based) and the item; 0 when there is none. Quoted items are
// skipped.
func flowBrace(line string) (col int, item string) {
	var quote byte
	depth := 0  // [ ] nesting
	start := -1 // where the current flow-list item starts
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '#' && (i == 0 || line[i-1] == ' '):
			return 0, ""
		case depth == 0 && c == '[' && valueStart(line[:i]):
			depth, start = 1, i+1
		case depth == 0:
		case c == ' ' && start == i:
			start = i + 1
		case (c == '"' || c == '\'') && start == i:
			quote = c
		case c == ',' || c == ']':
			if c == ']' {
				depth = 0
			}
			start = i + 1
		case c == '{':
			end, closed := i, -1
			for braces := 0; end < len(line); end++ {
				if line[end] == '{' {
					braces++
				} else if line[end] == '}' {
					if braces--; braces == 0 {
						closed = end
					}
				} else if braces == 0 && (line[end] == ',' || line[end] == ']') {
					break
				}
			}
			it := strings.TrimSpace(line[start:end])
			if i > start || (closed >= 0 && len(strings.TrimSpace(line[closed+1:end])) > 0) {
				return i + 1, it
			}
			// {a: b} alone is a mapping YAML reads well; the checks
			// after parsing say if it does not belong there.
			i = end - 1
		}
	}
	return 0, ""
}

// valueStart reports whether what precedes a character on its line makes
// it the start of a YAML value: nothing, "key:" or "-" before it.
func valueStart(before string) bool {
	b := strings.TrimRight(before, " ")
	return b == "" || (len(b) < len(before) && (strings.HasSuffix(b, ":") || strings.HasSuffix(b, "-")))
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
