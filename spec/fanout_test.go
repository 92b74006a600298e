package spec

import (
	"slices"
	"testing"
	"unicode/utf8"
)

// TestCleanKey: the fast check of an item's value agrees with keyChars
// on every character, so a value is kept as its key exactly when the
// regexp would leave it as it is.
func TestCleanKey(t *testing.T) {
	for c := rune(0); c < 0x300; c++ {
		v := "a" + string(c) + "b"
		if c >= utf8.RuneSelf && c < 0x100 {
			v = "a" + string([]byte{byte(c)}) + "b" // a lone byte, not UTF-8
		}
		if got, want := cleanKey(v), !keyChars.MatchString(v); got != want {
			t.Errorf("cleanKey(%q) = %v, keyChars says %v", v, got, want)
		}
	}
	if !cleanKey("") {
		t.Error(`cleanKey("") = false`)
	}
}

// TestJoinDeps: a join's dependencies are its needs then its items, and
// its item ids the tail of that list, whatever room the ids' array has;
// appending to either leaves the other as it is.
func TestJoinDeps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		needs []string
		room  int // capacity of the ids' array beyond its length
	}{
		{"no needs", nil, 0},
		{"needs, room in front", []string{"a", "b"}, 2},
		{"needs, more room", []string{"a"}, 5},
		{"needs, no room", []string{"a", "b"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids := append(make([]string, 0, 3+tc.room), "t[1]", "t[2]", "t[3]")
			deps, items := joinDeps(tc.needs, ids)
			want := append(append([]string{}, tc.needs...), "t[1]", "t[2]", "t[3]")
			if !slices.Equal(deps, want) || !slices.Equal(items, want[len(tc.needs):]) {
				t.Fatalf("deps %v, items %v; want %v and its last 3", deps, items, want)
			}
			_ = append(items, "x")
			_ = append(deps, "y")
			if !slices.Equal(deps, want) || !slices.Equal(items, want[len(tc.needs):]) {
				t.Fatalf("after appends: deps %v, items %v; want %v and its last 3", deps, items, want)
			}
		})
	}
}

// TestJoinDepsOfPlan: a fan-out's join needs the step's own needs, then
// each item, for a fan-out read at load and one given its items later.
func TestJoinDepsOfPlan(t *testing.T) {
	text := `name: j
steps:
  - {id: a, run: "true"}
  - {id: f, foreach: [x, y], needs: [a], run: "true"}
  - {id: g, foreach: {glob: "*.txt"}, needs: [a, f], run: "true"}
`
	p, err := Parse("plan.yaml", []byte(text), Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, g := p.Step("f"), p.Step("g")
	if want := []string{"a", "f[x]", "f[y]"}; !slices.Equal(f.Deps, want) || !slices.Equal(f.FanOut.ItemIDs, want[1:]) {
		t.Fatalf("f: deps %v, items %v; want %v", f.Deps, f.FanOut.ItemIDs, want)
	}
	p.SetItems(g, []string{"1.txt", "2.txt"})
	if want := []string{"a", "f", "g[1.txt]", "g[2.txt]"}; !slices.Equal(g.Deps, want) || !slices.Equal(g.FanOut.ItemIDs, want[2:]) {
		t.Fatalf("g: deps %v, items %v; want %v", g.Deps, g.FanOut.ItemIDs, want)
	}
	for _, id := range g.FanOut.ItemIDs {
		if it := p.Step(id); !slices.Equal(it.Deps, []string{"a", "f"}) {
			t.Fatalf("%s: deps %v, want [a f]", id, it.Deps)
		}
	}
}
