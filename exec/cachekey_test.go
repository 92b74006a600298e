package exec

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/faber-run/faber/spec"
)

func cachePlan(t *testing.T, dir string) *spec.Plan {
	t.Helper()
	src := "name: k\nsteps:\n  - id: a\n    inputs: [in, 'none/*.x']\n    outputs: [out.txt]\n    run: echo\n"
	p, err := spec.Parse(filepath.Join(dir, "plan.yaml"), []byte(src), spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCacheKey: the key covers the files under an input directory, the
// upstream keys and the cache_key output; KeyMiss names the first
// difference; a pattern that matches nothing is part of the key.
func TestCacheKey(t *testing.T) {
	dir := t.TempDir()
	p := cachePlan(t, dir)
	s := p.Step("a")
	write(t, filepath.Join(dir, "in", "x.csv"), "1")
	write(t, filepath.Join(dir, "in", "sub", "y.csv"), "2")
	base, err := ProbeCache(context.Background(), p, s, map[string]string{"up": "k1"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(base.Inputs) != 3 || base.Inputs["in/sub/y.csv"] == "" || base.Inputs["none/*.x (no match)"] != "-" {
		t.Fatalf("inputs: %v", base.Inputs)
	}
	entry := &CacheEntry{Key: base.Key, DefHash: base.DefHash, Mode: base.Mode, Inputs: base.Inputs, Needs: base.Needs}
	same, _ := ProbeCache(context.Background(), p, s, map[string]string{"up": "k1"}, "")
	if same.Key != base.Key || KeyMiss(entry, same) != "" {
		t.Fatalf("same files, different key: %s", KeyMiss(entry, same))
	}
	tests := []struct {
		name  string
		setup func()
		needs map[string]string
		out   string
		want  string
	}{
		{"upstream", func() {}, map[string]string{"up": "k2"}, "", "upstream changed: up"},
		{"cache_key", func() {}, map[string]string{"up": "k1"}, "v2", "cache_key output changed"},
		{"changed", func() { write(t, filepath.Join(dir, "in", "x.csv"), "9") }, map[string]string{"up": "k1"}, "", "input changed: in/x.csv"},
		{"added", func() {
			write(t, filepath.Join(dir, "in", "x.csv"), "1")
			write(t, filepath.Join(dir, "in", "z.csv"), "3")
		}, map[string]string{"up": "k1"}, "", "input added: in/z.csv"},
		{"no longer empty", func() { os.Remove(filepath.Join(dir, "in", "z.csv")); write(t, filepath.Join(dir, "none", "a.x"), "3") }, map[string]string{"up": "k1"}, "", "input added: none/a.x"},
		{"removed", func() { os.RemoveAll(filepath.Join(dir, "none")); os.Remove(filepath.Join(dir, "in", "sub", "y.csv")) }, map[string]string{"up": "k1"}, "", "input removed: in/sub/y.csv"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup()
			pr, err := ProbeCache(context.Background(), p, s, tc.needs, tc.out)
			if err != nil {
				t.Fatal(err)
			}
			if pr.Key == base.Key {
				t.Error("key did not change")
			}
			if got := KeyMiss(entry, pr); got != tc.want {
				t.Errorf("KeyMiss = %q, want %q", got, tc.want)
			}
		})
	}
	if KeyMiss(nil, base) != "no earlier success" {
		t.Error("no entry")
	}
}

// TestOutputs: every declared output must exist after exit 0; a recorded
// output that is gone or changed is a miss.
func TestOutputs(t *testing.T) {
	dir := t.TempDir()
	p := cachePlan(t, dir)
	s := p.Step("a")
	if _, err := HashOutputs(context.Background(), p, s); !IsOutputMissing(err) {
		t.Fatalf("missing output: %v", err)
	}
	write(t, filepath.Join(dir, "out.txt"), "o")
	outs, err := HashOutputs(context.Background(), p, s)
	if err != nil {
		t.Fatal(err)
	}
	e := &CacheEntry{Mode: spec.CacheContent, Outputs: outs}
	if why := OutputsMiss(context.Background(), p, s, e); why != "" {
		t.Fatal(why)
	}
	write(t, filepath.Join(dir, "out.txt"), "p")
	if why := OutputsMiss(context.Background(), p, s, e); why != "output changed: out.txt" {
		t.Fatal(why)
	}
	os.Remove(filepath.Join(dir, "out.txt"))
	if why := OutputsMiss(context.Background(), p, s, e); why != "output missing: out.txt" {
		t.Fatal(why)
	}
}
