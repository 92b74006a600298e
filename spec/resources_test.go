package spec

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	ok := map[string]int64{
		"2GiB": 2 << 30, "2G": 2 << 30, "2g": 2 << 30, "2gb": 2 << 30, "512MiB": 512 << 20,
		"512M": 512 << 20, "1.5G": 3 << 29, "1T": 1 << 40, "1048576": 1 << 20, "1024K": 1 << 20,
		" 64 MiB ": 64 << 20,
	}
	for in, want := range ok {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "G", "2X", "-1G", "1.G", ".5G", "1..5G", "2 GiBs", "1K", "99999999T", "2GiB2"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{3 << 29: "1.5GiB", 512 << 20: "512MiB", 1000: "1000B", 1 << 40: "1TiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestGrow(t *testing.T) {
	if got := Grow(100<<20, 1.5, 0); got != 150<<20 {
		t.Errorf("Grow = %d", got)
	}
	if got := Grow(100<<20, 2, 150<<20); got != 150<<20 {
		t.Errorf("Grow capped = %d", got)
	}
	if got := Grow(200<<20, 2, 150<<20); got != 200<<20 {
		t.Errorf("Grow never shrinks: %d", got)
	}
}

func TestResourceFields(t *testing.T) {
	plan := `name: p
memory: 1GiB
cpus: 2
failure_handlers:
  - name: mem
    rules:
      - on: [oom]
        memory_factor: 1.5
        max_memory: 4GiB
      - on: [timeout]
        exit_codes: [3]
        timeout_factor: 2
        max_timeout: 1h
steps:
  - {id: a, run: x, failure_handler: mem}
  - {id: b, run: x, memory: 256MiB, cpus: 1}
`
	p, err := Parse("plan.yaml", []byte(plan), Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := p.Steps[0], p.Steps[1]
	if a.Memory != 1<<30 || a.CPUs != 2 || b.Memory != 256<<20 || b.CPUs != 1 {
		t.Errorf("limits: a %d/%d b %d/%d", a.Memory, a.CPUs, b.Memory, b.CPUs)
	}
	r := p.FailureHandlers["mem"].Rules
	if r[0].On[0] != CauseOOM || r[0].MemoryFactor != 1.5 || r[0].MaxMemory != 4<<30 {
		t.Errorf("rule 0: %+v", r[0])
	}
	if r[1].On[0] != CauseTimeout || r[1].TimeoutFactor != 2 || r[1].MaxTimeout.Hours() != 1 || r[1].ExitCodes[0] != 3 {
		t.Errorf("rule 1: %+v", r[1])
	}
}

func TestResourceErrors(t *testing.T) {
	head := "name: p\n"
	for _, c := range []struct{ plan, want string }{
		{head + "steps: [{id: a, run: x, memory: 2X}]\n", `plan.yaml:2:33: step "a": memory: bad size "2X"`},
		{head + "memory: [1]\nsteps: [{id: a, run: x}]\n", `plan.yaml:2:9: memory: must be a size like 512MiB or 2GiB, not a list`},
		{head + "steps: [{id: a, run: x, cpus: 0}]\n", `plan.yaml:2:31: step "a": cpus: must be at least 1, not 0`},
		{head + "steps: [{id: a, run: x, memory: 1G, slurm: {mem: 2G}}]\n", `step "a": has both memory and slurm: mem`},
		{head + "failure_handlers:\n  - name: h\n    rules:\n      - on: [oops]\nsteps: [{id: a, run: x}]\n", `plan.yaml:5:14: failure handler "h": rules[0]: on: unknown cause "oops" (use oom, timeout, rejected or budget)`},
		{head + "failure_handlers:\n  - name: h\n    rules:\n      - {on: [oom], memory_factor: 0.5}\nsteps: [{id: a, run: x}]\n", `memory_factor: 0.5 must be a number from 1 to 100`},
		{head + "failure_handlers:\n  - name: h\n    rules:\n      - {on: [oom], max_memory: 2G}\nsteps: [{id: a, run: x}]\n", `max_memory without memory_factor`},
	} {
		_, err := Parse("plan.yaml", []byte(c.plan), Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("plan %q: got %v, want %q", c.plan, err, c.want)
		}
	}
}
