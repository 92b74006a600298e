package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/state"
	"github.com/faber-run/faber/tui"
)

// RunCmd runs a plan.
type RunCmd struct {
	Plan          string   `arg:"" name:"plan" predictor:"plan" help:"Plan file (.yaml, .yml or .json)."`
	Steps         []string `arg:"" optional:"" name:"step" predictor:"step" help:"Run only these steps and every step they need (default: every step)."`
	From          []string `name:"from" placeholder:"STEP" predictor:"step" help:"Run STEP and every step downstream of it; the steps before it count as done (repeatable, or comma-separated; with STEP arguments: both parts)."`
	Set           setFlags `name:"set" placeholder:"KEY=VALUE" help:"Override a context variable (repeatable; one --set is one KEY=VALUE, commas included)."`
	SetFile       setFlags `name:"set-file" placeholder:"KEY=PATH" help:"Set a context variable to a file's content, one trailing newline dropped (repeatable): a secret kept out of argv, which every user can read."`
	Jobs          int      `name:"jobs" short:"j" placeholder:"N" help:"Run at most N steps at once (default: the plan's jobs, else the CPU count)."`
	FailFast      bool     `name:"fail-fast" help:"On a stop, terminate running steps instead of letting them finish."`
	UI            string   `name:"ui" enum:"auto,tui,plain,json" default:"auto" help:"Progress display: auto (the live view in a terminal, else plain), tui, plain (one line per transition), json (one event per line)."`
	JSON          bool     `name:"json" help:"Machine-readable output, as every command's --json: the same as --ui json (one event per line; with --dry-run, one JSON document)."`
	DryRun        bool     `name:"dry-run" help:"Show the steps in the order they would run, with their commands and handlers resolved, and which steps the cache would skip and why; run nothing, write nothing (--ui json: one JSON document)."`
	NoCache       bool     `name:"no-cache" help:"Run every step: do not skip steps whose inputs are unchanged (their successes are still recorded in the cache)."`
	Force         []string `name:"force" placeholder:"STEP" help:"Run STEP even if the cache has it (repeatable, or comma-separated; a fan-out step forces its items)."`
	capacityFlags `embed:""`

	// Set by a parent run for a sub-plan step (hidden: faber runs itself).
	RunID      string `name:"run-id" hidden:""`
	ParentRun  string `name:"parent-run" hidden:""`
	ParentStep string `name:"parent-step" hidden:""`
	OutputDir  string `name:"output-dir" hidden:""`
	// The private file of the child's context values (exec.ChildValues).
	ContextFile string `name:"context-file" hidden:""`
}

// Help explains run in more depth.
func (c *RunCmd) Help() string {
	return `Runs every step of PLAN as a subprocess (its own process group), in the
order its dependencies allow, at most --jobs at once. Each attempt's stdout and
stderr go to .faber/runs/<run-id>/logs/<step>/attempt-<N>.out|.err.

When a step fails, its exit-code rules (failure_handler) decide first, then its
on_failure handler: stop (default), continue, retry, or a /command. Every
transition is recorded; if the run does not succeed, faber prints how to
continue it with 'faber resume <run-id>'.

With STEP arguments, only those steps and every step they need run; with
--from STEP, that step and every step downstream of it, the steps before it
counting as done. The run records its part (faber status shows it) and
resume runs the same part.

In a terminal, the live view shows the run while a background faber runs
it (its output in .faber/runs/<run-id>/owner.log): q gives the prompt back
and the run goes on ('faber attach <run-id>' shows it again, 'faber stop
<run-id>' stops it); watched to its end, faber run exits with the run's code.

Examples:
  faber run examples/hello.yaml
  faber run plan.yaml --set work_id=137 --jobs 4
  faber run plan.yaml --set-file token=token.txt   a secret, kept out of argv (ps)
  FABER_SET_TOKEN=... faber run plan.yaml          the same from the environment
  faber run plan.yaml --memory 24G         steps start when their memory: fits
  faber run plan.yaml --dry-run            show the order and commands, run nothing
  faber run plan.yaml test                 only test and the steps it needs
  faber run plan.yaml --from deploy        deploy and what follows it
  faber run plan.yaml --ui json | jq .type`
}

// Run validates the plan, creates the run and runs it.
func (c *RunCmd) Run(g *Globals) error {
	go warmProcessStart()
	if err := jsonUI(c.JSON, &c.UI); err != nil {
		return err
	}
	if err := checkUI(g, c.UI); err != nil {
		return err
	}
	if c.Jobs < 0 {
		return withCode(exitUsage, fmt.Errorf("--jobs must be at least 1"))
	}
	if !c.DryRun && c.RunID == "" && c.ParentRun == "" && c.ContextFile == "" && detachable(g, c.UI) {
		// The live view: the run goes on in a background owner, so that
		// q gives the prompt back (detach.go).
		if started, err := runDetached(g); started {
			return err
		}
	}
	src := setSources{sets: c.Set, files: c.SetFile, env: os.Environ()}
	var inherited []string // the parent's secrets, masked here too
	if c.ContextFile != "" || c.ParentRun != "" {
		// A child run: its context is its plan: step's context:, never
		// the FABER_SET_* its parent was given.
		src.env = nil
	}
	if c.ContextFile != "" {
		cv, err := exec.ReadChildValues(c.ContextFile)
		if err != nil {
			return withCode(exitState, fmt.Errorf("--context-file: %w", unwrapPath(err)))
		}
		for i, k := range cv.Keys {
			src.sets = append(src.sets, k+"="+string(cv.Values[i]))
		}
		for _, v := range cv.Secrets {
			inherited = append(inherited, string(v))
		}
	}
	plan, data, opts, err := loadPlan(g, c.Plan, src)
	if err != nil {
		return err
	}
	var part *state.Part
	if len(c.Steps) > 0 || len(c.From) > 0 {
		if c.ParentRun != "" || c.RunID != "" {
			return withCode(exitUsage, errors.New("a sub-plan runs whole: no STEP arguments or --from"))
		}
		part = &state.Part{Steps: c.Steps, From: c.From}
		if plan, err = run.SelectPart(plan, part); err != nil {
			return withCode(exitUsage, err)
		}
	}
	flags, err := c.capacityFlags.capacity()
	if err != nil {
		return err
	}
	// A step that could never start refuses the plan before anything
	// starts (and what a dry run would show is that refusal).
	capacity, err := run.Capacity(plan, flags)
	if inv := (*spec.Invalid)(nil); errors.As(err, &inv) {
		return withCode(exitUsage, planError(inv))
	}
	for _, id := range c.Force {
		if plan.Step(id) == nil && !dynamicItemID(plan, id) {
			return withCode(exitUsage, fmt.Errorf("--force %s: the plan has no step %q", id, id))
		}
	}
	if c.DryRun {
		return dryRun(g, plan, c.Jobs, capacity, c.UI == "json", cacheOpts{noCache: c.NoCache, force: c.Force, part: part})
	}
	if err := checkOpenFiles(); err != nil {
		return err
	}
	if err := exec.CheckExecutors(plan); err != nil {
		return withCode(exitUsage, err)
	}
	abs, _ := filepath.Abs(c.Plan)
	now := time.Now()
	runID := c.RunID
	if runID != "" {
		// A parent run's sub-plan step: the child run exists after its first
		// attempt, and a retry or resume of the step resumes it.
		_, err := state.ReadMeta(g.StateDir, runID)
		if errors.Is(err, state.ErrDamaged) {
			return run.StoreError(err, runID, g.StateDir)
		}
		if err == nil {
			if v, err := run.View(g.StateDir, runID); err == nil && v.Run.Status == exec.RunSuccess {
				fmt.Fprintf(g.stdout, "child run %s already succeeded\n", runID)
				return nil
			}
			return resumeSession(g, runID, run.ResumeOptions{}, sessionArgs{jobs: c.Jobs, ui: c.UI, parentRun: c.ParentRun, outputDir: c.OutputDir})
		}
	} else {
		runID = state.NewRunID(g.StateDir, plan.Name, now)
	}
	meta := state.Meta{RunID: runID, Plan: plan.Name, PlanFile: abs, StartedAt: now, Created: now.UnixNano(), Sets: opts.Sets, Secrets: unique(append(exec.SecretValues(plan), inherited...)),
		ParentRunID: c.ParentRun, ParentStep: c.ParentStep, Part: part}
	sopt := storeOptions(g)
	sopt.Steps = len(plan.Steps)
	store, err := state.Create(g.StateDir, meta, data, sopt)
	if err != nil {
		return withCode(exitState, fmt.Errorf("cannot create run: %w", err))
	}
	s := &run.Session{StateDir: g.StateDir, RunID: runID, Plan: plan, Store: store, Capacity: capacity}
	return runSession(g, s, sessionArgs{jobs: c.Jobs, failFast: c.FailFast, ui: c.UI,
		parentRun: c.ParentRun, outputDir: c.OutputDir, cache: cacheOpts{noCache: c.NoCache, force: c.Force}})
}

// capacityFlags are run's and resume's --cpus, --memory and --gpus: the
// run's capacity, over the plan's resources: and the machine's.
type capacityFlags struct {
	CPUs   int    `name:"cpus" placeholder:"N" help:"The run's capacity in CPUs: running steps reserve their cpus: of it, and a step starts when its request fits (default: the plan's resources: cpus, else this machine's CPU count)."`
	Memory string `name:"memory" placeholder:"SIZE" help:"The run's capacity in memory (24G, 512MiB; binary units): running steps reserve their memory: of it (default: the plan's resources: memory, else this machine's physical memory)."`
	GPUs   int    `name:"gpus" placeholder:"N" help:"The run's GPU devices, indices 0..N-1: a step with gpus: k gets k of them, alone, in CUDA_VISIBLE_DEVICES and FABER_GPUS (default: the plan's resources: gpus, else what nvidia-smi -L lists, else none)."`
}

// capacity is the capacity the flags give (a 0 field: not given).
func (f capacityFlags) capacity() (spec.Capacity, error) {
	c := spec.Capacity{CPUs: f.CPUs, GPUs: f.GPUs}
	if f.CPUs < 0 {
		return c, withCode(exitUsage, fmt.Errorf("--cpus must be at least 1, not %d", f.CPUs))
	}
	if f.GPUs < 0 {
		return c, withCode(exitUsage, fmt.Errorf("--gpus must not be negative, not %d", f.GPUs))
	}
	if f.Memory != "" {
		m, err := spec.ParseSize(f.Memory)
		if err != nil {
			return c, withCode(exitUsage, fmt.Errorf("--memory: %v", err))
		}
		c.Memory = m
	}
	return c, nil
}

// sessionArgs are what run and resume choose for a session: the command
// line's settings, and a child run's parent.
type sessionArgs struct {
	jobs     int
	failFast bool
	ui       string
	// parentRun is set for a child run (a parent's sub-plan step);
	// outputDir is the parent's outputs dir that the child shares.
	parentRun string
	outputDir string
	cache     cacheOpts
	// stopAtStart stops the session as it starts, as a Ctrl-C would:
	// faber stop of a run whose faber died (it ends what was left).
	stopAtStart bool
}

// cacheOpts are run's --no-cache and --force.
type cacheOpts struct {
	noCache bool
	force   []string
	// part, for a dry run, is the part of the plan it shows (nil: all).
	part *state.Part
}

// runSession runs one session of a run (run.Session) with the renderer the
// user chose, and maps its outcome to an exit code.
func runSession(g *Globals, s *run.Session, a sessionArgs) error {
	if a.parentRun == "" {
		rememberStateDir(g) // a child run shares its parent's state dir
	}
	ctx, hard, trigger, stopSignals := signalContext()
	defer stopSignals()
	g.interrupt = trigger
	if a.stopAtStart {
		trigger(false)
	}

	ui := a.ui
	if g.owner != nil {
		ui = "owner" // a background owner: its foreground shows the run
	} else if ui == "" || ui == "auto" {
		ui = "plain"
		if wantTUI(g) {
			ui = "tui"
		}
	}
	var view *tui.TUI
	s.Show = func(control bool) (run.Display, <-chan struct{}) {
		switch ui {
		case "json":
			return tui.NewJSON(g.stdout), nil
		case "owner":
			return g.owner.show(g, s.RunID, control)
		case "tui":
			// The live view's r / x x reach the session through its
			// control channel: without one, the session cannot wait for
			// them.
			view = newTUI(g, s.Plan, s.RunID, control, s.Prior)
			return view, view.Decisions()
		}
		return tui.NewPlain(g.stdout, tui.NewStyles(useColor(g, g.stdout)), true), nil
	}
	s.Warn = func(msg string) { fmt.Fprintf(g.stderr, "faber: warning: %s\n", msg) }
	self, _ := os.Executable()
	s.Self = []string{self}
	s.Interrupt, s.HardStop = trigger, hard
	s.Jobs, s.FailFast, s.NoCache, s.Force = a.jobs, a.failFast, a.cache.noCache, a.cache.force
	s.OutputDir = a.outputDir
	if a.parentRun != "" {
		s.ResultFile = os.Getenv("FABER_RESULT")
		s.OutputsFile = os.Getenv("FABER_OUTPUTS")
	}
	s.WantOutput = ui != "json" && ui != "owner"
	s.Grown = tuneGCSteps
	s.CacheHit = tuneGCHit
	out, err := s.Run(ctx)
	if se := (*run.StoppedError)(nil); errors.As(err, &se) {
		return withCode(exitState, resumableStateErr(g, se.RunID, se.Err))
	}
	if err != nil {
		return withCode(exitState, err)
	}
	code := exitCodeFor(out.Status)
	if code != exitOK {
		hints := g.stderr
		if g.owner != nil {
			hints = g.owner.logOnly() // the foreground prints its own
		}
		// The live view's summary ends with the same hints.
		if view == nil || !view.Summarized() {
			for _, h := range tui.EndHints(s.RunID, out.States) {
				fmt.Fprintln(hints, h)
			}
		}
		fmt.Fprintf(hints, "resume with: faber resume %s\n", s.RunID)
	}
	return codeOnly(code)
}

// resumableStateErr is the message for a run stopped by a state problem.
// A full state dir is named first, in one line with what to do about it:
// everything committed stands, so freeing space and resuming loses nothing.
func resumableStateErr(g *Globals, runID string, err error) error {
	if exec.Scarce(err) && !state.IsNoSpace(err) {
		return scarceErr(runID, err)
	}
	if ce := (*exec.ChildStateError)(nil); errors.As(err, &ce) {
		return fmt.Errorf("%v, then: faber resume %s", err, runID)
	}
	if !state.IsNoSpace(err) {
		return err
	}
	var se *state.SpaceError
	var le *exec.LogError
	msg := ""
	switch {
	case errors.As(err, &se):
		msg = se.Error()
	case errors.As(err, &le):
		msg = fmt.Sprintf("state dir %s: no space left on device (writing the %s log of step %q)", g.StateDir, le.Kind, le.Step)
	default:
		msg = fmt.Sprintf("state dir %s: no space left on device (%v)", g.StateDir, err)
	}
	return fmt.Errorf("%s; free some space, then: faber resume %s", msg, runID)
}

// exitCodeFor maps a run status to faber's exit code.
func exitCodeFor(status string) int {
	switch status {
	case exec.RunSuccess:
		return exitOK
	case exec.RunPendingFailed, exec.RunAwaitingApproval:
		return exitPending
	case exec.RunInterrupted:
		return exitInterrupted
	}
	return exitFailed
}

// wantTUI is SPEC §1's rule for --ui auto.
func wantTUI(g *Globals) bool {
	if os.Getenv("CI") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	return onTerminal(g)
}

// onTerminal reports whether stdin and stdout are both terminals.
func onTerminal(g *Globals) bool {
	in, ok1 := g.stdin.(*os.File)
	out, ok2 := g.stdout.(*os.File)
	return ok1 && ok2 && isatty.IsTerminal(in.Fd()) && isatty.IsTerminal(out.Fd())
}

// jsonUI makes --json the --ui json it stands for; another --ui with it is
// a usage error.
func jsonUI(json bool, ui *string) error {
	if !json {
		return nil
	}
	if *ui != "auto" && *ui != "json" {
		return withCode(exitUsage, fmt.Errorf("--json is --ui json; it cannot go with --ui %s", *ui))
	}
	*ui = "json"
	return nil
}

// checkUI refuses --ui tui without a terminal, before anything starts.
func checkUI(g *Globals, ui string) error {
	if ui == "tui" && !onTerminal(g) && g.owner == nil {
		return withCode(exitUsage, errors.New("--ui tui needs a terminal on stdin and stdout; use --ui plain or --ui json"))
	}
	return nil
}

func useColor(g *Globals, w io.Writer) bool {
	if g.NoColor || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

func storeOptions(g *Globals) state.Options {
	opt := state.Options{Sync: g.sync}
	if g.Verbose {
		opt.Logger = g.stderr
	}
	return opt
}

// unwrapPath drops the "open " prefix of *PathError for shorter messages.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", pe.Path, pe.Err)
	}
	return err
}

// unique is vals without repeats, in order.
func unique(vals []string) []string {
	seen := map[string]bool{}
	out := vals[:0:0]
	for _, v := range vals {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// loadPlan reads, parses and validates a plan file with the context values
// given, for run and graph: usage errors (exit 2) for what is wrong with
// either.
func loadPlan(g *Globals, file string, src setSources) (*spec.Plan, []byte, spec.Options, error) {
	opts, err := parseSets(src)
	if err != nil {
		return nil, nil, opts, withCode(exitUsage, err)
	}
	data, err := spec.ReadPlanFile(file)
	var inv *spec.Invalid
	if errors.As(err, &inv) {
		return nil, nil, opts, withCode(exitUsage, planError(inv))
	}
	if err != nil {
		return nil, nil, opts, withCode(exitUsage, fmt.Errorf("cannot read plan: %w", unwrapPath(err)))
	}
	tuneGC(int64(len(data)))
	plan, err := parsePlan(g, file, data, opts)
	if err == nil {
		tuneGCSteps(len(plan.Steps)) // its fan-outs expanded
	}
	return plan, data, opts, err
}

// parsePlan parses and validates a plan for a run: an invalid plan is exit 2
// with its first error; warnings go to stderr.
func parsePlan(g *Globals, file string, data []byte, opts spec.Options) (*spec.Plan, error) {
	plan, err := spec.Parse(file, data, opts)
	if err != nil {
		var inv *spec.Invalid
		if errors.As(err, &inv) {
			return nil, withCode(exitUsage, planError(inv))
		}
		return nil, withCode(exitUsage, err)
	}
	for _, w := range plan.Warnings {
		fmt.Fprintf(g.stderr, "faber: warning: %s\n", w.Error())
	}
	return plan, nil
}

// dynamicItemID reports whether id names an item of a fan-out over glob: or
// lines:, whose items are known only once it runs (a --force of such an
// item cannot be checked before).
func dynamicItemID(p *spec.Plan, id string) bool {
	base, _, ok := spec.SplitItemID(id)
	if !ok {
		return false
	}
	s := p.Step(base)
	return s != nil && s.FanOut != nil && s.FanOut.Dynamic
}

// scarceErr is the message for a run stopped because faber ran out of file
// descriptors, processes or memory: what ran out first, the limit when it
// is the open-file one, what to do, and how to go on.
func scarceErr(runID string, err error) error {
	fix := "wait for other processes to end, or lower --jobs"
	switch {
	case errors.Is(err, syscall.EMFILE):
		fix = fmt.Sprintf("the open-file limit is %d: raise it (ulimit -n) or lower --jobs", openFileLimit())
	case errors.Is(err, syscall.ENFILE):
		fix = "the system's open-file table is full: close other programs or lower --jobs"
	case errors.Is(err, syscall.EAGAIN):
		fix = "the process limit is reached: raise it (ulimit -u) or lower --jobs"
	case errors.Is(err, syscall.ENOMEM):
		fix = "memory ran out: raise the limit (ulimit -v) or lower --jobs"
	}
	return fmt.Errorf("%v; %s, then: faber resume %s", err, fix, runID)
}

// warmProcessStart makes Go's one check of how it may wait for processes
// (on Linux: pidfd, which it tests by starting a child that exits at once)
// now, beside the plan's parse and the store's opening, rather than in the
// first step's start, where a run's first process would wait for it.
func warmProcessStart() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Release()
	}
}
