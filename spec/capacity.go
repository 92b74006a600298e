package spec

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Capacity and requests (README "Capacity and requests"): the plan's
// resources: and pools:, a step's gpus: and pool:/pools:, how a run's
// capacity is resolved, and the check that every step's request fits it.

// counts is a mapping of names to integers of at least 1, in file order
// (pools:).
type counts struct {
	Keys []str
	Vals []intv
	Pos  Pos
	Set  bool
}

func (m *counts) decode(p *parser, n *yaml.Node, where string) {
	m.Pos, m.Set = nodePos(n), true
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return
	}
	if n.Kind != yaml.MappingNode {
		p.errorf(m.Pos, "%s: must be a mapping of names to integers, not %s", where, kindName(n))
		return
	}
	for _, kv := range p.pairs(n, where) {
		var v intv
		v.decode(p, deref(kv.v), join(where, kv.key))
		if v.Set && v.V < 1 {
			p.errorf(v.Pos, "%s: must be at least 1, not %d", join(where, kv.key), v.V)
			v.Set = false
		}
		m.Keys = append(m.Keys, str{V: kv.key, Pos: nodePos(kv.k), Set: true, Node: kv.k})
		m.Vals = append(m.Vals, v)
	}
}

func (m *counts) schema(*schemaGen) map[string]any {
	return map[string]any{
		"type":                 "object",
		"additionalProperties": map[string]any{"type": "integer", "minimum": 1},
	}
}

// resources reads the plan's resources: and pools:.
func (b *builder) resources(raw *rawPlan) {
	pl := b.plan
	if r := raw.Resources; r != nil {
		pl.Resources = Capacity{CPUs: r.CPUs.V, Memory: r.Memory.V, GPUs: r.GPUs.V}
	}
	for i, k := range raw.Pools.Keys {
		if pl.Pools == nil {
			pl.Pools = map[string]int{}
		}
		if !raw.Pools.Vals[i].Set {
			continue // reported
		}
		pl.Pools[k.V] = raw.Pools.Vals[i].V
		pl.PoolNames = append(pl.PoolNames, k.V)
	}
}

// requests reads a step's gpus: and pool: or pools:, which must name the
// plan's pools.
func (b *builder) requests(s *Step, rs *rawStep) {
	s.GPUs = rs.GPUs.V
	where := rs.Where
	check := func(name str) {
		if _, ok := b.plan.Pools[name.V]; ok {
			if contains(s.Pools, name.V) {
				b.errorf(name.Pos, "%s: pools: lists %q twice", where, name.V)
				return
			}
			s.Pools = append(s.Pools, name.V)
			return
		}
		if len(b.plan.PoolNames) == 0 {
			b.errorf(name.Pos, "%s: pool %q is not declared (the plan has no pools:; add pools: {%s: N})", where, name.V, name.V)
			return
		}
		b.errorf(name.Pos, "%s: pool %q is not declared in pools:%s", where, name.V, suggest(name.V, b.plan.PoolNames))
	}
	switch {
	case rs.Pool.Set && rs.Pools.Set:
		b.errorf(rs.keyPos("pools"), "%s: has both pool and pools (use one of them)", where)
	case rs.Pool.Set:
		check(rs.Pool)
	case rs.Pools.Set:
		for _, n := range rs.Pools.Items {
			if n.Set {
				check(n)
			}
		}
	}
}

// Local reports whether the step runs on this machine (no executor, or
// executor: local, or a sub-plan step, whose child faber runs here
// whatever executor its plan names): only such a step's cpus, memory and
// gpus are a request of the run's capacity; a Slurm or Grid Engine step
// asks its scheduler. The scheduler (exec) reads the same answer.
func (s *Step) Local() bool {
	return s.PlanPath != "" || s.Executor == "" || s.Executor == "local"
}

// Request is what the step reserves of the run's capacity while it holds
// its job slot: its effective cpus and memory (the step's, else the
// plan's) and its gpus, when it runs on this machine; nothing for a step
// of another executor. Its pools are s.Pools. A fan-out's items request
// what their fan-out step does; the end step and a fan-out's join request
// nothing (the scheduler's part).
func (s *Step) Request() Capacity {
	if !s.Local() {
		return Capacity{}
	}
	return Capacity{CPUs: s.CPUs, Memory: s.Memory, GPUs: s.GPUs}
}

// ResolveCapacity resolves a run's capacity field by field: the flag's
// (--cpus, --memory, --gpus), else the plan's (resources:), else the
// machine's; 0 stays "not set" (no limit on that resource; for GPUs, none).
func ResolveCapacity(flags, plan, machine Capacity) Capacity {
	first := func(v ...int64) int64 {
		for _, x := range v {
			if x > 0 {
				return x
			}
		}
		return 0
	}
	return Capacity{
		CPUs:   int(first(int64(flags.CPUs), int64(plan.CPUs), int64(machine.CPUs))),
		Memory: first(flags.Memory, plan.Memory, machine.Memory),
		GPUs:   int(first(int64(flags.GPUs), int64(plan.GPUs), int64(machine.GPUs))),
	}
}

// String writes a capacity as faber shows it: "8 CPUs, 24GiB memory, 2
// GPUs"; a CPU or memory field not set is "unlimited", GPUs not set "no
// GPUs".
func (c Capacity) String() string {
	cpus, mem, gpus := "unlimited CPUs", "unlimited memory", "no GPUs"
	if c.CPUs > 0 {
		cpus = count(c.CPUs, "CPU", "CPUs")
	}
	if c.Memory > 0 {
		mem = FormatSize(c.Memory) + " memory"
	}
	if c.GPUs > 0 {
		gpus = count(c.GPUs, "GPU", "GPUs")
	}
	return cpus + ", " + mem + ", " + gpus
}

// RequestText writes a step's request as dry-run shows it: "2 CPUs, 6GiB,
// 1 GPU, pool db"; "" when it requests nothing.
func (s *Step) RequestText() string {
	r := s.Request()
	var parts []string
	if r.CPUs > 0 {
		parts = append(parts, count(r.CPUs, "CPU", "CPUs"))
	}
	if r.Memory > 0 {
		parts = append(parts, FormatSize(r.Memory))
	}
	if r.GPUs > 0 {
		parts = append(parts, count(r.GPUs, "GPU", "GPUs"))
	}
	switch len(s.Pools) {
	case 0:
	case 1:
		parts = append(parts, "pool "+s.Pools[0])
	default:
		parts = append(parts, "pools "+strings.Join(s.Pools, ", "))
	}
	return strings.Join(parts, ", ")
}

func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// CheckRequests reports every step whose request does not fit the run's
// capacity c: more CPUs or memory than c has (a field of c that is 0 is
// no limit), or any GPU when c has none. One error per step (a fan-out's
// items are its fan-out step's), at the step, naming its request and the
// capacity. The end step requests nothing.
func CheckRequests(p *Plan, c Capacity) []Diagnostic {
	var out []Diagnostic
	for _, s := range p.Steps {
		if s.FanOutOf != "" {
			continue // its fan-out step says it once
		}
		r := s.Request()
		var req, has, from []string
		if c.CPUs > 0 && r.CPUs > c.CPUs {
			req, has = append(req, count(r.CPUs, "CPU", "CPUs")), append(has, count(c.CPUs, "CPU", "CPUs"))
			from = append(from, "--cpus")
		}
		if c.Memory > 0 && r.Memory > c.Memory {
			req, has = append(req, FormatSize(r.Memory)+" memory"), append(has, FormatSize(c.Memory)+" memory")
			from = append(from, "--memory")
		}
		noGPUs := r.GPUs > 0 && c.GPUs == 0
		if r.GPUs > c.GPUs && !noGPUs {
			req, has = append(req, count(r.GPUs, "GPU", "GPUs")), append(has, count(c.GPUs, "GPU", "GPUs"))
			from = append(from, "--gpus")
		}
		var msg string
		switch {
		case len(req) > 0:
			msg = fmt.Sprintf("requests %s; the run's capacity is %s (from %s, else the plan's resources:, else this machine's)",
				andList(req), andList(has), strings.Join(from, "/"))
			if noGPUs {
				msg += fmt.Sprintf("; and %s, but the run has none", count(r.GPUs, "GPU", "GPUs"))
			}
		case noGPUs:
			msg = fmt.Sprintf("requests %s; the run has none (nvidia-smi -L finds none here: declare devices 0..N-1 with resources: gpus or --gpus)", count(r.GPUs, "GPU", "GPUs"))
		default:
			continue
		}
		what := "step"
		if s.FanOut != nil {
			what = "fan-out step" // each item requests it
		}
		out = append(out, Diagnostic{File: p.File, Line: s.Pos.Line, Col: s.Pos.Col,
			Message: fmt.Sprintf("%s %q: %s", what, s.ID, msg)})
	}
	return out
}

// andList renders [a b c] as "a, b and c".
func andList(l []string) string {
	if len(l) < 2 {
		return strings.Join(l, "")
	}
	return strings.Join(l[:len(l)-1], ", ") + " and " + l[len(l)-1]
}
