package exec

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/faber-run/faber/spec"
)

// TestWaitReason: the first resource that does not fit, what the step
// requests of it and what is free; a step that fits what is free but not
// what the head is kept says so; a step that fits has no reason.
func TestWaitReason(t *testing.T) {
	const gib = 1 << 30
	r := &Runner{
		Capacity:  spec.Capacity{CPUs: 4, Memory: 8 * gib, GPUs: 2},
		use:       inUse{cpus: 2, memory: 6 * gib, ngpus: 2, pools: []int{2, 1}},
		poolNames: []string{"db", "api"},
		poolSize:  []int{2, 2},
	}
	big := &request{cpus: 2}
	inAPI := &request{pools: []int{1}}
	cases := []struct {
		name string
		q    request
		head *request
		want string
	}{
		{"cpus", request{cpus: 3}, nil, "waiting: 3 CPUs, 2 free"},
		{"one cpu", request{cpus: 1}, big, "waiting: 1 CPU, 0 free, kept for big"},
		{"memory", request{cpus: 1, memory: 6 * gib}, nil, "waiting: 6GiB memory, 2GiB free"},
		{"gpus", request{gpus: 1}, nil, "waiting: 1 GPU, 0 free"},
		{"pool", request{pools: []int{0}}, nil, "waiting: pool db (2 of 2 in use)"},
		{"pool kept", request{pools: []int{1}}, inAPI, "waiting: pool api (1 of 2 in use), kept for big"},
		{"fits", request{cpus: 2, memory: gib}, nil, ""},
		{"fits beside the head", request{memory: gib}, big, ""},
		{"nothing", request{}, big, ""},
	}
	for _, c := range cases {
		if got := r.waitReason(&c.q, c.head, "big"); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	// No limit: a zero capacity member never makes a step wait.
	r.Capacity = spec.Capacity{}
	if got := r.waitReason(&request{cpus: 64, memory: 64 * gib}, nil, ""); got != "" {
		t.Errorf("no capacity: %q", got)
	}
}

// TestCapacityText: the capacity line of faber status.
func TestCapacityText(t *testing.T) {
	const gib = 1 << 30
	cases := []struct {
		u    Usage
		want string
	}{
		{Usage{Capacity: Amounts{CPUs: 4, MemoryBytes: 8 * gib}, InUse: Amounts{CPUs: 3, MemoryBytes: 6 * gib}},
			"capacity: 4 CPUs, 8GiB; in use: 3 CPUs, 6GiB"},
		{Usage{Capacity: Amounts{CPUs: 1, MemoryBytes: 8 * gib, GPUs: 2, Pools: map[string]int{"db": 2, "api": 5}},
			InUse: Amounts{CPUs: 1, GPUs: 1, Pools: map[string]int{"db": 2}}},
			"capacity: 1 CPU, 8GiB, 2 GPUs; in use: 1 CPU, no memory, 1 GPU; pools api 0/5, db 2/2"},
		{Usage{}, "capacity: no limit; in use: nothing"},
	}
	for _, c := range cases {
		if got := c.u.CapacityText(); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}

// TestUsageOfRun: asked over Control while a one-CPU run holds its CPU,
// the session names the step and the fan-out items that wait for it, in
// plan order, and what is in use.
func TestUsageOfRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a plan")
	}
	ctl := make(chan ControlReq)
	dir := t.TempDir()
	got := make(chan *Usage, 1)
	go func() {
		// Ask until the long step holds the CPU and the others wait.
		for {
			ch := make(chan *Usage, 1)
			select {
			case ctl <- ControlReq{Usage: ch}:
			case <-t.Context().Done():
				return
			}
			u := <-ch
			if len(u.Waiting) > 0 {
				got <- u
				return
			}
		}
	}()
	text := `
name: t
jobs: 4
cpus: 1
steps:
  - id: long
    needs: []
    run: "while [ ! -e release ]; do sleep 0.01; done"
  - id: items
    needs: []
    foreach: [a, b]
    run: "true"
`
	done := make(chan struct{})
	go func() {
		defer close(done)
		var u *Usage
		select {
		case u = <-got:
		case <-t.Context().Done():
			return
		}
		if u.Capacity.CPUs != 1 || u.InUse.CPUs != 1 || len(u.Waiting) != 2 {
			t.Errorf("usage %+v, want two items waiting", u)
		} else {
			for i, w := range u.Waiting {
				if !strings.HasPrefix(w.Step, "items") || w.Reason != "waiting: 1 CPU, 0 free" {
					t.Errorf("waiting[%d] = %+v", i, w)
				}
			}
			if u.Waiting[0].Step >= u.Waiting[1].Step {
				t.Errorf("not in plan order: %+v", u.Waiting)
			}
		}
		_ = os.WriteFile(filepath.Join(dir, "release"), nil, 0o644)
	}()
	if runtime.GOOS == "windows" {
		t.Skip("the plan uses sh")
	}
	p := writePlan(t, dir, text)
	r := &Runner{Plan: p, RunID: "t-20260101T000000-abcd", RunDir: filepath.Join(dir, "run"), Store: &fakeStore{},
		Jobs: 4, Capacity: spec.Capacity{CPUs: 1}, Control: ctl}
	if status, err := r.Run(t.Context(), nil); err != nil || status != RunSuccess {
		t.Fatalf("status %s, err %v", status, err)
	}
	select {
	case <-done:
	default:
		t.Fatal("no step was seen waiting") // long ran without its release
	}
}

// TestUsageNoRequests: a session none of whose steps requests anything
// has no usage to tell (faber status shows it as before requests).
func TestUsageNoRequests(t *testing.T) {
	r := &Runner{Capacity: spec.Capacity{CPUs: 4, Memory: 1 << 30}}
	if u := r.usage(); u != nil {
		t.Errorf("usage %+v, want nil", u)
	}
}
