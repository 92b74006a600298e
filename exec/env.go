package exec

import (
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/faber-run/faber/spec/subst"
)

// logPath is runs/<run-id>/logs/<step-id>/<kind>-<n>.<ext>.
func (r *Runner) logPath(sr *stepRun, kind string, n int, ext string) string {
	return LogPath(r.RunDir, sr.def.ID, kind, n, ext)
}

// logDir is the directory of a step's logs, runs/<run-id>/logs/<step-id>.
func logDir(runDir, stepID string) string { return filepath.Join(runDir, "logs", stepID) }

// LogPath is where a step's log of the given kind (attempt, handler,
// recovery) and number lives; stream is "out" or "err".
func LogPath(runDir, stepID, kind string, n int, stream string) string {
	return filepath.Join(logDir(runDir, stepID), kind+"-"+strconv.Itoa(n)+"."+stream)
}

// vars is the substitution map for a step process (SPEC §4.1). fail is the
// failed attempt for handlers and recovery scripts.
func (r *Runner) vars(sr *stepRun, attempt int, fail *outcome) map[string]string {
	var fv *FailValues
	if fail != nil {
		fv = &FailValues{
			Error:      sr.st.Error,
			ExitCode:   fail.exitText(),
			StdoutFile: r.logPath(sr, "attempt", sr.failedN, "out"),
			StderrFile: r.logPath(sr, "attempt", sr.failedN, "err"),
		}
	}
	return StepVars(r.Plan, sr.def, r.RunID, strconv.Itoa(attempt), fv)
}

// env builds a process environment: inherited < plan env < step env <
// FABER_* (SPEC §10). extra entries come last.
func (r *Runner) env(sr *stepRun, attempt int, vars map[string]string, result string, fail *outcome, extra []string) []string {
	p := r.Plan
	e := make([]string, 0, len(r.baseEnv)+len(p.Env)+len(sr.def.Env)+20+len(extra))
	e = append(e, r.baseEnv...)
	add := func(keys []string, m map[string]string) {
		for _, k := range keys {
			val, err := subst.Expand(m[k], vars)
			if err != nil {
				val = m[k]
			}
			e = append(e, k+"="+val)
		}
	}
	add(p.EnvKeys, p.Env)
	add(sr.def.EnvKeys, sr.def.Env)
	e = append(e,
		"FABER_RUN_ID="+r.RunID,
		"FABER_PLAN="+r.planFile,
		"FABER_STEP_ID="+sr.def.ID,
		"FABER_STEP_NAME="+sr.def.Name,
		"FABER_PHASE="+sr.def.Phase,
		"FABER_ATTEMPT="+strconv.Itoa(attempt),
		"FABER_OUTPUT_DIR="+r.outDir,
		"FABER_RESULT="+result,
	)
	if r.StateDir != "" {
		// A step that calls faber (status, events) finds this run's state
		// dir whatever its working directory.
		e = append(e, "FABER_STATE_DIR="+r.StateDir)
	}
	for _, k := range p.ContextKeys {
		e = append(e, "FABER_CTX_"+strings.ToUpper(k)+"="+p.Context[k])
	}
	if it := sr.def.Item; it != nil {
		e = append(e, "FABER_ITEM="+it.Value, "FABER_ITEM_KEY="+it.Key)
		for _, k := range it.Names {
			e = append(e, "FABER_ITEM_"+strings.ToUpper(k)+"="+it.Fields[k])
		}
	}
	if fail != nil {
		e = append(e,
			"FABER_ERROR="+sr.st.Error,
			"FABER_RETURN_CODE="+fail.exitText(),
			"FABER_FAILED_ATTEMPT="+strconv.Itoa(sr.failedN),
			"FABER_STDOUT_FILE="+r.logPath(sr, "attempt", sr.failedN, "out"),
			"FABER_STDERR_FILE="+r.logPath(sr, "attempt", sr.failedN, "err"),
		)
	}
	if sr.isEnd {
		e = append(e, "FABER_RUN_STATUS="+endRunStatus(r.endStatus), "FABER_FAILED_STEPS="+strings.Join(r.endFailed, " "))
	}
	e = append(e, sr.gpuEnv()...)
	e = append(e, extra...)
	// No variable can hold a NUL byte (the process would not start): it
	// becomes U+FFFD, as in arguments (SPEC §10); every other byte of a
	// context value or of {error} is kept.
	for i := len(r.baseEnv); i < len(e); i++ {
		e[i] = subst.CleanValue(e[i])
	}
	return e
}

// endRunStatus is FABER_RUN_STATUS: success or failed (SPEC §7).
func endRunStatus(s string) string {
	if s == RunSuccess {
		return "success"
	}
	return "failed"
}

// workDir is the step's working directory (see WorkDir).
func (r *Runner) workDir(sr *stepRun, vars map[string]string) string {
	return WorkDir(r.Plan, sr.def, vars)
}

// scriptArgv renders script for the step's shell (see ScriptArgv), with the
// shell looked up in PATH.
func (r *Runner) scriptArgv(sr *stepRun, script string, vars map[string]string) (argv, env []string, err error) {
	argv, env, err = ScriptArgv(r.Plan, sr.def, script, vars)
	if err != nil {
		return nil, nil, err
	}
	argv[0] = r.lookShell(argv[0])
	return argv, env, nil
}

// lookShell finds the shell in PATH once per run, not once per attempt (a
// PATH search is a few stat calls per directory). A shell that is not found
// is left as written, so the attempt fails with a clear "cannot start".
func (r *Runner) lookShell(sh string) string {
	if strings.ContainsRune(sh, filepath.Separator) || strings.ContainsRune(sh, '/') {
		return sh
	}
	if p, ok := r.shells[sh]; ok {
		return p
	}
	p, err := osexec.LookPath(sh)
	if err != nil {
		p = sh
	}
	if r.shells == nil {
		r.shells = map[string]string{}
	}
	r.shells[sh] = p
	return p
}

func (r *Runner) grace(sr *stepRun) time.Duration {
	return firstDur(sr.def.KillGrace, r.Plan.KillGrace, 10*time.Second)
}

// attemptSpec builds the process of the step's next attempt.
func (r *Runner) attemptSpec(sr *stepRun) (procSpec, error) {
	n := sr.st.Attempt
	vars := r.vars(sr, n, nil)
	if err := r.addUses(vars, sr.def.Uses); err != nil {
		return procSpec{}, err
	}
	if sr.def.PlanPath != "" {
		return r.childSpec(sr, vars)
	}
	argv, extra, kind, err := StepArgv(r.Plan, sr.def, vars)
	if err != nil {
		return procSpec{}, err
	}
	lim := limitsOf(sr.def, sr.st)
	ex := r.attemptExecutor(sr, n, vars, lim)
	pe, _ := ex.(processExecutor)
	var direct []string
	if kind == KindScript {
		argv[0] = r.lookShell(argv[0])
		if pe != nil && pe.writesLogs() && len(extra) == 0 {
			direct = r.directArgv(sr)
		}
	}
	if pe != nil {
		argv = pe.wrap(argv)
	}
	var shellArgv []string
	if direct != nil {
		// As sh would, the program sees its working directory as PWD.
		shellArgv, argv = argv, direct
		extra = append(extra, "PWD="+r.workDir(sr, vars))
	}
	ps := r.procFor(sr, "attempt", argv, lim.timeout, n, nil, vars, extra...)
	ps.shellArgv = shellArgv
	ps.exec = ex
	ps.lim = lim
	return ps, nil
}

// directArgv is the argv that runs the step's run: script without a shell
// (direct.go), or nil when the shell must run it.
func (r *Runner) directArgv(sr *stepRun) []string {
	words := DirectWords(r.Plan, sr.def, sr.def.Run)
	if words == nil {
		return nil
	}
	prog := words[0]
	if !strings.Contains(prog, "/") {
		if prog = r.lookShell(prog); !filepath.IsAbs(prog) {
			return nil // not in PATH: the shell says so, as it always did
		}
	}
	return append([]string{prog}, words[1:]...)
}

// auxSpec builds a recovery script process for the failed attempt.
func (r *Runner) auxSpec(sr *stepRun, kind, script string, timeout time.Duration) (procSpec, error) {
	vars := r.vars(sr, sr.failedN, sr.failed)
	if err := r.addUsesIn(vars, script); err != nil {
		return procSpec{}, err
	}
	argv, env, err := r.scriptArgv(sr, script, vars)
	if err != nil {
		return procSpec{}, err
	}
	return r.procFor(sr, kind, argv, timeout, sr.failedN, sr.failed, vars, env...), nil
}

// procFor fills in logs, result file, environment and the output tee.
// vars is the substitution map of this process (r.vars(sr, n, fail)), which
// every caller has built already.
func (r *Runner) procFor(sr *stepRun, kind string, argv []string, timeout time.Duration, n int, fail *outcome, vars map[string]string, extra ...string) procSpec {
	result := r.logPath(sr, kind, n, "result.json")
	var outputs string
	if kind == "attempt" && !sr.isEnd {
		outputs = r.logPath(sr, kind, n, "outputs")
		extra = append(extra, "FABER_OUTPUTS="+outputs)
	}
	ps := procSpec{
		argv:        argv,
		dir:         r.workDir(sr, vars),
		env:         r.env(sr, n, vars, result, fail, extra),
		stdoutPath:  r.logPath(sr, kind, n, "out"),
		stderrPath:  r.logPath(sr, kind, n, "err"),
		resultPath:  result,
		outputsPath: outputs,
		timeout:     timeout,
		grace:       r.grace(sr),
		// An agent's own report of what it spent (README "Budgets") is
		// read only where a budget could use it.
		agentUsage: r.budgets && kind != "recovery" && sr.def.PlanPath == "",
	}
	// A child run (faber --ui json) reports its events on stdout.
	child := sr.def.PlanPath != "" && kind == "attempt"
	ps.pipeLines = child
	if r.Sink != nil && (child || r.WantOutput) {
		id, sink := sr.def.ID, r.Sink
		want := r.WantOutput
		ps.onLine = func(stream string, line []byte) {
			// A child run (faber --ui json) reports its events on stdout:
			// hand them on marked with the child's run id.
			if child && stream == "stdout" && len(line) > 0 && line[0] == '{' {
				var ce Event
				if json.Unmarshal(line, &ce) == nil && ce.Type != "" && ce.RunID != "" {
					r.mask.Event(&ce)
					sink.Event(Event{Type: EvChildEvent, RunID: r.RunID, StepID: id, Attempt: n, Child: &ce})
					return
				}
			}
			if want {
				sink.Event(Event{Type: EvStepOutput, RunID: r.RunID, StepID: id, Attempt: n, Line: r.mask.Bytes(line), Data: &StepOutput{Stream: stream, Kind: kind}})
			}
		}
	}
	ps.onLogErr = func(err error) {
		r.msgs <- msg{kind: mLogFailed, sr: sr, err: &LogError{Step: sr.def.ID, Kind: kind, Err: err}}
	}
	if kind == "attempt" {
		ps.onStart = func(pgid int, pstart string) {
			r.msgs <- msg{kind: mStarted, sr: sr, pgid: pgid, pstart: pstart}
		}
		ps.onJob = func(job string) {
			r.msgs <- msg{kind: mStarted, sr: sr, job: job}
		}
	}
	return ps
}

// SelfProgram is the program to start faber itself as: self, or on Linux,
// once self's file is gone (go run's binary removed when the foreground
// that q left has exited; an upgrade mid-run), /proc/PID/exe of this
// process, which is still this binary (and unlike /proc/self/exe stays it
// through a wrapper shell).
func SelfProgram(self string) string {
	if _, err := os.Stat(self); err == nil || runtime.GOOS != "linux" {
		return self
	}
	p := fmt.Sprintf("/proc/%d/exe", os.Getpid())
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return self
}

// childSpec runs a sub-plan step: faber itself runs (or, when the child run
// exists, resumes) the child plan as a linked run sharing this run's state
// dir and outputs. Its exit code is the child's outcome: 0 success, 1
// failed (the child writes {error} naming its failed steps to
// $FABER_RESULT), 3 pending_failed, 130 interrupted.
func (r *Runner) childSpec(sr *stepRun, vars map[string]string) (procSpec, error) {
	if len(r.Self) == 0 {
		return procSpec{}, fmt.Errorf("step %q: cannot run a sub-plan: faber's own path is unknown", sr.def.ID)
	}
	self := append([]string{}, r.Self...)
	self[0] = SelfProgram(self[0])
	argv := append(self, "run", sr.def.PlanPath,
		"--run-id", sr.st.ChildRunID, "--parent-run", r.RunID, "--parent-step", sr.def.ID,
		"--output-dir", r.outDir, "--ui", "json", "--state-dir", r.StateDir)
	keys, vals, err := ChildContext(sr.def, vars)
	if err != nil {
		return procSpec{}, err
	}
	// The values go in a private file, never in argv: ps shows argv to
	// every user of the machine.
	cv := &ChildValues{Keys: keys}
	for _, k := range keys {
		cv.Values = append(cv.Values, []byte(vals[k]))
	}
	for _, v := range r.secrets {
		cv.Secrets = append(cv.Secrets, []byte(v))
	}
	path := r.logPath(sr, "attempt", sr.st.Attempt, "context")
	if err := WriteChildValues(path, cv); err != nil {
		return procSpec{}, fmt.Errorf("step %q: hand the child its context: %w", sr.def.ID, err)
	}
	argv = append(argv, "--context-file", path)
	if r.Jobs > 0 {
		argv = append(argv, "--jobs", strconv.Itoa(r.Jobs))
	}
	return r.procFor(sr, "attempt", argv, sr.def.Timeout, sr.st.Attempt, nil, vars), nil
}

// absPath is path made absolute against faber's working directory (left as
// it is in the rare case the working directory cannot be read).
func absPath(path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// SetEnvPrefix starts the environment variables that give faber context
// values (FABER_SET_<KEY>, as --set KEY=...).
const SetEnvPrefix = "FABER_SET_"

// withoutSets is env without the FABER_SET_* entries: faber reads them, and
// its programs get the values as FABER_CTX_<KEY>. Left in, they would reach
// a sub-plan's child faber and set its context over the parent's context:.
// FABER_OUTPUTS goes too: a child run's is its parent step's, which only
// the child faber writes (its own handlers must not find it).
func withoutSets(env []string) []string {
	out := env[:0:0]
	for _, e := range env {
		if !strings.HasPrefix(e, SetEnvPrefix) && !strings.HasPrefix(e, "FABER_OUTPUTS=") {
			out = append(out, e)
		}
	}
	return out
}
