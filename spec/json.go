// JSON: a .json plan read into the same node tree as YAML, with positions,
// so that everything after parsing is shared.

package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

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
