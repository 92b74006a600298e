package spec

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Caching (README, "Caching"): a step that declares inputs: is skipped when
// its inputs, its definition and its upstream are what they were when it
// last succeeded and its outputs are still there.

// Cache modes: how an input or output file is summarised.
const (
	CacheContent = "content" // SHA-256 of the bytes (the default)
	CacheMtime   = "mtime"   // size and modification time
	CacheOff     = "off"     // never cached
)

// Cache is a step's inputs:, outputs:, cache_key: and cache:.
type Cache struct {
	Inputs   []string // globs relative to the step's dir (may hold {vars})
	Outputs  []string // paths or globs relative to the step's dir
	KeyCmds  []string // cache_key: shell commands whose stdout joins the key
	Mode     string   // CacheContent (default), CacheMtime or CacheOff
	ModeSet  bool     // cache: was written
	Position Pos
}

// Enabled reports whether the step may be skipped at all.
func (c *Cache) Enabled() bool { return c != nil && c.Mode != CacheOff }

// rawCache holds the caching fields of a step.
type rawCache struct {
	Inputs   list[str] `yaml:"inputs" doc:"Files the step reads: globs relative to its dir ({vars} allowed; ** matches any depth). A step with inputs is skipped (status cached) when nothing it depends on changed."`
	Outputs  list[str] `yaml:"outputs" doc:"Files the step writes: paths or globs relative to its dir; each must exist after exit 0 for the result to be cached, and still exist (unchanged) for a later run to reuse it."`
	CacheKey list[str] `yaml:"cache_key" doc:"Shell commands (run in the step's dir) whose output joins the cache key, e.g. a tool's version."`
	Cache    str       `yaml:"cache" enum:"content,mtime,off" doc:"How inputs and outputs are compared: content (SHA-256, default), mtime (size and modification time), off (never cache)."`
}

// cache reads a step's caching fields into s.Cache.
func (b *builder) cache(s *Step, rs *rawStep) {
	c := &rs.rawCache
	where := fmt.Sprintf("step %q", s.ID)
	if !c.Inputs.Set {
		for _, k := range []string{"outputs", "cache_key", "cache"} {
			if rs.has(k) {
				b.errorf(rs.keyPos(k), "%s: %s needs inputs: (a step without inputs is never cached)", where, k)
			}
		}
		return
	}
	if rs.Plan.Set {
		b.errorf(rs.keyPos("inputs"), "%s: a plan: step cannot be cached (its child run decides what to run); remove inputs:", where)
		return
	}
	if len(c.Inputs.Items) == 0 && !c.Inputs.Bad {
		b.errorf(c.Inputs.Pos, "%s: inputs: is empty; list at least one file or glob, or remove it", where)
	}
	sc := &Cache{Mode: CacheContent, Position: rs.keyPos("inputs")}
	if c.Cache.Set {
		sc.Mode, sc.ModeSet = c.Cache.V, true
	}
	paths := func(l *list[str], key string) []string {
		var out []string
		for i := range l.Items {
			v := l.Items[i]
			if !v.Set {
				continue
			}
			if strings.TrimSpace(v.V) == "" {
				b.errorf(v.Pos, "%s: %s[%d]: is empty", where, key, i)
				continue
			}
			if _, err := filepath.Match(v.V, ""); err != nil {
				b.errorf(v.Pos, "%s: %s[%d]: %q is not a valid glob: %v", where, key, i, v.V, err)
				continue
			}
			out = append(out, v.V)
		}
		return out
	}
	sc.Inputs = paths(&c.Inputs, "inputs")
	sc.Outputs = paths(&c.Outputs, "outputs")
	for i, v := range c.CacheKey.Items {
		if !v.Set || strings.TrimSpace(v.V) == "" {
			b.errorf(v.Pos, "%s: cache_key[%d]: is empty", where, i)
			continue
		}
		sc.KeyCmds = append(sc.KeyCmds, v.V)
	}
	s.Cache = sc
}

// checkCache checks the {vars} of a step's inputs and outputs once the
// variables (context, fan-out item) are known.
func (b *builder) checkCache(rs *rawStep, where string) {
	for _, l := range []*list[str]{&rs.Inputs, &rs.Outputs, &rs.CacheKey} {
		for i := range l.Items {
			b.checkVars(&l.Items[i], where, false)
		}
	}
}
