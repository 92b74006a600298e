package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/spec/subst"
)

// A dry run (faber run --dry-run) prints what internal/run.DryRun decides a
// run would do, as text or JSON.

// dryRun prints what `faber run` would do with plan, and runs nothing.
func dryRun(g *Globals, plan *spec.Plan, jobs int, capacity spec.Capacity, asJSON bool, co cacheOpts) error {
	dp, err := run.DryRun(g.StateDir, plan, jobs, co.noCache, co.force, asJSON)
	if err != nil {
		return err
	}
	dp.Part = co.part
	if run.UsesCapacity(plan) {
		dp.Capacity = run.DryCapacity(capacity, plan)
	}
	// Substituted commands hold context values: the plan's secrets show as
	// *** here too.
	var out bytes.Buffer
	if asJSON {
		if err := writeJSON(&out, dp); err != nil {
			return err
		}
	} else {
		printDry(&out, plan, dp)
	}
	_, err = g.stdout.Write(exec.NewMasker(plan).Bytes(out.Bytes()))
	return err
}

// writeJSON writes v indented, with <placeholders> left readable.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return withCode(exitFailed, err)
	}
	return nil
}

// printDry writes the dry run as text: a header, then each level with its
// steps, one `key: value` line per field, the end step last.
func printDry(w io.Writer, p *spec.Plan, dp *run.DryPlan) {
	fmt.Fprintf(w, "%s\n", planSummary(p, len(dp.Levels)))
	if dp.Part != nil {
		fmt.Fprintf(w, "part: %s (the other steps of the plan are left out and count as done)\n", run.PartText(dp.Part))
	}
	fmt.Fprintf(w, "dry run: nothing runs and nothing is written; at most %d %s at once\n", dp.Jobs, plural(dp.Jobs, "step runs", "steps run"))
	if dp.Capacity != nil {
		fmt.Fprintf(w, "capacity: %s; a step starts when its request fits what the running steps leave\n", dp.Capacity.Text)
	}
	if len(dp.Budgets) > 0 {
		fmt.Fprintf(w, "budgets: %s (over the run: once one is spent, its steps start no attempt, retry or handler)\n", strings.Join(dp.Budgets, "; "))
	}
	fmt.Fprintf(w, "%s and %s stand for values known only when the run runs (in handlers also %s, %s, %s, %s)\n",
		run.PhRunID, run.PhAttempt, run.PhError, run.PhExitCode, run.PhStdoutFile, run.PhStderrFile)
	if hasJoin(dp) {
		fmt.Fprintf(w, "fan-outs: the first %d items of each are shown, the others counted; in a join step's item run, %s stands for an item's value\n",
			run.ShownItems, run.PhItem)
	}
	level := 0
	// Items not shown, counted until a shown step or another level comes.
	var hidden []*run.DryStep
	flush := func() {
		if len(hidden) > 0 {
			fmt.Fprintf(w, "  ... %s\n", hiddenItems(hidden))
			hidden = nil
		}
	}
	for _, ds := range dp.Steps {
		if ds.Level != level || ds.End {
			flush()
		}
		if ds.End {
			fmt.Fprintf(w, "\nend step: runs last, after every step, whatever their status\n")
		} else if ds.Level != level {
			level = ds.Level
			n := len(dp.Levels[level-1])
			note := ""
			if n > 1 {
				note = fmt.Sprintf(": %d steps, may run at the same time", n)
			}
			if n > dp.Jobs {
				note += fmt.Sprintf(" (at most %d at once)", dp.Jobs)
			}
			fmt.Fprintf(w, "\nlevel %d%s\n", level, note)
		}
		if ds.FanOut != "" && !run.ItemShown(p, ds.ID) {
			if len(hidden) > 0 && hidden[0].FanOut != ds.FanOut {
				flush()
			}
			hidden = append(hidden, ds)
			continue
		}
		flush()
		printDryStep(w, ds)
	}
	flush()
	if len(dp.Notify) > 0 {
		fmt.Fprintf(w, "\nnotifications: run on these events (not in a dry run), the event as JSON on stdin\n")
		for _, n := range dp.Notify {
			fmt.Fprintf(w, "  on %s (timeout %s): %s\n", strings.Join(n.On, ", "), n.Timeout, n.Run)
		}
	}
}

func hasJoin(dp *run.DryPlan) bool {
	for _, ds := range dp.Steps {
		if ds.Join != nil {
			return true
		}
	}
	return false
}

// hiddenItems is the line that stands for item steps not shown: how many,
// the first and last id.
func hiddenItems(items []*run.DryStep) string {
	n := len(items)
	ids := items[0].ID
	if n > 1 {
		ids += " to " + items[n-1].ID
	}
	return fmt.Sprintf("%d more %s of %s (%s), each like the above with its own {item}",
		n, plural(n, "item", "items"), items[0].FanOut, ids)
}

func printDryStep(w io.Writer, ds *run.DryStep) {
	fmt.Fprintf(w, "  %s\n", ds.ID)
	kv := func(k, v string) {
		// Continuation lines of a multi-line value line up under it.
		v = strings.ReplaceAll(v, "\n", "\n"+strings.Repeat(" ", 17))
		if k != "" {
			k += ":"
		}
		fmt.Fprintf(w, "    %-13s%s\n", k, v)
	}
	if ds.Name != ds.ID {
		kv("name", ds.Name)
	}
	if j := ds.Join; j != nil {
		printDryJoin(kv, ds, j)
		return
	}
	if !ds.End {
		kv("phase", ds.Phase)
		switch {
		case len(ds.Needs) == 0 && ds.NeedsExplicit:
			kv("needs", "none (needs: [])")
		case len(ds.Needs) == 0:
			kv("needs", "none")
		case ds.NeedsExplicit:
			kv("needs", strings.Join(ds.Needs, ", "))
		default:
			kv("needs", strings.Join(ds.Needs, ", ")+" (implicit)")
		}
	}
	if ds.Item != nil {
		kv("item", *ds.Item)
		for _, k := range ds.ItemNames {
			kv("item."+k, ds.ItemFields[k])
		}
	}
	if ds.When != "" {
		kv("when", ds.When+" (evaluated when ready; false: skipped)")
	}
	switch ds.Kind {
	case run.KindPlan:
		kv("plan", ds.PlanFile)
		for _, k := range sortedKeys(ds.PlanContext) {
			kv("context", k+"="+ds.PlanContext[k])
		}
	case exec.KindScript:
		kv("run", ds.Command)
		if ds.Shell != "sh" {
			kv("shell", ds.Shell)
		}
	default:
		kv("run", ds.Command)
		argv := ds.Argv
		if n := len(ds.ExecPrefix); n > 0 && len(argv) >= n {
			argv = argv[n:]
		}
		kv("argv", subst.Join(argv)+" ("+resolvedNote(ds.Kind)+")")
	}
	kv("dir", ds.Dir)
	if ds.Requests != nil {
		kv("requests", ds.Requests.Text)
	}
	if ds.Timeout != nil {
		kv("timeout", *ds.Timeout)
	} else {
		kv("timeout", "none")
	}
	if ds.Budget != "" {
		kv("budget", ds.Budget+" (over the run)")
	}
	if len(ds.ExecPrefix) > 0 {
		kv("executor", ds.Executor+": "+subst.Join(ds.ExecPrefix))
	} else {
		kv("executor", ds.Executor)
	}
	if fh := ds.FailureHandler; fh != nil {
		for i, r := range fh.Rules {
			k := ""
			if i == 0 {
				k = "rules"
			}
			line := ruleSummary(r)
			if i == 0 {
				line = fh.Name + ": " + line
			} else {
				line = strings.Repeat(" ", len(fh.Name)+2) + line
			}
			kv(k, line)
		}
	}
	printOnFailure(kv, ds.OnFailure)
	if c := ds.Cache; c != nil {
		kv("cache", dryCacheText(c))
	}
}

// printDryJoin writes a fan-out's join step: where its items come from,
// which they are, the run line each item runs, and that the join itself
// runs no process.
func printDryJoin(kv func(k, v string), ds *run.DryStep, j *run.FanOut) {
	kv("phase", ds.Phase)
	fo := j.String()
	if j.Items > run.ShownItems {
		fo += fmt.Sprintf("; the first %d shown above", run.ShownItems)
	}
	if j.MaxParallel > 0 {
		fo += fmt.Sprintf("; at most %d at once (max_parallel)", j.MaxParallel)
	}
	kv("fan-out", fo)
	if ds.When != "" {
		kv("when", ds.When+" (each item's, evaluated when it is ready)")
	}
	if len(j.Needs) > 0 {
		// A join waits for the fan-out step's own needs too, even with no
		// item (README "Fan-out").
		kv("needs", strings.Join(j.Needs, ", ")+"; its items: "+j.ItemsText())
	} else {
		kv("needs", "its items: "+j.ItemsText())
	}
	kv("item run", ds.Command)
	if ds.Requests != nil {
		kv("requests", ds.Requests.Text+" (each item)")
	}
	if ds.Budget != "" {
		kv("budget", ds.Budget+" (each item, over the run)")
	}
	kv("join", "runs no process: success once every item succeeded, else failure")
}

// ruleSummary is one rule on one line: what it matches, then what it grants.
func ruleSummary(r *run.DryRule) string {
	var b strings.Builder
	var what []string
	if len(r.ExitCodes) > 0 {
		codes := make([]string, len(r.ExitCodes))
		for i, c := range r.ExitCodes {
			codes[i] = strconv.Itoa(c)
		}
		what = append(what, "exit "+strings.Join(codes, ", "))
	}
	for _, c := range r.On {
		what = append(what, c)
	}
	switch {
	case r.MatchAll:
		b.WriteString("any failure")
	case len(what) == 0:
		b.WriteString("no failure")
	default:
		b.WriteString(strings.Join(what, " or "))
	}
	if r.StderrMatches != "" {
		fmt.Fprintf(&b, " with stderr matching %q", r.StderrMatches)
	}
	b.WriteString(" -> ")
	onlyBudget := len(what) == 1 && len(r.On) == 1 && r.On[0] == spec.CauseBudget && !r.MatchAll
	switch {
	case r.MaxRetries == 0 || onlyBudget:
		b.WriteString("no retry")
	default:
		fmt.Fprintf(&b, "up to %d %s", r.MaxRetries, plural(r.MaxRetries, "retry", "retries"))
		if slices.Contains(r.On, spec.CauseBudget) {
			b.WriteString(" (none for a spent budget)")
		}
	}
	if r.Delay != "" {
		b.WriteString(", delay " + r.Delay)
		if r.Backoff == spec.BackoffExponential {
			b.WriteString(" doubling")
			if r.MaxDelay != "" {
				b.WriteString(" up to " + r.MaxDelay)
			}
		}
	}
	if r.RecoveryScript != "" {
		b.WriteString(", recovery: " + r.RecoveryScript)
	}
	return b.String()
}

func printOnFailure(kv func(k, v string), of run.DryOnFailure) {
	switch of.Kind {
	case spec.OnStop:
		switch {
		case of.Invalid != "":
			kv("on_failure", fmt.Sprintf("stop (%s is not a valid value)", of.Invalid))
		case of.Explicit:
			kv("on_failure", "stop")
		default:
			kv("on_failure", "stop (default)")
		}
	case spec.OnContinue:
		kv("on_failure", "continue")
	case spec.OnRetry:
		kv("on_failure", fmt.Sprintf("retry, up to %d %s, then stop", *of.MaxRetries, plural(*of.MaxRetries, "time", "times")))
	default:
		kv("on_failure", of.Kind+" "+of.Command)
		kv("  argv", of.HandlerCommand+" ("+resolvedNote(of.Resolved)+")")
		then := "on success the step stays failed and the run stops"
		if *of.RetryOnSuccess && *of.MaxRetries > 0 {
			then = fmt.Sprintf("on success retry the step, up to %d %s", *of.MaxRetries, plural(*of.MaxRetries, "time", "times"))
		}
		kv("  then", then+"; handler timeout "+of.Timeout)
	}
}

// resolvedNote says where a /command resolved (SPEC §4.1).
func resolvedNote(kind string) string {
	switch kind {
	case spec.KindCommands:
		return "from commands:"
	case spec.KindFile:
		return "from .faber/commands"
	case spec.KindAgent:
		return "through agent:"
	case spec.KindProgram:
		return "program"
	}
	return kind
}

// planSummary is the first line of a dry run and of a text graph.
func planSummary(p *spec.Plan, levels int) string {
	end := ""
	if p.End != nil {
		end = ", then the end step"
	}
	return fmt.Sprintf("plan %q (%s): %d %s in %d %s%s", p.Name, p.File,
		len(p.Steps), plural(len(p.Steps), "step", "steps"), levels, plural(levels, "level", "levels"), end)
}

// dryCacheText is a step's cache line in a dry run's text.
func dryCacheText(c *run.DryCache) string {
	s := "would run: " + c.Reason
	if c.Cached {
		s = fmt.Sprintf("would be cached: run %s attempt %d exited 0 with the same key", c.FromRun, c.Attempt)
	}
	if c.KeyCmdsAssumed {
		s += " (cache_key commands not run: their output assumed unchanged)"
	}
	return s
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
