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
	// attempt are the dry run's placeholders.
	describe(runID, attempt string, s *spec.Step, dir string, argv []string) (wrapped, prefix []string)
	// endLeftovers ends what a dead faber left running for run runID
	// (prior is its records) before anything of it runs again, and returns
	// how many scheduler jobs it canceled, which resume reports.
	endLeftovers(runID string, prior *Prior) int
	// definition returns what the step's settings for the engine add to
	// its definition hash (resume.go), as a JSON key and value, or "" when
	// nothing: a local step's hash stays what it was before there were
	// engines.
	definition(s *spec.Step) (key string, value any)
	// title names the engine's jobs in messages ("Slurm").
	title() string
}

// executorKinds are the engines, by the name `executor:` gives them; ""
// (no executor:) is this machine.
var executorKinds = map[string]executorKind{
	"":            localKind{},
	executorLocal: localKind{},
	executorSlurm: slurmKind{},
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
		return k
	}
	return localKind{} // spec accepts no other name
}

// attemptExecutor runs one process of an attempt where its engine says.
// runProcLogs keeps the process group and the log files; the executor
// decides what runs, how it stops and what its end means.
type attemptExecutor interface {
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
	// ownLine reports a stderr line that is the engine's rather than the
	// step's, so {error} skips it; stopped says faber stopped the attempt.
	ownLine(line []byte, stopped bool) bool
	// release frees what setUp made, after every process of the attempt
	// got SIGKILL.
	release()
}

// attemptExecutor is the executor of the step's attempt n.
func (r *Runner) attemptExecutor(sr *stepRun, n int, vars map[string]string, lim limits) attemptExecutor {
	return kindOf(sr.def).attempt(r.RunID, sr.def, n, r.workDir(sr, vars), lim)
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

// Canceled says how many leftover jobs of an engine a resume canceled.
type Canceled struct {
	Engine string // as messages name it: "Slurm"
	Jobs   int
}

// EndLeftovers ends what a dead owner of run runID left running, on every
// engine plan p uses (an engine it does not use is not asked: squeue
// without a configuration retries for a minute), so that no step ever runs
// twice at the same time. It reports the engines that canceled jobs.
func EndLeftovers(p *spec.Plan, prior *Prior, runID string) []Canceled {
	var out []Canceled
	for _, k := range usedKinds(p) {
		if n := k.endLeftovers(runID, prior); n > 0 {
			out = append(out, Canceled{Engine: k.title(), Jobs: n})
		}
	}
	return out
}

// DescribeExecutor says, for a dry run, how step s's attempts run: the
// engine's name, the argv that runs argv (before wrapping) under it, and
// the engine's own part of that argv (nil when it adds nothing). runID and
// attempt are placeholders for the run id and the attempt number.
func DescribeExecutor(s *spec.Step, runID, attempt, dir string, argv []string) (name string, wrapped, prefix []string) {
	k := kindOf(s)
	wrapped, prefix = k.describe(runID, attempt, s, dir, argv)
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
