package tui

import (
	"reflect"
	"testing"

	"github.com/charmbracelet/lipgloss"
)

// TestPlainRender: without colour, Styles.Render returns what lipgloss
// renders, for every style, whether or not it takes the shortcut.
func TestPlainRender(t *testing.T) {
	strs := []string{
		"", " ", "x", "✓", "≡", "t.item-17 |", "build ↳ child-20261127T113021-ad66", "12ms",
		"  lead and trail  ", "wide 世界 and emoji 🙂", "\x1b[31mred\x1b[0m", "nul\x00byte", "bell\a",
		"tab\there", "two\nlines", "crlf\r\nend", "cr\ronly", "trailing\n", "\t", "\n",
		string([]byte{0xff, 0xfe}), "a\u00a0b", "zero\u200bwidth", "comb\u0301ining",
	}
	s := NewStyles(false)
	v := reflect.ValueOf(s)
	for i := 0; i < v.NumField(); i++ {
		if !v.Type().Field(i).IsExported() {
			continue
		}
		st, ok := v.Field(i).Interface().(lipgloss.Style)
		if !ok {
			continue
		}
		name := v.Type().Field(i).Name
		for _, str := range strs {
			if got, want := s.Render(st, str), st.Render(str); got != want {
				t.Errorf("%s.Render(%q) = %q, lipgloss renders %q", name, str, got, want)
			}
		}
	}
}
