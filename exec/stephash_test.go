package exec

import (
	"path/filepath"
	"testing"

	"github.com/faber-run/faber/spec"
)

// TestStepHashGolden: definition hashes stay what earlier versions stored
// (a changed one would make every cached step and resumed run "changed"),
// with and without references in run and env.
func TestStepHashGolden(t *testing.T) {
	src := "name: k\ncontext: {c: ctx}\nsteps:\n" +
		"  - id: a\n    foreach: {range: [1, 2]}\n    run: \"true\"\n" +
		"  - id: b\n    foreach: {range: [1, 2]}\n    run: \"echo {item} {c} {attempt} ${HOME}\"\n" +
		"  - id: c\n    run: \"echo }} {{x}}\"\n    env: {A: plain}\n" +
		"  - id: d\n    run: \"true\"\n    env: {A: \"{c}-{step_id}\", B: plain}\n"
	p, err := spec.Parse(filepath.Join(t.TempDir(), "plan.yaml"), []byte(src), spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ // computed by the code before StepHash skipped the variables
		"a[1]": "5f78466bcfc02b07624ccfef",
		"a[2]": "5f78466bcfc02b07624ccfef",
		"a":    "6da76cdb70619466a038c43d",
		"b[1]": "d6b2dfce865837171f06e7a6",
		"b[2]": "1d4db6bb44c2084512e4d7c3",
		"b":    "ac89a32cf3e454c676a0b93c",
		"c":    "9d98789761063389e1bec757",
		"d":    "238d189ed8105cb91085bcbb",
	}
	for _, s := range p.Steps {
		if got := StepHash(p, s); got != want[s.ID] {
			t.Errorf("StepHash(%s) = %s, want %s", s.ID, got, want[s.ID])
		}
	}
	if len(p.Steps) != len(want) {
		t.Errorf("%d steps, want %d", len(p.Steps), len(want))
	}
}

// BenchmarkStepHashItem: the hash of one item of a fan-out whose run has
// no reference.
func BenchmarkStepHashItem(b *testing.B) {
	src := "name: k\nsteps:\n  - id: t\n    foreach: {range: [1, 100]}\n    inputs: [\"in/{item}.txt\"]\n    run: \"true\"\n"
	p, err := spec.Parse(filepath.Join(b.TempDir(), "plan.yaml"), []byte(src), spec.Options{})
	if err != nil {
		b.Fatal(err)
	}
	s := p.Steps[5]
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		StepHash(p, s)
	}
}

// TestStepHashGoldenExecutors: a Slurm step's hash covers its executor and
// slurm block exactly as before executors were one seam (executor.go), and
// a local step's, with or without a slurm block, covers neither.
func TestStepHashGoldenExecutors(t *testing.T) {
	src := "name: k\nsteps:\n" +
		"  - id: e\n    executor: slurm\n    run: \"true\"\n" +
		"  - id: f\n    executor: slurm\n    slurm: {partition: gpu, time: \"1:00:00\", extra_args: [--exclusive]}\n    run: \"echo <&>\"\n" +
		"  - id: g\n    executor: local\n    slurm: {partition: gpu}\n    run: \"true\"\n"
	p, err := spec.Parse(filepath.Join(t.TempDir(), "plan.yaml"), []byte(src), spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ // computed by the code before the seam
		"e": "97a11c8b2b1215c8391d60db",
		"f": "1f5767079c8e8f41d28e57b1",
		"g": "6eec4b58415a9eb45fccf4d3",
	}
	for _, s := range p.Steps {
		if got := StepHash(p, s); got != want[s.ID] {
			t.Errorf("StepHash(%s) = %s, want %s", s.ID, got, want[s.ID])
		}
	}
}
