package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
)

// CacheCmd shows or empties the step cache of the state dir.
type CacheCmd struct {
	List  CacheListCmd  `cmd:"" default:"withargs" help:"List the cached step results: plan, step, the run and attempt whose success they reuse."`
	Clear CacheClearCmd `cmd:"" help:"Forget cached step results (every one, or one plan's with --plan); the next run runs those steps."`
}

// Help explains the cache, with examples.
func (c *CacheCmd) Help() string {
	return `A step with inputs: is skipped, status cached, when an earlier run of the same
plan ran it with the same command, environment and input contents and it
succeeded; these commands show and forget those results (README "Caching").

Examples:
  faber cache                            every cached result in the state dir
  faber cache --plan build --json
  faber cache clear --plan build         the next run of build runs every step`
}

// CacheListCmd lists the cache's entries.
type CacheListCmd struct {
	Plan string `name:"plan" placeholder:"NAME" help:"Only this plan's entries."`
	JSON bool   `name:"json" help:"Print the entries as a JSON array."`
}

// Run lists the entries.
func (c *CacheListCmd) Run(g *Globals) error {
	entries, _, err := run.CacheEntries(g.StateDir, c.Plan)
	if err != nil {
		return err
	}
	for i, e := range entries {
		entries[i] = exec.CacheEntryMasker(e).CacheEntry(e) // paths may hold secrets
	}
	if c.JSON {
		if entries == nil {
			return printJSON(g.stdout, []any{})
		}
		return printJSON(g.stdout, entries)
	}
	if len(entries) == 0 {
		fmt.Fprintln(g.stdout, "no cached steps")
		return nil
	}
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLAN\tSTEP\tRUN\tATTEMPT\tINPUTS\tOUTPUTS\tMODE\tKEY\tAT")
	for _, e := range entries {
		key := e.Key
		if len(key) > 12 {
			key = key[:12]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", e.Plan, e.Step, e.RunID, e.Attempt, len(e.Inputs), len(e.Outputs), e.Mode, key, e.Time)
	}
	return tw.Flush()
}

// CacheClearCmd removes entries.
type CacheClearCmd struct {
	Plan string `name:"plan" placeholder:"NAME" help:"Only this plan's entries."`
	JSON bool   `name:"json" help:"Print {cleared: N} instead of a sentence."`
}

// Run removes the entries.
func (c *CacheClearCmd) Run(g *Globals) error {
	n, err := run.ClearCache(g.StateDir, c.Plan)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(g.stdout, struct {
			Cleared int `json:"cleared"`
		}{n})
	}
	fmt.Fprintf(g.stdout, "cleared %d cached %s\n", n, plural(n, "step", "steps"))
	return nil
}
