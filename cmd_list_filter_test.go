package main

import (
	"slices"
	"testing"
)

func TestListFilter(t *testing.T) {
	// newest first, as state.List gives them: p2 has a child c2 (which has
	// its own child g2), p1 has a child c1; c1's parent p1 and o are older.
	items := []listItem{
		{RunID: "g2", Plan: "grand", Status: "success", ParentRunID: "c2"},
		{RunID: "c2", Plan: "child", Status: "failed", ParentRunID: "p2"},
		{RunID: "p2", Plan: "parent", Status: "failed"},
		{RunID: "x", Plan: "other", Status: "pending_failed"},
		{RunID: "c1", Plan: "child", Status: "success", ParentRunID: "p1"},
		{RunID: "p1", Plan: "parent", Status: "success"},
		{RunID: "o", Plan: "orphan", Status: "success", ParentRunID: "gone"},
	}
	ids := func(its []listItem) []string {
		out := []string{}
		for _, it := range its {
			out = append(out, it.RunID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    listFilter
		want []string
	}{
		{"none", listFilter{}, []string{"g2", "c2", "p2", "x", "c1", "p1", "o"}},
		{"status", listFilter{statuses: map[string]bool{"success": true}}, []string{"g2", "c1", "p1", "o"}},
		{"statuses", listFilter{statuses: map[string]bool{"failed": true, "pending_failed": true}}, []string{"c2", "p2", "x"}},
		{"plan", listFilter{plan: "child"}, []string{"c2", "c1"}},
		{"no match", listFilter{plan: "nope"}, []string{}},
		// --limit counts trees: a parent brings its children along
		{"limit 1", listFilter{limit: 1}, []string{"g2", "c2", "p2"}},
		{"limit 2", listFilter{limit: 2}, []string{"g2", "c2", "p2", "x"}},
		{"limit 3", listFilter{limit: 3}, []string{"g2", "c2", "p2", "x", "c1", "p1"}},
		{"limit 9", listFilter{limit: 9}, []string{"g2", "c2", "p2", "x", "c1", "p1", "o"}},
		// a child whose parent is filtered out stands on its own and counts
		{"plan + limit", listFilter{plan: "child", limit: 1}, []string{"c2"}},
		{"status + limit", listFilter{statuses: map[string]bool{"success": true}, limit: 2}, []string{"g2", "c1", "p1"}},
	} {
		got := ids(tc.f.apply(slices.Clone(items)))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	// a parent cycle (hand-edited metadata) neither hangs nor shows up
	cyc := []listItem{{RunID: "a", ParentRunID: "b"}, {RunID: "b", ParentRunID: "a"}, {RunID: "c"}}
	if got := ids(listFilter{limit: 5}.apply(cyc)); !slices.Equal(got, []string{"c"}) {
		t.Errorf("cycle: got %v", got)
	}
}
