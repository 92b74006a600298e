package spec

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the parser as YAML and as JSON: it must
// never panic, and a rejected plan always has at least one error.
func FuzzParse(f *testing.F) {
	f.Add([]byte(kitchenSink))
	f.Add([]byte("name: x\nsteps: [{id: a, run: echo {a}}]\n"))
	f.Add([]byte(`{"name": "x", "steps": [{"id": "a", "run": "x", "needs": ["b"]}, {"id": "b", "run": "y", "needs": ["a"]}]}`))
	f.Add([]byte("name: x\nsteps:\n  - &s {id: a, run: x}\n  - <<: *s\n    id: b\n"))
	f.Add([]byte("name: x\nsteps: &s [*s]\n"))
	f.Add([]byte("name: x\nsteps:\n  - id: a\n    run: x\n    result_handling: {on_failure: {command: /x, args: {a: true}}}\n"))
	f.Add([]byte("\x00\xff\xfe"))
	f.Add([]byte("---\n---\n"))
	if entries, err := os.ReadDir("testdata"); err == nil {
		for _, e := range entries {
			if data, err := os.ReadFile(filepath.Join("testdata", e.Name())); err == nil {
				f.Add(data)
			}
		}
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{"plan.yaml", "plan.json"} {
			p, err := Parse(filepath.Join(dir, name), data, Options{})
			if err != nil {
				inv, ok := err.(*Invalid)
				if !ok || len(inv.Errors) == 0 {
					t.Fatalf("error %T %v without diagnostics", err, err)
				}
				for _, d := range inv.Errors {
					if strings.Contains(d.Message, "\n") {
						t.Fatalf("multi-line message %q", d.Message)
					}
					if strings.Contains(d.Message, "internal error") {
						t.Fatalf("recovered panic: %s", d.Message)
					}
				}
				continue
			}
			if p == nil || len(p.Steps) == 0 || p.Name == "" {
				t.Fatalf("accepted plan without steps or name: %+v", p)
			}
			for _, s := range p.Steps {
				_ = p.Downstream(s.ID)
			}
		}
	})
}

// BenchmarkParse10k parses and validates a 10,000-step plan (SPEC: well
// under 0.5 s).
func BenchmarkParse10k(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("name: big\ncontext: {dataset: ipeds}\nfailure_handlers: [{name: h, rules: [{exit_codes: [1, 2], max_retries: 2}]}]\nphases:\n")
	for ph := 0; ph < 10; ph++ {
		sb.WriteString("  - name: p" + strconv.Itoa(ph) + "\n    parallel: " + strconv.FormatBool(ph%2 == 1) + "\n    steps:\n")
		for i := 0; i < 1000; i++ {
			id := "s" + strconv.Itoa(ph*1000+i)
			sb.WriteString("      - id: " + id + "\n        run: ./work.sh --data {dataset} --step {step_id} " + id + "\n        timeout: 10m\n        failure_handler: h\n        env: {A: '{run_id}'}\n")
			if i%10 == 5 {
				sb.WriteString("        needs: [s" + strconv.Itoa(ph*1000) + "]\n")
			}
		}
	}
	data := []byte(sb.String())
	file := filepath.Join(b.TempDir(), "plan.yaml")
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, err := Parse(file, data, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Steps) != 10000 {
			b.Fatal(len(p.Steps))
		}
	}
}
