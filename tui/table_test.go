package tui

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/charmbracelet/x/ansi"
)

// TestTableAsTabwriter: without colour codes, Table's output is byte for
// byte tabwriter's, whatever the shape of the lines (lines with fewer
// cells, lines without a tab, empty cells), so tables printed without
// colour stay as they were.
func TestTableAsTabwriter(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	words := []string{"", "a", "run", "success", "✓ success", "in_progress", "  └ child run x", "12ms", "-"}
	for i := 0; i < 300; i++ {
		var in strings.Builder
		for l := r.Intn(8); l >= 0; l-- {
			for c := r.Intn(6); c > 0; c-- {
				in.WriteString(words[r.Intn(len(words))])
				in.WriteByte('\t')
			}
			in.WriteString(words[r.Intn(len(words))])
			in.WriteByte('\n')
		}
		var want, got bytes.Buffer
		tw := tabwriter.NewWriter(&want, 0, 4, 2, ' ', 0)
		fmt.Fprint(tw, in.String())
		tw.Flush()
		tb := NewTable(&got)
		fmt.Fprint(tb, in.String())
		if err := tb.Flush(); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("input %q:\ngot\n%s\nwant\n%s", in.String(), got.String(), want.String())
		}
	}
}

// TestTableColorAligned: with colour on, every column of a table of
// coloured status cells (and a wide rune) starts at the same display
// column on every line, where tabwriter's byte count pushed them apart.
func TestTableColorAligned(t *testing.T) {
	s := NewStyles(true)
	var out bytes.Buffer
	tb := NewTable(&out)
	fmt.Fprintln(tb, "STEP\tSTATUS\tATTEMPT\tERROR")
	for _, st := range []string{"success", "failure", "in_progress", "pending", "canceled", "pending_failed"} {
		fmt.Fprintf(tb, "%s\t%s %s\t1\tboom\n", "s-"+st, s.Glyph(st), s.Status(st))
	}
	fmt.Fprintln(tb, "日本\t"+s.Glyph("success")+" success\t2\t-")
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "\x1b[") {
		t.Fatalf("no colour codes in\n%s", out.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	// starts gives the display column of each cell after the first: where
	// a run of two or more spaces ends.
	starts := func(l string) []int {
		plain := ansi.Strip(l)
		var cols []int
		w, spaces := 0, 0
		for _, r := range plain {
			if r == ' ' {
				spaces++
			} else {
				if spaces >= 2 {
					cols = append(cols, w)
				}
				spaces = 0
			}
			w += ansi.StringWidth(string(r))
		}
		return cols
	}
	want := starts(lines[0])
	if len(want) != 3 {
		t.Fatalf("header columns %v", want)
	}
	for _, l := range lines[1:] {
		if got := starts(l); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("columns %v, want %v in %q", got, want, ansi.Strip(l))
		}
	}
}
