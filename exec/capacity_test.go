package exec

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/faber-run/faber/spec"
)

func TestMemTotal(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
	}{
		{"MemTotal:       16314436 kB\nMemFree:  1 kB\n", 16314436 * 1024},
		{"MemFree: 1 kB\nMemTotal: 2048 kB\n", 2048 * 1024},
		{"MemFree: 1 kB\n", 0},
		{"MemTotal: x kB\n", 0},
		{"", 0},
	} {
		if got := memTotal([]byte(tt.in)); got != tt.want {
			t.Errorf("memTotal(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestCountGPULines(t *testing.T) {
	out := "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-1)\n  MIG 1g.5gb Device 0: (UUID: MIG-2)\nGPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-3)\n"
	if got := countGPULines([]byte(out)); got != 2 {
		t.Errorf("countGPULines = %d, want 2", got)
	}
	if got := countGPULines(nil); got != 0 {
		t.Errorf("countGPULines(nil) = %d", got)
	}
}

func TestMachineCapacity(t *testing.T) {
	c := MachineCapacity(true)
	if c.CPUs < 1 || c.Memory < 0 || c.GPUs < 0 {
		t.Errorf("MachineCapacity = %+v", c)
	}
	if MachineCapacity(true) != c {
		t.Error("MachineCapacity changed between calls")
	}
	// Without gpus, the same but for the GPUs, which are not looked up.
	if n := MachineCapacity(false); n.GPUs != 0 || n.CPUs != c.CPUs || n.Memory != c.Memory {
		t.Errorf("MachineCapacity(false) = %+v, want %+v without GPUs", n, c)
	}
}

// TestStepHashIgnoresRequests: the definition hash of a plan without
// resources:, pools:, gpus: and pool: is what it was before they existed
// (the golden hashes below were computed at f981b8a, whose parser knew none
// of them), and adding them changes no step's hash: a request is how a
// step is scheduled, not what it does, as cpus: and memory: never were part
// of it; old runs resume and cached steps stay cached.
func TestStepHashIgnoresRequests(t *testing.T) {
	const base = "name: k\ncpus: 1\nmemory: 1G\nsteps:\n" +
		"  - id: a\n    run: \"echo {attempt}\"\n    cpus: 2\n    memory: 2G\n%s" +
		"  - id: b\n    foreach: [x, y]\n    run: \"echo {item}\"\n%s"
	parse := func(src string) *spec.Plan {
		t.Helper()
		p, err := spec.Parse(filepath.Join(t.TempDir(), "plan.yaml"), []byte(src), spec.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := parse(fmt.Sprintf(base, "", ""))
	with := parse("resources: {cpus: 8, memory: 16G, gpus: 2}\npools: {db: 1}\n" +
		fmt.Sprintf(base, "    gpus: 1\n    pool: db\n", "    gpus: 2\n    pools: [db]\n"))
	want := map[string]string{
		"a":    "fb3679da81a6cff3b33549c5",
		"b[x]": "dc85084800dcc4e809c6b932",
		"b[y]": "8190f46ec4441af7b6e45142",
		"b":    "83a6a9390a84feaaded40938",
	}
	for _, s := range old.Steps {
		got := StepHash(old, s)
		if got != want[s.ID] {
			t.Errorf("StepHash(%s) = %s, want %s (as at f981b8a)", s.ID, got, want[s.ID])
		}
		if w := with.Step(s.ID); w == nil || StepHash(with, w) != got {
			t.Errorf("step %s: a request changed its hash", s.ID)
		}
	}
	if w := with.Step("b[x]"); w == nil || w.GPUs != 2 || len(w.Pools) != 1 {
		t.Errorf("item b[x] does not inherit its fan-out's request: %+v", w)
	}
}
