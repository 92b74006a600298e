package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/faber-run/faber/state"
)

// list --limit N reads only the newest runs, yet shows what filtering the
// whole listing would: with child runs (listed under their parents, not
// counted), filters by status and plan, and runs whose start is far from
// their meta.json's time.
func TestListLimitReadsWhatAllWould(t *testing.T) {
	dir := t.TempDir()
	first := time.Now().Add(-40 * time.Hour)
	makeRuns(t, dir, 40, first)
	ids, err := state.RunIDs(dir)
	if err != nil {
		t.Fatal(err)
	}
	all := readRuns(dir, ids)
	// Every third run failed; runs 10..14 are children of run 9, run 30 of
	// run 2 (an old parent), and run 20 a grandchild of run 9.
	byStart := map[int]string{}
	for _, r := range all {
		i := int(r.meta.StartedAt.Sub(first).Round(time.Minute) / time.Minute)
		byStart[i] = r.meta.RunID
	}
	edit := func(i int, f func(s *state.Summary)) {
		path := filepath.Join(state.RunDir(dir, byStart[i]), "summary.json")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var s state.Summary
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		f(&s)
		if b, err = json.Marshal(s); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 40; i += 3 {
		edit(i, func(s *state.Summary) { s.Status = "failed" })
	}
	for i := 10; i < 15; i++ {
		edit(i, func(s *state.Summary) { s.ParentRunID = byStart[9]; s.Plan = "child" })
	}
	edit(30, func(s *state.Summary) { s.ParentRunID = byStart[2]; s.Plan = "child" })
	edit(20, func(s *state.Summary) { s.ParentRunID = byStart[12]; s.Plan = "child" })
	if len(byStart) != 40 {
		t.Fatalf("%d runs", len(byStart))
	}
	if n := len(newestRuns(dir, ids, listFilter{limit: 1})); n >= 10 {
		t.Fatalf("--limit 1 read %d runs of 40", n)
	}
	for _, c := range []ListCmd{
		{Limit: 1}, {Limit: 3}, {Limit: 10}, {Limit: 25}, {Limit: 100},
		{Limit: 2, Status: []string{"failed"}}, {Limit: 4, Plan: "child"}, {Limit: 5, Plan: "bench"},
		{Limit: 1, Status: []string{"interrupted"}},
	} {
		t.Run(fmt.Sprintf("%+v", c), func(t *testing.T) {
			f, err := newListFilter(&c)
			if err != nil {
				t.Fatal(err)
			}
			got, err := listItems(dir, f)
			if err != nil {
				t.Fatal(err)
			}
			f0 := f
			f0.limit = 0
			every, err := listItems(dir, f0)
			if err != nil {
				t.Fatal(err)
			}
			want := f.apply(every)
			if got = f.apply(got); !reflect.DeepEqual(got, want) {
				t.Fatalf("got %d runs:\n%v\nwant %d:\n%v", len(got), got, len(want), want)
			}
		})
	}
}
