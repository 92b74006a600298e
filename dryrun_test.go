package main

import (
	"testing"
)

func TestDotID(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"build", `"build"`},
		{`say "hi"`, `"say \"hi\""`},
		{`a\b`, `"a\\b"`},
		{"two\nlines\r", `"two\nlines"`},
	} {
		if got := dotID(tt.in); got != tt.want {
			t.Errorf("dotID(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
