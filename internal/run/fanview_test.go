package run

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/faber-run/faber/spec"
)

func loadPlan(t *testing.T, dir, src string) *spec.Plan {
	t.Helper()
	p, err := spec.Parse(filepath.Join(dir, "plan.yaml"), []byte(src), spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFanOutOf: what the dry run and the graph say of each kind of fan-out,
// and that only join steps have one.
func TestFanOutOf(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "l.txt"), []byte("x\n\ny\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := loadPlan(t, dir, `name: f
steps:
  - {id: up, run: "true"}
  - {id: one, foreach: [a], run: "echo {item}", needs: []}
  - {id: r, foreach: {range: [1, 7]}, run: "echo {item}", needs: []}
  - {id: m, matrix: {a: [1, 2]}, run: "echo {item.a}", needs: []}
  - {id: g, foreach: {glob: "*.txt"}, run: "cat {item}", needs: []}
  - {id: gu, foreach: {glob: "*.txt"}, run: "cat {item}", needs: [up]}
  - {id: lu, foreach: {lines: l.txt}, run: "echo {item}", needs: [up, r]}
`)
	ReadItemsNow(p)
	for _, tt := range []struct{ id, text, items string }{
		{"one", "1 item from foreach list", "one[a]"},
		{"r", "7 items from foreach range", "r[1], r[2], r[3], r[4], r[5] and 2 more"},
		{"m", "2 items from matrix", "m[a=1], m[a=2]"},
		{"g", `items from glob "*.txt" when the step is ready (1 now)`, "g[l.txt]"},
		{"gu", `items from glob "*.txt" when the step is ready, after up (1 now)`, "gu[l.txt]"},
		{"lu", `items from lines "l.txt" when the step is ready, after up, r (2 now)`, "lu[x], lu[y]"},
	} {
		f := FanOutOf(p.Step(tt.id))
		if f == nil {
			t.Fatalf("%s: no fan-out", tt.id)
		}
		if got := f.String(); got != tt.text {
			t.Errorf("%s: String() = %q, want %q", tt.id, got, tt.text)
		}
		if got := f.ItemsText(); got != tt.items {
			t.Errorf("%s: ItemsText() = %q, want %q", tt.id, got, tt.items)
		}
		if up := tt.id == "gu" || tt.id == "lu"; f.FromUpstream != up {
			t.Errorf("%s: FromUpstream = %v", tt.id, f.FromUpstream)
		}
	}
	for _, id := range []string{"up", "one[a]", "r[7]"} {
		if FanOutOf(p.Step(id)) != nil {
			t.Errorf("%s: a fan-out on a step that is no join", id)
		}
	}
}

// TestGraphNodes: the first ShownItems items of a fan-out are nodes of
// their own; the others of one level share one node, which counts them.
func TestGraphNodes(t *testing.T) {
	p := loadPlan(t, t.TempDir(), `name: f
steps:
  - {id: w, foreach: {range: [1, 8]}, run: "echo {item}"}
  - {id: v, foreach: {range: [1, 8]}, needs: ["w[{item}]"], run: "echo {item}"}
`)
	nodes := GraphNodes(p)
	for i := 1; i <= ShownItems; i++ {
		id := spec.ItemID("w", string(rune('0'+i)))
		if n := nodes[id]; n.ID != id || n.Hidden != 0 {
			t.Errorf("%s: node %+v", id, n)
		}
	}
	g := nodes["w[6]"]
	if g == nil || g != nodes["w[8]"] || g.Hidden != 3 || g.Label != "3 more items of w" {
		t.Errorf("w[6]: node %+v", g)
	}
	if g == nodes["v[6]"] || nodes["v[6]"].Label != "3 more items of v" {
		t.Errorf("v[6]: node %+v", nodes["v[6]"])
	}
	if j := nodes["w"]; j.Join == nil || j.Join.Items != 8 {
		t.Errorf("w: node %+v", j)
	}
}
