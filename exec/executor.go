package exec

import (
	"encoding/json"
	osexec "os/exec"

	"github.com/faber-run/faber/spec"
)

// An executor runs step attempts somewhere: local.go on this machine (a
// process group, SPEC §3), slurm.go through srun (SPEC §9). The seam has two
// halves, after Nomad's task drivers and Dagu's executors:
//
//   - executorKind is the engine at run level: what a run, a resume and a
//     dry run need of it, and the attempt executors it makes;
//   - attemptExecutor is one attempt: how it starts, stops gracefully and
//     hard, how it ended (exit code, cause, usage) and which of its output
//     lines are the engine's own.
//
// A new engine is one file with a type for each half plus a row in
// executorKinds; the failure pipeline, logs, records, resume and dry runs
// do not change. Handlers, recovery scripts and a sub-plan's child faber
// always run on this machine.

// executorKind is an engine, selected by a step's `executor:`.
type executorKind interface {
	// name is the value of `executor:` that selects it.
	name() string
	// attempt returns the executor of attempt n of step s, which runs in
	// dir (the step's working directory) under limits lim.
	attempt(runID string, s *spec.Step, n int, dir string, lim limits) attemptExecutor
	// describe returns, for a dry run, the argv that runs argv (an
	// attempt's, before wrapping) under the engine and the part of it that
	// is the engine's own (nil when the engine adds nothing). runID and
	// attempt are the dry run's placeholders; throttle is, on a fan-out's
	// item, its fan-out's max_parallel (0: none), which an engine that
	// runs items as an array passes as the array's throttle.
	describe(runID, attempt string, s *spec.Step, dir string, argv []string, throttle int) (wrapped, prefix []string)
	// reattachable returns the steps of prior whose running attempt is a
	// job the engine still knows (queued, running, or ended with a record
	// of how): the next session waits for it instead of running the step
	// again. spare[i], the environment entry that marks steps[i]'s job's
	// processes ("SLURM_JOB_ID=12"), keeps them from the end of this
	// machine's leftovers (a single-node cluster runs them here).
	// An error says the engine could not be asked about jobs it has of
	// the run: resuming then could run a step twice.
	reattachable(prior *Prior) (steps, spare []string, err error)
	// endLeftovers ends what a dead faber left running for run runID
	// (prior is its records) before anything of it runs again, except the
	// attempts of the steps in keep and processes marked by spare, and
	// returns how many scheduler jobs it canceled, which resume reports.
	endLeftovers(runID string, prior *Prior, keep map[string]bool, spare []string) int
	// definition returns what the step's settings for the engine add to
	// its definition hash (resume.go), as a JSON key and value, or "" when
	// nothing: a local step's hash stays what it was before there were
	// engines.
	definition(s *spec.Step) (key string, value any)
	// title names the engine's jobs in messages ("Slurm").
	title() string
	// check says what the engine lacks where faber runs for the steps
	// that use it (its client commands in PATH), before a run starts
	// anything; nil when nothing.
	check(steps []*spec.Step) error
}

// arrayKind is an engine that submits the items of a fan-out as job
// arrays (batch_array.go): Slurm's and Grid Engine's batch modes.
type arrayKind interface {
	// arrayKey is what the items of one array share (the fan-out, and the
	// limits its submission carries); ok is false when step s's attempts
	// are not submitted as arrays (not an item, or mode: blocking).
	arrayKey(s *spec.Step, lim limits) (key string, ok bool)
}

// executorKinds make the engines, by the name `executor:` gives them; ""
// (no executor:) is this machine. A run makes each engine it uses once
// (Runner.kind): an engine may keep what the run's attempts share, such as
// the poller of a batch scheduler's jobs.
var executorKinds = map[string]func() executorKind{
	"":            func() executorKind { return localKind{} },
	executorLocal: func() executorKind { return localKind{} },
	executorSlurm: func() executorKind { return &slurmKind{} },
	executorSge:   func() executorKind { return &sgeKind{} },
}

// kindOf is the engine that runs step s's attempts. A sub-plan step's
// child faber runs here, whatever its executor says.
func kindOf(s *spec.Step) executorKind {
	if s.PlanPath != "" {
		return localKind{}
	}
	return kindNamed(s.Executor)
}

// kindNamed is the engine the step's `executor:` names, which a sub-plan
// step inherits from its plan too: its settings are part of the step's
// definition, and a resume asks the engine for leftovers.
func kindNamed(name string) executorKind {
	if k, ok := executorKinds[name]; ok {
		return k()
	}
	return localKind{} // spec accepts no other name
}

// kind is the run's instance of the engine that runs step s's attempts.
func (r *Runner) kind(s *spec.Step) executorKind {
	name := kindOf(s).name()
	r.kindsMu.Lock()
	defer r.kindsMu.Unlock()
	k, ok := r.kinds[name]
	if !ok {
		k = kindNamed(name)
		if r.kinds == nil {
			r.kinds = map[string]executorKind{}
		}
		r.kinds[name] = k
	}
	return k
}

// attemptExecutor is one attempt on its engine. It is a processExecutor
// (the attempt is a process faber starts and waits for: on this machine,
// or srun) or a batchExecutor (a job submitted to a scheduler, which runs
// without a process of faber's and outlives it).
type attemptExecutor interface {
	// ownLine reports a stderr line that is the engine's rather than the
	// step's, so {error} skips it; stopped says faber stopped the attempt.
	ownLine(line []byte, stopped bool) bool
}

// processExecutor runs an attempt as a process faber starts: runProcLogs
// keeps the process group and the log files, the executor decides what
// runs, how it stops and what its end means.
type processExecutor interface {
	attemptExecutor
	// wrap returns the argv that runs argv under the engine (srun … --
	// argv); it is the attempt's argv from then on.
	wrap(argv []string) []string
	// writesLogs reports that the process writes the attempt's log files
	// itself, as on this machine: wanted output lines are read back from
	// the files (echo.go) and a script may run without a shell (direct.go).
	// An engine whose client relays the output gets pipes and a shell.
	writesLogs() bool
	// setUp makes what the attempt runs in, just before it starts (the
	// local executor's cgroup). Its error does not stop the attempt: the
	// attempt runs without, and the error is recorded (outcome.cgErr).
	setUp() error
	// command returns the command that runs argv (wrapped), built by
	// newCmd, ready to start.
	command(argv []string, newCmd func(argv []string) *osexec.Cmd) *osexec.Cmd
	// terminate asks the attempt to end gracefully (a timeout, a stop);
	// kill ends it at once. grp is the process group faber started.
	terminate(grp procGroup)
	kill(grp procGroup)
	// finish completes the outcome once the process group is gone: what
	// the attempt used (o.use), why it ended (o.cause), an exit code the
	// engine corrects. It returns a reason for {error} when the engine,
	// not the step, decided how the attempt ended, else "". hard is closed
	// by a hard stop (a second Ctrl-C): what finish waits for (a job
	// leaving a cluster's queue) must then not be waited for.
	finish(argv []string, o *outcome, hard <-chan struct{}) string
	// release frees what setUp made, after every process of the attempt
	// got SIGKILL.
	release()
}

// runAttempt runs ps's process, or submits its job, to the end (its log
// files opened already).
func runAttempt(ps procSpec, ctrl *procCtrl, logs procLogs) outcome {
	if b, ok := ps.exec.(batchExecutor); ok {
		return runBatch(ps, ctrl, logs, b)
	}
	return runProcLogs(ps, ctrl, logs)
}

// attemptExecutor is the executor of the step's attempt n.
func (r *Runner) attemptExecutor(sr *stepRun, n int, vars map[string]string, lim limits) attemptExecutor {
	return r.kind(sr.def).attempt(r.RunID, sr.def, n, r.workDir(sr, vars), lim)
}

// usedKinds are the engines a run of p needs at run level: this machine's
// always (handlers, recovery scripts and the clients of other engines run
// here), and those of its steps and end step.
func usedKinds(p *spec.Plan) []executorKind {
	kinds := []executorKind{localKind{}}
	seen := map[string]bool{executorLocal: true}
	add := func(s *spec.Step) {
		if k := kindNamed(s.Executor); !seen[k.name()] {
			seen[k.name()] = true
			kinds = append(kinds, k)
		}
	}
	for _, s := range p.Steps {
		add(s)
	}
	if p.End != nil {
		add(p.End)
	}
	return kinds
}

// CheckExecutors says, before a run or a resume of plan p starts
// anything, what an engine its steps use lacks here (Slurm's sbatch not in
// PATH, say): without it every attempt would fail one by one, each through
// the failure pipeline.
func CheckExecutors(p *spec.Plan) error {
	byKind := map[string][]*spec.Step{}
	var kinds []executorKind
	all := append(append([]*spec.Step(nil), p.Steps...), p.End)
	for _, s := range all {
		if s == nil {
			continue
		}
		k := kindOf(s)
		if _, ok := byKind[k.name()]; !ok {
			kinds = append(kinds, k)
		}
		byKind[k.name()] = append(byKind[k.name()], s)
	}
	for _, k := range kinds {
		if err := k.check(byKind[k.name()]); err != nil {
			return err
		}
	}
	return nil
}

// Canceled says how many leftover jobs of an engine a resume canceled.
type Canceled struct {
	Engine string // as messages name it: "Slurm"
	Jobs   int
}

// Leftovers is what a resume did with what a dead owner left running.
type Leftovers struct {
	Canceled []Canceled
	// Reattach are the steps whose batch job outlived the owner: the
	// next session waits for the job (PrepareResume keeps them running).
	Reattach map[string]bool
}

// EndLeftovers ends what a dead owner of run runID left running, on every
// engine plan p uses (an engine it does not use is not asked: squeue
// without a configuration retries for a minute), so that no step ever runs
// twice at the same time, except the batch jobs still known to their
// scheduler, which the next session re-attaches to.
func EndLeftovers(p *spec.Plan, prior *Prior, runID string) (Leftovers, error) {
	kinds := usedKinds(p)
	out := Leftovers{Reattach: map[string]bool{}}
	var spare []string
	for _, k := range kinds {
		steps, sp, err := k.reattachable(prior)
		if err != nil {
			return out, err
		}
		for i, id := range steps {
			// Never the end step; and not a step an edited plan changed:
			// its job runs what the step no longer says, and is canceled.
			if s := p.Step(id); s != nil && (prior.Steps[id].Hash == "" || prior.Steps[id].Hash == StepHash(p, s)) {
				out.Reattach[id] = true
				spare = append(spare, sp[i])
			}
		}
	}
	for _, k := range kinds {
		if n := k.endLeftovers(runID, prior, out.Reattach, spare); n > 0 {
			out.Canceled = append(out.Canceled, Canceled{Engine: k.title(), Jobs: n})
		}
	}
	return out, nil
}

// DescribeExecutor says, for a dry run, how step s's attempts run: the
// engine's name, the argv that runs argv (before wrapping) under it, and
// the engine's own part of that argv (nil when it adds nothing). runID and
// attempt are placeholders for the run id and the attempt number; throttle
// is an item's fan-out's max_parallel (0: none, or not an item).
func DescribeExecutor(s *spec.Step, runID, attempt, dir string, argv []string, throttle int) (name string, wrapped, prefix []string) {
	k := kindOf(s)
	wrapped, prefix = k.describe(runID, attempt, s, dir, argv, throttle)
	return k.name(), wrapped, prefix
}

// withDefinition appends what step s's engine adds to its definition hash
// to base, a JSON object: `,"executor":NAME,KEY:VALUE` before its closing
// brace (KEY:VALUE left out when VALUE is null), so that a step on this
// machine hashes as it did before there were engines.
func withDefinition(base []byte, s *spec.Step) []byte {
	k := kindNamed(s.Executor)
	key, v := k.definition(s)
	if key == "" || len(base) < 2 {
		return base
	}
	name, _ := json.Marshal(k.name())
	out := append([]byte(nil), base[:len(base)-1]...)
	out = append(out, `,"executor":`...)
	out = append(out, name...)
	if vb, err := json.Marshal(v); err == nil && string(vb) != "null" {
		kb, _ := json.Marshal(key)
		out = append(out, ',')
		out = append(out, kb...)
		out = append(out, ':')
		out = append(out, vb...)
	}
	return append(out, '}')
}
