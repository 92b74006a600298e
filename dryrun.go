package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/spec/subst"
)

// A dry run (faber run --dry-run) and faber graph show a validated plan
// without running or writing anything. Commands are built by the runner's
// own functions (exec.StepVars, exec.StepArgv, spec.ResolveCommand, ...),
// with placeholders for the built-ins that only a run knows.

// Placeholders for the built-ins known only while a run runs: the variable's
// name in angle brackets.
const (
	phRunID      = "<run_id>"
	phAttempt    = "<attempt>"
	phError      = "<error>"
	phExitCode   = "<exit_code>"
	phStdoutFile = "<stdout_file>"
	phStderrFile = "<stderr_file>"
)

// Kinds of a dry-run step's command beyond exec.KindScript and the
// spec.Kind* of a /command.
const kindPlan = "plan"

// dryPlan is the JSON document of `faber run --dry-run --ui json`. Fields
// may be added (a field per step saying whether it would be cached, for one);
// existing ones keep their meaning.
type dryPlan struct {
	Plan   string     `json:"plan"`
	File   string     `json:"file"`
	Jobs   int        `json:"jobs"`
	Levels [][]string `json:"levels"`
	Steps  []*dryStep `json:"steps"`
}

// dryStep is one step as a run would start it.
type dryStep struct {
	ID            string   `json:"id"`
	Name          string   `json:"name"`
	Phase         string   `json:"phase"`
	Level         int      `json:"level"` // from 1; the end step: the last level + 1
	End           bool     `json:"end"`
	Needs         []string `json:"needs"`
	NeedsExplicit bool     `json:"needs_explicit"`
	// Kind is script, commands, file, agent, program (a /command's
	// resolution, SPEC §4.1) or plan (a sub-plan step).
	Kind string `json:"kind"`
	// Command is the run: line with values substituted in place, for
	// reading; Argv is what is executed (for a script, the shell with -c and
	// the script as the runner renders it, reading values from SubEnv).
	Command     string            `json:"command"`
	Argv        []string          `json:"argv"`
	SubEnv      []string          `json:"sub_env"`
	PlanFile    string            `json:"plan_file,omitempty"`
	PlanContext map[string]string `json:"plan_context,omitempty"`
	Shell       string            `json:"shell,omitempty"`
	Dir         string            `json:"dir"`
	Timeout     *string           `json:"timeout"`
	Executor    string            `json:"executor"`
	// SrunPrefix is the srun command line (up to --) for executor: slurm.
	SrunPrefix     []string     `json:"-"`
	FailureHandler *dryHandler  `json:"failure_handler"`
	OnFailure      dryOnFailure `json:"on_failure"`
	// Cache is, for a step with inputs, what the cache would do.
	Cache *dryCache `json:"cache,omitempty"`
}

// dryHandler is a step's failure_handler with its rules.
type dryHandler struct {
	Name  string     `json:"name"`
	Rules []*dryRule `json:"rules"`
}

// dryRule is one exit-code rule, its recovery script substituted.
type dryRule struct {
	ExitCodes      []int  `json:"exit_codes"`
	MatchAll       bool   `json:"match_all_exit_codes"`
	StderrMatches  string `json:"stderr_matches,omitempty"`
	MaxRetries     int    `json:"max_retries"`
	Delay          string `json:"delay,omitempty"`
	Backoff        string `json:"backoff"`
	MaxDelay       string `json:"max_delay,omitempty"`
	RecoveryScript string `json:"recovery_script,omitempty"`
}

// dryOnFailure is a step's on_failure, a /command resolved.
type dryOnFailure struct {
	Kind     string `json:"kind"` // stop, continue, retry, command, structured
	Explicit bool   `json:"explicit"`
	// Invalid is the value that was treated as stop (with a warning).
	Invalid        string `json:"invalid,omitempty"`
	MaxRetries     *int   `json:"max_retries,omitempty"`
	RetryOnSuccess *bool  `json:"retry_on_success,omitempty"`
	// Command is the handler line substituted; Resolved how it resolved
	// (commands, file, agent, program); Argv the resolved argv and
	// HandlerCommand it shell-quoted, as step_handler_invoked records it.
	Command        string   `json:"command,omitempty"`
	Resolved       string   `json:"resolved,omitempty"`
	Argv           []string `json:"argv,omitempty"`
	HandlerCommand string   `json:"handler_command,omitempty"`
	Timeout        string   `json:"timeout,omitempty"`
}

// dryRun prints what `faber run` would do with plan, and runs nothing.
func dryRun(g *Globals, plan *spec.Plan, jobs int, asJSON bool, co cacheOpts) error {
	dp, err := buildDry(plan, jobs)
	if err != nil {
		return withCode(exitUsage, err)
	}
	dryCacheOf(g.StateDir, plan, dp, co)
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

// buildDry describes every step of a validated plan, level by level, the
// end step last.
func buildDry(p *spec.Plan, jobs int) (*dryPlan, error) {
	dp := &dryPlan{Plan: p.Name, File: p.File, Jobs: exec.Jobs(jobs, p), Levels: levelIDs(p), Steps: []*dryStep{}}
	for i, level := range p.Levels() {
		for _, s := range level {
			ds, err := buildDryStep(p, s)
			if err != nil {
				return nil, err
			}
			ds.Level = i + 1
			dp.Steps = append(dp.Steps, ds)
		}
	}
	if p.End != nil {
		ds, err := buildDryStep(p, p.End)
		if err != nil {
			return nil, err
		}
		ds.Level, ds.End = len(dp.Levels)+1, true
		dp.Steps = append(dp.Steps, ds)
	}
	return dp, nil
}

func buildDryStep(p *spec.Plan, s *spec.Step) (*dryStep, error) {
	ds := &dryStep{ID: s.ID, Name: s.Name, Phase: s.Phase, Needs: s.Deps, NeedsExplicit: s.NeedsSet, Executor: "local", SubEnv: []string{}}
	if ds.Needs == nil {
		ds.Needs = []string{}
	}
	vars := exec.StepVars(p, s, phRunID, phAttempt, nil)
	ds.Dir = exec.WorkDir(p, s, vars)
	if s.Timeout > 0 {
		t := shortDur(s.Timeout)
		ds.Timeout = &t
	}
	if s.PlanPath != "" {
		ds.Kind, ds.PlanFile, ds.Command = kindPlan, s.PlanPath, s.Plan
		sets, err := exec.ChildSets(s, vars)
		if err != nil {
			return nil, err
		}
		if len(sets) > 0 {
			ds.PlanContext = map[string]string{}
			for i := 1; i < len(sets); i += 2 {
				k, v, _ := strings.Cut(sets[i], "=")
				ds.PlanContext[k] = v
			}
		}
	} else {
		argv, env, kind, err := exec.StepArgv(p, s, vars)
		if err != nil {
			return nil, err
		}
		ds.Kind, ds.Argv = kind, argv
		if env != nil {
			ds.SubEnv = env
		}
		if kind == exec.KindScript {
			ds.Shell = p.ShellFor(s)
		}
		// The line as a reader would write it with the values in place;
		// Argv and SubEnv say exactly how the values are passed.
		ds.Command, err = subst.Expand(strings.TrimRight(s.Run, "\n"), vars)
		if err != nil {
			return nil, fmt.Errorf("step %q: %w", s.ID, err)
		}
		if s.Executor == "slurm" {
			ds.Executor = "slurm"
			// The job name of attempt <attempt>, in the runner's format.
			name := strings.TrimSuffix(exec.SlurmJobName(phRunID, s.ID, 0), "0") + phAttempt
			dir := ds.Dir
			if abs, err := filepath.Abs(dir); err == nil {
				dir = abs
			}
			ds.SrunPrefix = exec.SlurmArgv(name, dir, s, nil)
			ds.Argv = exec.SlurmArgv(name, dir, s, argv)
		}
	}
	hvars := exec.StepVars(p, s, phRunID, phAttempt, &exec.FailValues{
		Error: phError, ExitCode: phExitCode, StdoutFile: phStdoutFile, StderrFile: phStderrFile})
	if fh := p.FailureHandlers[s.FailureHandler]; fh != nil {
		dh := &dryHandler{Name: fh.Name}
		for _, r := range fh.Rules {
			dr := &dryRule{ExitCodes: r.ExitCodes, MatchAll: r.MatchAll, MaxRetries: r.MaxRetries, Backoff: r.Backoff}
			if dr.ExitCodes == nil {
				dr.ExitCodes = []int{}
			}
			if dr.Backoff == "" {
				dr.Backoff = spec.BackoffFixed
			}
			if r.StderrMatches != nil {
				dr.StderrMatches = r.StderrMatches.String()
			}
			if r.Delay > 0 {
				dr.Delay = shortDur(r.Delay)
			}
			if r.MaxDelay > 0 {
				dr.MaxDelay = shortDur(r.MaxDelay)
			}
			if r.RecoveryScript != "" {
				// Rendered as the runner renders it, so that a script it
				// could not run fails here too.
				if _, _, err := exec.ScriptArgv(p, s, r.RecoveryScript, hvars); err != nil {
					return nil, fmt.Errorf("step %q: failure_handler %s: recovery_script: %w", s.ID, fh.Name, err)
				}
				dr.RecoveryScript, _ = subst.Expand(strings.TrimRight(r.RecoveryScript, "\n"), hvars)
			}
			dh.Rules = append(dh.Rules, dr)
		}
		ds.FailureHandler = dh
	}
	of := s.OnFailure
	ds.OnFailure = dryOnFailure{Kind: of.Kind, Explicit: of.Explicit, Invalid: of.Invalid}
	switch of.Kind {
	case spec.OnRetry:
		n := of.MaxRetries
		ds.OnFailure.MaxRetries = &n
	case spec.OnCommand, spec.OnStructured:
		var args []spec.Arg
		if of.Kind == spec.OnStructured {
			args = of.Args
		}
		argv, kind, err := p.ResolveCommand(of.Command, args, hvars)
		if err != nil {
			return nil, fmt.Errorf("step %q: on_failure: %w", s.ID, err)
		}
		n, ros := of.MaxRetries, of.RetryOnSuccess
		ds.OnFailure.MaxRetries, ds.OnFailure.RetryOnSuccess = &n, &ros
		ds.OnFailure.Command, _ = subst.Expand(of.Command, hvars)
		ds.OnFailure.Resolved, ds.OnFailure.Argv = kind, argv
		ds.OnFailure.HandlerCommand = subst.Join(argv)
		ds.OnFailure.Timeout = shortDur(exec.HandlerTimeout(p, s))
	}
	return ds, nil
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

// levelIDs is p.Levels() as step ids.
func levelIDs(p *spec.Plan) [][]string {
	levels := p.Levels()
	out := make([][]string, len(levels))
	for i, l := range levels {
		out[i] = make([]string, len(l))
		for j, s := range l {
			out[i][j] = s.ID
		}
	}
	return out
}

// printDry writes the dry run as text: a header, then each level with its
// steps, one `key: value` line per field, the end step last.
func printDry(w io.Writer, p *spec.Plan, dp *dryPlan) {
	fmt.Fprintf(w, "%s\n", planSummary(p, len(dp.Levels)))
	fmt.Fprintf(w, "dry run: nothing runs and nothing is written; at most %d %s at once\n", dp.Jobs, plural(dp.Jobs, "step runs", "steps run"))
	fmt.Fprintf(w, "%s and %s stand for values known only when the run runs (in handlers also %s, %s, %s, %s)\n",
		phRunID, phAttempt, phError, phExitCode, phStdoutFile, phStderrFile)
	level := 0
	for _, ds := range dp.Steps {
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
		printDryStep(w, ds)
	}
}

func printDryStep(w io.Writer, ds *dryStep) {
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
	switch ds.Kind {
	case kindPlan:
		kv("plan", ds.PlanFile)
		keys := make([]string, 0, len(ds.PlanContext))
		for k := range ds.PlanContext {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
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
		if n := len(ds.SrunPrefix); n > 0 && len(argv) >= n {
			argv = argv[n:]
		}
		kv("argv", subst.Join(argv)+" ("+resolvedNote(ds.Kind)+")")
	}
	kv("dir", ds.Dir)
	if ds.Timeout != nil {
		kv("timeout", *ds.Timeout)
	} else {
		kv("timeout", "none")
	}
	if len(ds.SrunPrefix) > 0 {
		kv("executor", ds.Executor+": "+subst.Join(ds.SrunPrefix))
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
		kv("cache", c.text())
	}
}

// ruleSummary is one rule on one line: what it matches, then what it grants.
func ruleSummary(r *dryRule) string {
	var b strings.Builder
	if len(r.ExitCodes) > 0 {
		codes := make([]string, len(r.ExitCodes))
		for i, c := range r.ExitCodes {
			codes[i] = strconv.Itoa(c)
		}
		b.WriteString("exit " + strings.Join(codes, ", "))
	} else {
		b.WriteString("any failure")
	}
	if r.StderrMatches != "" {
		fmt.Fprintf(&b, " with stderr matching %q", r.StderrMatches)
	}
	b.WriteString(" -> ")
	if r.MaxRetries == 0 {
		b.WriteString("no retry")
	} else {
		fmt.Fprintf(&b, "up to %d %s", r.MaxRetries, plural(r.MaxRetries, "retry", "retries"))
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

func printOnFailure(kv func(k, v string), of dryOnFailure) {
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

// shortDur formats a duration as a plan would write it: 10m, 1h30m, 90s as 1m30s.
func shortDur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
