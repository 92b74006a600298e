package spec

import (
	"strings"
	"testing"
)

func TestCacheFields(t *testing.T) {
	p := mustParse(t, `name: x
context: {v: "1"}
steps:
  - id: a
    run: echo
    inputs: [data/*.csv, "in/{v}.txt"]
    outputs: [out/a]
    cache_key: [tool --version]
  - id: b
    run: echo
    inputs: [x]
    cache: mtime
  - id: c
    run: echo
  - id: d
    run: echo {item}
    foreach: [p, q]
    inputs: ["{item}.txt"]
`, Options{})
	a := p.Step("a").Cache
	if a == nil || a.Mode != CacheContent || strings.Join(a.Inputs, ",") != "data/*.csv,in/{v}.txt" || a.Outputs[0] != "out/a" || a.KeyCmds[0] != "tool --version" {
		t.Fatalf("a: %+v", a)
	}
	if b := p.Step("b").Cache; b == nil || b.Mode != CacheMtime || !b.ModeSet {
		t.Fatalf("b: %+v", b)
	}
	if p.Step("c").Cache != nil {
		t.Fatal("c has no inputs: no cache")
	}
	if it := p.Step("d[p]").Cache; !it.Enabled() || it.Inputs[0] != "{item}.txt" {
		t.Fatalf("item: %+v", it)
	}
	if p.Step("d").Cache == nil { // the join keeps it; the runner never caches joins
		t.Fatal("join: cache dropped")
	}
}

func TestCacheErrors(t *testing.T) {
	tests := []struct{ name, step, want string }{
		{"outputs without inputs", "outputs: [x]", `plan.yaml:6:5: step "a": outputs needs inputs: (a step without inputs is never cached)`},
		{"cache without inputs", "cache: content", `plan.yaml:6:5: step "a": cache needs inputs:`},
		{"bad mode", "inputs: [x]\n    cache: sometimes", `plan.yaml:7:12: step "a": cache: must be content, mtime or off, not "sometimes"`},
		{"bad glob", "inputs: ['a[']", `plan.yaml:6:14: step "a": inputs[0]: "a[" is not a valid glob`},
		{"empty inputs", "inputs: []", `plan.yaml:6:13: step "a": inputs: is empty`},
		{"unknown var", "inputs: ['{nope}.txt']", `step "a": unknown variable {nope}`},
		{"plan step", "inputs: [x]\n    plan: sub.yaml", `step "a": a plan: step cannot be cached`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := "name: x\nsteps:\n  - id: a\n    run: echo\n    needs: []\n    " + tc.step + "\n"
			if strings.Contains(tc.step, "plan:") {
				src = strings.Replace(src, "    run: echo\n", "", 1)
			}
			_, inv := parse(t, src, Options{})
			if inv == nil {
				t.Fatal("no error")
			}
			if got := diagText(inv.Errors); !strings.Contains(got, tc.want) {
				t.Fatalf("got:\n%s\nwant: %s", got, tc.want)
			}
		})
	}
}
