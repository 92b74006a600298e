package spec

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestCapacityFields(t *testing.T) {
	p, err := Parse("plan.yaml", []byte(`name: p
resources: {cpus: 8, memory: 24G, gpus: 2}
pools: {db: 2, api: 5}
cpus: 1
steps:
  - {id: a, run: x, gpus: 1, pool: db}
  - {id: b, run: x, pools: [api, db], memory: 6G, foreach: [u, v]}
  - {id: c, run: x, cpus: 2, executor: slurm}
end: {run: x}
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Resources != (Capacity{CPUs: 8, Memory: 24 << 30, GPUs: 2}) {
		t.Errorf("Resources = %+v", p.Resources)
	}
	if !reflect.DeepEqual(p.Pools, map[string]int{"db": 2, "api": 5}) || !reflect.DeepEqual(p.PoolNames, []string{"db", "api"}) {
		t.Errorf("Pools = %v %v", p.Pools, p.PoolNames)
	}
	a, bu, b, c := p.Step("a"), p.Step("b[u]"), p.Step("b"), p.Step("c")
	if a.GPUs != 1 || !reflect.DeepEqual(a.Pools, []string{"db"}) || a.Request() != (Capacity{CPUs: 1, GPUs: 1}) {
		t.Errorf("a: %d %v %+v", a.GPUs, a.Pools, a.Request())
	}
	// An item requests what its fan-out step does.
	if bu == nil || !reflect.DeepEqual(bu.Pools, []string{"api", "db"}) || bu.Request() != (Capacity{CPUs: 1, Memory: 6 << 30}) {
		t.Errorf("b[u]: %+v", bu)
	}
	if got := b.RequestText(); got != "1 CPU, 6GiB, pools api, db" {
		t.Errorf("b.RequestText = %q", got)
	}
	if got := a.RequestText(); got != "1 CPU, 1 GPU, pool db" {
		t.Errorf("a.RequestText = %q", got)
	}
	// A Slurm step asks its scheduler, not this machine.
	if c.Request() != (Capacity{}) || c.Local() {
		t.Errorf("c: %+v", c.Request())
	}
	if p.End.GPUs != 0 || p.End.Pools != nil {
		t.Errorf("end: %+v", p.End)
	}
}

func TestCapacityErrors(t *testing.T) {
	head := "name: p\n"
	step := "steps: [{id: a, run: x}]\n"
	for _, c := range []struct{ plan, want string }{
		{head + "resources: {cpus: 0}\n" + step, `plan.yaml:2:19: resources: cpus: must be at least 1, not 0`},
		{head + "resources: {memory: 2X}\n" + step, `plan.yaml:2:21: resources: memory: bad size "2X"`},
		{head + "resources: {gpus: 0}\n" + step, `plan.yaml:2:19: resources: gpus: must be at least 1, not 0`},
		{head + "resources: {cpu: 2}\n" + step, `plan.yaml:2:13: resources: unknown field "cpu" (did you mean "cpus"?)`},
		{head + "resources: 4\n" + step, `plan.yaml:2:12: resources: must be a mapping, not an integer`},
		{head + "pools: {db: 0}\n" + step, `plan.yaml:2:13: pools: db: must be at least 1, not 0`},
		{head + "pools: {db: x}\n" + step, `plan.yaml:2:13: pools: db: must be an integer, not "x"`},
		{head + "pools: {DB: 1}\n" + step, `plan.yaml:2:9: pools: key "DB" must match [a-z0-9][a-z0-9._-]*`},
		{head + "pools: [db]\n" + step, `plan.yaml:2:8: pools: must be a mapping of names to integers, not a list`},
		{head + "steps: [{id: a, run: x, gpus: -1}]\n", `plan.yaml:2:31: step "a": gpus: must not be negative, not -1`},
		{head + "steps: [{id: a, run: x, gpu: 1}]\n", `plan.yaml:2:25: step "a": unknown field "gpu" (did you mean "gpus"?)`},
		{head + "pools: {db: 1}\nsteps: [{id: a, run: x, pool: dbb}]\n", `plan.yaml:3:31: step "a": pool "dbb" is not declared in pools: (did you mean "db"?)`},
		{head + "steps: [{id: a, run: x, pool: db}]\n", `plan.yaml:2:31: step "a": pool "db" is not declared (the plan has no pools:; add pools: {db: N})`},
		{head + "pools: {db: 1}\nsteps: [{id: a, run: x, pools: [db, apii]}]\n", `plan.yaml:3:37: step "a": pool "apii" is not declared in pools:`},
		{head + "pools: {db: 1}\nsteps: [{id: a, run: x, pools: [db, db]}]\n", `plan.yaml:3:37: step "a": pools: lists "db" twice`},
		{head + "pools: {db: 1}\nsteps: [{id: a, run: x, pool: db, pools: [db]}]\n", `plan.yaml:3:35: step "a": has both pool and pools (use one of them)`},
		{head + "steps: [{id: a, run: x}]\nend: {run: x, gpus: 1}\n", `plan.yaml:3:15: end step: unknown field "gpus"`},
	} {
		_, err := Parse("plan.yaml", []byte(c.plan), Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("plan %q:\n got %v\nwant %q", c.plan, err, c.want)
		}
	}
}

func TestResolveCapacity(t *testing.T) {
	machine := Capacity{CPUs: 16, Memory: 64 << 30, GPUs: 0}
	for _, tt := range []struct {
		flags, plan, want Capacity
	}{
		{Capacity{}, Capacity{}, machine},
		{Capacity{}, Capacity{CPUs: 4, GPUs: 2}, Capacity{CPUs: 4, Memory: 64 << 30, GPUs: 2}},
		{Capacity{Memory: 8 << 30}, Capacity{CPUs: 4, Memory: 24 << 30}, Capacity{CPUs: 4, Memory: 8 << 30}},
		{Capacity{CPUs: 2, GPUs: 1}, Capacity{CPUs: 4, GPUs: 2}, Capacity{CPUs: 2, Memory: 64 << 30, GPUs: 1}},
	} {
		if got := ResolveCapacity(tt.flags, tt.plan, machine); got != tt.want {
			t.Errorf("ResolveCapacity(%+v, %+v) = %+v, want %+v", tt.flags, tt.plan, got, tt.want)
		}
	}
	// A machine whose memory is unknown: no memory limit.
	if got := ResolveCapacity(Capacity{}, Capacity{}, Capacity{CPUs: 2}); got != (Capacity{CPUs: 2}) {
		t.Errorf("unknown memory: %+v", got)
	}
}

func TestCheckRequests(t *testing.T) {
	p, err := Parse("plan.yaml", []byte(`name: p
steps:
  - {id: small, run: x, cpus: 2, memory: 1G}
  - {id: big, run: x, memory: 32G}
  - {id: wide, run: x, cpus: 9, memory: 30G}
  - {id: gpu, run: x, gpus: 1, foreach: [a, b, c]}
  - {id: gpu2, run: x, gpus: 3}
  - {id: remote, run: x, cpus: 64, memory: 1T, executor: slurm}
  - {id: none, run: x}
end: {run: x, memory: 1T}
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	msgs := func(c Capacity) string {
		var out []string
		for _, d := range CheckRequests(p, c) {
			out = append(out, d.Error())
		}
		return strings.Join(out, "\n")
	}
	got := msgs(Capacity{CPUs: 8, Memory: 24 << 30})
	want := `plan.yaml:4:6: step "big": requests 32GiB memory; the run's capacity is 24GiB memory (from --memory, else the plan's resources:, else this machine's)
plan.yaml:5:6: step "wide": requests 9 CPUs and 30GiB memory; the run's capacity is 8 CPUs and 24GiB memory (from --cpus/--memory, else the plan's resources:, else this machine's)
plan.yaml:6:6: fan-out step "gpu": requests 1 GPU; the run has none (nvidia-smi -L finds none here: declare devices 0..N-1 with resources: gpus or --gpus)
plan.yaml:7:6: step "gpu2": requests 3 GPUs; the run has none (nvidia-smi -L finds none here: declare devices 0..N-1 with resources: gpus or --gpus)`
	if got != want {
		t.Errorf("CheckRequests:\n%s\nwant\n%s", got, want)
	}
	got = msgs(Capacity{CPUs: 9, Memory: 32 << 30, GPUs: 2})
	want = `plan.yaml:7:6: step "gpu2": requests 3 GPUs; the run's capacity is 2 GPUs (from --gpus, else the plan's resources:, else this machine's)`
	if got != want {
		t.Errorf("CheckRequests:\n%s\nwant\n%s", got, want)
	}
	// No limit on what is not known; GPUs still none.
	if got := msgs(Capacity{GPUs: 3}); got != "" {
		t.Errorf("unlimited: %s", got)
	}
}

func TestCapacityString(t *testing.T) {
	if got := (Capacity{CPUs: 8, Memory: 24 << 30, GPUs: 1}).String(); got != "8 CPUs, 24GiB memory, 1 GPU" {
		t.Errorf("String = %q", got)
	}
	if got := (Capacity{CPUs: 1}).String(); got != "1 CPU, unlimited memory, no GPUs" {
		t.Errorf("String = %q", got)
	}
}

// TestSubPlanStepIsLocal: a sub-plan step runs its child faber on this
// machine whatever executor its plan names, so its request is checked
// against the run's capacity (and reserved by the scheduler), where a
// Slurm step's goes to Slurm.
func TestSubPlanStepIsLocal(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "child.yaml"), []byte("name: c\nsteps:\n  - {id: a, run: x}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Parse(filepath.Join(dir, "plan.yaml"), []byte(`name: p
executor: slurm
steps:
  - {id: child, plan: child.yaml, cpus: 9}
  - {id: job, run: x, cpus: 9}
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Step("child").Local() || p.Step("job").Local() {
		t.Fatalf("Local: sub-plan %v, slurm job %v; want true, false", p.Step("child").Local(), p.Step("job").Local())
	}
	var got []string
	for _, d := range CheckRequests(p, Capacity{CPUs: 8}) {
		got = append(got, d.Error())
	}
	if len(got) != 1 || !strings.Contains(got[0], `step "child": requests 9 CPUs`) {
		t.Errorf("CheckRequests: %q, want the sub-plan step's only", got)
	}
}
