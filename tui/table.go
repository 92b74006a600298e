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
}

type cell struct {
	text  string
	width int
}

// tablePadding is the space between two columns.
const tablePadding = 2

// NewTable returns a Table writing to w.
func NewTable(w io.Writer) *Table {
	return &Table{w: w}
}

// Write takes tab-separated cells, lines ending in '\n'.
func (t *Table) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			break
		}
		t.addLine(string(t.buf[:i]))
		t.buf = t.buf[i+1:]
	}
	return len(p), nil
}

func (t *Table) addLine(s string) {
	parts := strings.Split(s, "\t")
	line := make([]cell, len(parts))
	for i, p := range parts {
		line[i] = cell{text: p, width: textWidth(p)}
	}
	t.lines = append(t.lines, line)
}

// Flush writes the lines written so far, laid out, and an unfinished last
// line as it is.
func (t *Table) Flush() error {
	var out bytes.Buffer
	t.format(&out, nil, 0, len(t.lines))
	out.Write(t.buf)
	t.lines, t.buf = nil, nil
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
				for n := c.width; n < widths[j]; n++ {
					out.WriteByte(' ')
				}
			}
		}
		out.WriteByte('\n')
	}
}

// textWidth is s's display width; plain ASCII, most cells, is counted
// without ansi's grapheme parsing (list prints 10,000 rows).
func textWidth(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || c < 0x20 {
			return ansi.StringWidth(s)
		}
	}
	return len(s)
}
