package tui

import (
	"bytes"
	"io"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Table lays out tab-separated cells in columns as text/tabwriter does
// (NewWriter(w, 0, 4, 2, ' ', 0): cells end at a tab, the text after a
// line's last tab is not part of a column, a line with fewer cells ends a
// column's block), but pads each cell by its display width: colour codes
// count nothing and a wide rune counts 2, as gh and kubectl pad. tabwriter
// counts bytes of escape codes as text, so a coloured STATUS cell pushed
// the columns after it apart in a colour terminal. Without escape codes and
// wide runes its output is byte for byte tabwriter's.
//
// Write buffers; Flush lays out and writes everything written so far.
type Table struct {
	w     io.Writer
	buf   []byte
	lines [][]cell
	// widths caches the width of cells that are not plain ASCII: mostly
	// coloured status cells, the same few thousands of times.
	widths map[string]int
	size   int // bytes of text, to size the output
}

type cell struct {
	text  string
	width int
}

// tablePadding is the space between two columns.
const tablePadding = 2

const spaces = "                                "

// NewTable returns a Table writing to w.
func NewTable(w io.Writer) *Table {
	return &Table{w: w}
}

// Write takes tab-separated cells, lines ending in '\n'.
func (t *Table) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			t.buf = append(t.buf, p...)
			break
		}
		if len(t.buf) > 0 {
			t.buf = append(t.buf, p[:i]...)
			t.addLine(string(t.buf))
			t.buf = t.buf[:0]
		} else {
			t.addLine(string(p[:i]))
		}
		p = p[i+1:]
	}
	return n, nil
}

func (t *Table) addLine(s string) {
	t.size += len(s)
	line := make([]cell, 0, strings.Count(s, "\t")+1)
	for {
		c, rest, more := strings.Cut(s, "\t")
		line = append(line, cell{text: c, width: t.width(c)})
		if !more {
			break
		}
		s = rest
	}
	t.lines = append(t.lines, line)
}

// Flush writes the lines written so far, laid out, and an unfinished last
// line as it is.
func (t *Table) Flush() error {
	var out bytes.Buffer
	out.Grow(t.size*2 + len(t.buf))
	t.format(&out, nil, 0, len(t.lines))
	out.Write(t.buf)
	t.lines, t.buf, t.size = nil, nil, 0
	_, err := t.w.Write(out.Bytes())
	return err
}

// format is tabwriter's: a column is a block of consecutive lines that
// have a cell in it; its width is its widest cell plus padding.
func (t *Table) format(out *bytes.Buffer, widths []int, line0, line1 int) {
	column := len(widths)
	for this := line0; this < line1; this++ {
		if column >= len(t.lines[this])-1 {
			continue
		}
		t.writeLines(out, widths, line0, this)
		line0 = this
		width := 0
		for ; this < line1; this++ {
			line := t.lines[this]
			if column >= len(line)-1 {
				break
			}
			if w := line[column].width + tablePadding; w > width {
				width = w
			}
		}
		t.format(out, append(widths, width), line0, this)
		line0 = this
	}
	t.writeLines(out, widths, line0, line1)
}

func (t *Table) writeLines(out *bytes.Buffer, widths []int, line0, line1 int) {
	for _, line := range t.lines[line0:line1] {
		for j, c := range line {
			out.WriteString(c.text)
			if j < len(widths) && j < len(line)-1 {
				for n := widths[j] - c.width; n > 0; n -= len(spaces) {
					out.WriteString(spaces[:min(n, len(spaces))])
				}
			}
		}
		out.WriteByte('\n')
	}
}

// width is s's display width; plain ASCII, most cells, is counted
// without ansi's grapheme parsing (list prints 10,000 rows).
func (t *Table) width(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || c < 0x20 {
			if w, ok := t.widths[s]; ok {
				return w
			}
			if t.widths == nil {
				t.widths = map[string]int{}
			}
			w := ansi.StringWidth(s)
			t.widths[s] = w
			return w
		}
	}
	return len(s)
}
