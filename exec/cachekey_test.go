package exec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
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

// TestDigestReusesBuffers: digesting many small files (a fan-out's items,
// one input each) does not allocate a read buffer of 1 MiB for each. It
// did: a 10,000-item cached fan-out allocated 10 GB.
func TestDigestReusesBuffers(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops pooled buffers at random")
	}
	dir := t.TempDir()
	const n = 100
	for i := range n {
		write(t, filepath.Join(dir, "in", strconv.Itoa(i)), "item "+strconv.Itoa(i))
	}
	digest := func(i int) {
		if _, err := digestFiles(context.Background(), dir, []string{"in/" + strconv.Itoa(i)}, spec.CacheContent); err != nil {
			t.Fatal(err)
		}
	}
	digest(0)
	// No collection meanwhile: it would empty the pool (under load, with
	// other tests running, often enough to fail).
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		digest(i)
	}
	runtime.ReadMemStats(&after)
	// A buffer per file would be 100 MiB.
	if got := after.TotalAlloc - before.TotalAlloc; got > 10<<20 {
		t.Errorf("digesting %d small files allocated %d MiB", n, got>>20)
	}
}

// TestInputPaths: a path without wildcards is a match when it exists (a
// file, a directory standing for its files), "no match" when nothing is
// there, and an error when it is a dangling symlink, as filepath.Glob and
// a stat of its match made it.
func TestInputPaths(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "f.txt"), "1")
	write(t, filepath.Join(dir, "d", "a.txt"), "2")
	got, err := expandPaths(dir, []string{"f.txt", "d", "none.txt", "{x}.txt"}, map[string]string{"x": "f"}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"d/a.txt", "f.txt", "none.txt (no match)"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("expandPaths = %q, want %q", got, want)
	}
	if _, err := expandPaths(dir, []string{"none.txt"}, nil, true); !IsOutputMissing(err) {
		t.Errorf("a missing output: %v, want output missing", err)
	}
	if runtime.GOOS == "windows" {
		return
	}
	if err := os.Symlink(filepath.Join(dir, "gone"), filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	if _, err := expandPaths(dir, []string{"dangling"}, nil, false); err == nil {
		t.Error("a dangling symlink input: no error")
	}
}

// TestProbeKeyAsFmt: key hashes the text it always hashed (fmt's %q and
// %s), so entries written before still match.
func TestProbeKeyAsFmt(t *testing.T) {
	odd := []string{"in/1.txt", "", "a \"b\" c", "tab\there\nnl", "é世界", "\xff\xfe", "%s %q", "\\", "\x00\x7f"}
	for i, s := range odd {
		pr := &CacheProbe{DefHash: s, Mode: "content", KeyOut: odd[(i+1)%len(odd)],
			Inputs: map[string]string{}, Needs: map[string]string{}}
		for j, k := range odd {
			pr.Inputs[k] = odd[(i+j)%len(odd)]
			pr.Needs[k+"x"] = odd[(i+2*j)%len(odd)]
		}
		h := sha256.New()
		fmt.Fprintf(h, "faber-cache-v1\ndef %s\nmode %s\nkey_out %s\n", pr.DefHash, pr.Mode, pr.KeyOut)
		for _, k := range sortedKeys(pr.Inputs) {
			fmt.Fprintf(h, "in %q %s\n", k, pr.Inputs[k])
		}
		for _, k := range sortedKeys(pr.Needs) {
			fmt.Fprintf(h, "need %q %s\n", k, pr.Needs[k])
		}
		if got, want := pr.key(), hex.EncodeToString(h.Sum(nil)); got != want {
			t.Errorf("probe %d: key %s, fmt's text hashes to %s", i, got, want)
		}
	}
}

// TestDigestLiteral: a step's one input without wildcards, opened once,
// gives the name and digest expandPaths and digestFiles give (an empty
// file, one of several buffers, a symlink, a variable, a path through ..,
// an absolute path), and leaves to them everything else (a directory, no
// such file, a pattern; a FIFO: TestDigestLiteralFIFO).
func TestDigestLiteral(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "f.txt"), "1")
	write(t, filepath.Join(dir, "empty"), "")
	big := make([]byte, 2<<20+123)
	for i := range big {
		big[i] = byte(i % 251)
	}
	write(t, filepath.Join(dir, "big"), string(big))
	write(t, filepath.Join(dir, "d", "a.txt"), "2")
	vars := map[string]string{"x": "f"}
	ok := []string{"f.txt", "empty", "big", "{x}.txt", "d/../f.txt", "./f.txt", filepath.Join(dir, "big")}
	not := []string{"d", "none.txt", "*.txt", "d/*"}
	if runtime.GOOS != "windows" {
		if err := os.Symlink("big", filepath.Join(dir, "link")); err != nil {
			t.Fatal(err)
		}
		ok = append(ok, "link")
	}
	ctx := context.Background()
	for _, pat := range ok {
		name, d, good := digestLiteral(ctx, dir, pat, vars)
		if !good {
			t.Errorf("%q: not digested", pat)
			continue
		}
		files, err := expandPaths(dir, []string{pat}, vars, false)
		if err != nil {
			t.Fatal(err)
		}
		want, err := digestFiles(ctx, dir, files, spec.CacheContent)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) != 1 || want[name] != d {
			t.Errorf("%q: %s %s, the general path gives %v", pat, name, d, want)
		}
	}
	for _, pat := range not {
		if name, _, good := digestLiteral(ctx, dir, pat, vars); good {
			t.Errorf("%q: digested as %s, want it left to the general path", pat, name)
		}
	}
}
