package exec

import "testing"

func TestSpentText(t *testing.T) {
	for _, c := range []struct {
		s    Spent
		want string
	}{
		{Spent{}, ""},
		{Spent{Attempts: 3}, ""},
		{Spent{CostUSD: 0.75, Turns: 4}, "$0.75 · 4 turns"},
		{Spent{CostUSD: 0.004, Turns: 1, Tokens: 1}, "$0.004 · 1 turn · 1 token"},
		{Spent{Tokens: 18250}, "18250 tokens"},
	} {
		if got := c.s.Text(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.s, got, c.want)
		}
	}
}
