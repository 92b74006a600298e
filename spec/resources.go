package spec

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Resource limits and their escalation (README "Resources").

// Causes an attempt can be recognised to have ended by, beside its exit code;
// a rule's `on:` lists them.
const (
	CauseOOM     = "oom"
	CauseTimeout = "timeout"
)

// sizeUnits are the suffixes ParseSize accepts, as powers of 1024: Ki/K, Mi/M,
// Gi/G and Ti/T are all binary (as Slurm and Kubernetes' Gi read them), B or
// nothing is bytes.
var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1 << 10, "ki": 1 << 10, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mi": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gi": 1 << 30, "gib": 1 << 30,
	"t": 1 << 40, "tb": 1 << 40, "ti": 1 << 40, "tib": 1 << 40,
}

// ParseSize parses a memory size: a positive number (a decimal fraction is
// allowed) followed by an optional unit B, K, M, G or T, with or without i
// and B (KiB, MiB, GiB, TiB; case does not matter): every unit is binary, so
// 1G = 1GiB = 1073741824 bytes. A bare number is bytes. The result is at
// least 1 MiB and fits in an int64.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mul, ok := sizeUnits[unit]
	if num == "" || !ok || strings.Count(num, ".") > 1 || strings.HasSuffix(num, ".") || strings.HasPrefix(num, ".") {
		return 0, fmt.Errorf("bad size %q (use a number with a unit: 512MiB, 2GiB, 1.5G)", s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("bad size %q (use a number with a unit: 512MiB, 2GiB, 1.5G)", s)
	}
	v := f * float64(mul)
	if v >= math.MaxInt64/2 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	if v < 1<<20 {
		return 0, fmt.Errorf("size %q is below the least limit, 1MiB", s)
	}
	return int64(v), nil
}

// FormatSize writes a byte count the way faber shows sizes: the largest
// binary unit that keeps one decimal at most (1.5GiB, 512MiB, 1023B).
func FormatSize(n int64) string { return string(AppendSize(nil, n)) }

// AppendSize appends FormatSize(n) to b.
func AppendSize(b []byte, n int64) []byte {
	units := [...]string{"B", "KiB", "MiB", "GiB", "TiB"}
	f, u := float64(n), 0
	for f >= 1024 && u < len(units)-1 {
		f /= 1024
		u++
	}
	if u == 0 {
		return append(strconv.AppendInt(b, n, 10), 'B')
	}
	return append(strconv.AppendFloat(b, math.Round(f*10)/10, 'f', -1, 64), units[u]...)
}

// sizev is a memory size (ParseSize).
type sizev struct{ scalar[int64] }

func (v *sizev) decode(p *parser, n *yaml.Node, where string) {
	v.decodeScalar(p, n, where, "a size like 512MiB or 2GiB", notNull, func(n *yaml.Node) (int64, bool) {
		b, err := ParseSize(n.Value)
		if err != nil {
			p.errorf(nodePos(n), "%s: %v", where, err)
			return 0, false
		}
		return b, true
	})
}

func (v *sizev) schema(*schemaGen) map[string]any {
	return map[string]any{"type": "string", "pattern": `^[0-9]+(\.[0-9]+)?\s*([KkMmGgTt]([Ii]?[Bb]?)?|[Bb])?$`}
}

// factorv is a growth factor: a number of at least 1.
type factorv struct{ scalar[float64] }

func (v *factorv) decode(p *parser, n *yaml.Node, where string) {
	v.decodeScalar(p, n, where, "a number like 1.5", numberTag, func(n *yaml.Node) (float64, bool) {
		f, err := strconv.ParseFloat(n.Value, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 1 || f > 100 {
			p.errorf(nodePos(n), "%s: %s must be a number from 1 to 100", where, n.Value)
			return 0, false
		}
		return f, true
	})
}

func (v *factorv) schema(*schemaGen) map[string]any {
	return map[string]any{"type": "number", "minimum": 1, "maximum": 100}
}

// Grow scales a resource by factor, capped at limit (0: no cap); it never
// returns less than cur.
func Grow(cur int64, factor float64, limit int64) int64 {
	if cur <= 0 || factor <= 1 {
		return cur
	}
	f := float64(cur) * factor
	n := cur
	if f < math.MaxInt64/2 {
		n = int64(math.Ceil(f))
	} else {
		n = math.MaxInt64 / 2
	}
	if limit > 0 && n > limit {
		n = max(limit, cur)
	}
	return n
}

// limits sets the step's own memory and cpus over the plan's defaults. A
// step sets its memory either with memory: or with slurm: mem:, not both.
func (b *builder) limits(s *Step, rs *rawStepBody, where string) {
	if rs.Memory.Set {
		s.Memory = rs.Memory.V
		if rs.Slurm != nil && rs.Slurm.Mem.Set {
			b.errorf(rs.Slurm.Mem.Pos, "%s: has both memory and slurm: mem (set memory only)", where)
		}
	} else if rs.Slurm != nil && rs.Slurm.Mem.Set {
		s.Memory = 0 // the step's slurm: mem is its memory on Slurm
	}
	if rs.CPUs.Set {
		s.CPUs = rs.CPUs.V
		if rs.Slurm != nil && rs.Slurm.CPUs.Set {
			b.errorf(rs.Slurm.CPUs.Pos, "%s: has both cpus and slurm: cpus (set cpus only)", where)
		}
	} else if rs.Slurm != nil && rs.Slurm.CPUs.Set {
		s.CPUs = 0
	}
}

// ruleResources reads a rule's on:, factors and caps.
func (b *builder) ruleResources(r *Rule, rr *rawRule) {
	for _, c := range rr.On.Items {
		if !c.Set {
			continue
		}
		switch c.V {
		case CauseOOM, CauseTimeout, CauseRejected, CauseBudget:
			r.On = append(r.On, c.V)
		default:
			b.errorf(c.Pos, "%s: on: unknown cause %q (use oom, timeout, rejected or budget)", rr.Where, c.V)
		}
	}
	r.MemoryFactor, r.TimeoutFactor = rr.MemoryFactor.V, rr.TimeoutFactor.V
	r.MaxMemory, r.MaxTimeout = rr.MaxMemory.V, rr.MaxTimeout.V
	if rr.MaxMemory.Set && !rr.MemoryFactor.Set {
		b.errorf(rr.MaxMemory.Pos, "%s: max_memory without memory_factor", rr.Where)
	}
	if rr.MaxTimeout.Set && !rr.TimeoutFactor.Set {
		b.errorf(rr.MaxTimeout.Pos, "%s: max_timeout without timeout_factor", rr.Where)
	}
}
