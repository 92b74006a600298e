package main

import (
	"fmt"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/spec"
)

// dryCache is what a run would do with a step that declares inputs: skip
// it (cached) or run it, and why. A dry run reads the cache and hashes the
// inputs, but runs no cache_key command: it takes their output to be what
// the entry recorded, and says so.
type dryCache struct {
	Cached  bool   `json:"cached"`
	Reason  string `json:"reason"`
	FromRun string `json:"from_run,omitempty"`
	Attempt int    `json:"from_attempt,omitempty"`
	Key     string `json:"key,omitempty"`
	// KeyCmdsAssumed: the step has cache_key commands, which a dry run
	// does not run; their output was assumed unchanged.
	KeyCmdsAssumed bool `json:"key_cmds_assumed,omitempty"`
}

func (c *dryCache) text() string {
	s := "would run: " + c.Reason
	if c.Cached {
		s = fmt.Sprintf("would be cached: run %s attempt %d exited 0 with the same key", c.FromRun, c.Attempt)
	}
	if c.KeyCmdsAssumed {
		s += " (cache_key commands not run: their output assumed unchanged)"
	}
	return s
}

// dryCacheOf decides each step's dry-run cache line, in run order: a step's
// key needs its upstream's, which are what a run would give them (the
// cached key, or the key of a step that would run and succeed).
func dryCacheOf(stateDir string, p *spec.Plan, dp *dryPlan, co cacheOpts) {
	store := run.Cache{StateDir: stateDir}
	keys := map[string]string{}
	forced := map[string]bool{}
	for _, id := range co.force {
		forced[id] = true
	}
	for _, ds := range dp.Steps {
		if ds.End {
			continue
		}
		s := p.Step(ds.ID)
		if s == nil {
			continue
		}
		if s.Join && s.FanOut != nil {
			items := make([]string, len(s.FanOut.ItemIDs))
			for i, id := range s.FanOut.ItemIDs {
				items[i] = keys[id]
			}
			keys[s.ID] = exec.JoinKey(items)
			continue
		}
		keys[s.ID] = "def:" + exec.StepHash(p, s)
		if !s.Cache.Enabled() || s.PlanPath != "" {
			continue
		}
		needs := map[string]string{}
		for _, d := range s.Deps {
			needs[d] = keys[d]
		}
		e, _ := store.Get(p.Name, s.ID)
		keyOut := ""
		c := &dryCache{}
		if len(s.Cache.KeyCmds) > 0 {
			c.KeyCmdsAssumed = true
			if e != nil {
				keyOut = e.KeyOut
			}
		}
		ds.Cache = c
		pr, err := exec.ProbeCache(p, s, needs, keyOut)
		if err != nil {
			c.Reason = "cannot compute the key: " + err.Error()
			continue
		}
		c.Key = pr.Key
		keys[s.ID] = pr.Key
		switch {
		case co.noCache:
			c.Reason = "cache not read (--no-cache)"
		case forced[s.ID] || forced[s.FanOutOf]:
			c.Reason = "forced (--force)"
		default:
			c.Reason = exec.KeyMiss(e, pr)
			if c.Reason == "" {
				c.Reason = exec.OutputsMiss(p, s, e)
			}
		}
		if c.Reason == "" {
			c.Cached, c.FromRun, c.Attempt = true, e.RunID, e.Attempt
		}
	}
}
