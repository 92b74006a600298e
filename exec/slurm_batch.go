package exec

import (
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/faber-run/faber/spec"
)

// Slurm's batch mode, the default of executor: slurm: each attempt is an
// sbatch job that runs the attempt's argv through a two-line job script
// (`exec "$@"`: the argv reaches the job as sbatch's arguments, never
// through a shell's quoting). The job writes the attempt's log files
// itself (--output, --error, --open-mode=append), gets the environment
// faber built (--export=ALL of sbatch's) and is never requeued by Slurm
// (--no-requeue: faber's rules decide retries). One squeue call per tick
// covers every job of the run; a job that left squeue (MinJobAge after it
// ended) is looked up in sacct where the cluster keeps accounting.

// slurmJobScript is the batch script of every attempt.
const slurmJobScript = "#!/bin/sh\n# faber: runs the attempt's argv, given as this script's arguments\nexec \"$@\"\n"

// batch is the executor of one attempt as a batch job.
func (k *slurmKind) batch(runID, job string, s *spec.Step, dir string, lim limits) *slurmBatch {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return &slurmBatch{kind: k, runID: runID, job: job, dir: dir, step: s, lim: lim}
}

// poller is the run's poller of its Slurm jobs.
func (k *slurmKind) poller() *jobPoller {
	k.pollOnce.Do(func() { k.poll = newJobPoller(slurmListJobs, slurmRecord) })
	return k.poll
}

// slurmBatch is one attempt as a Slurm batch job.
type slurmBatch struct {
	kind  *slurmKind
	runID string
	job   string // faber-<run-id>-<step>-a<N>: leftover jobs are found by it
	dir   string // absolute
	step  *spec.Step
	lim   limits
}

// sbatchArgs are sbatch's options and arguments for the attempt, its job
// script at script and its logs at out and errPath.
func (a *slurmBatch) sbatchArgs(script, out, errPath string, argv []string) []string {
	args := []string{"--parsable", "--job-name=" + a.job, "--chdir=" + a.dir, "--export=ALL", "--no-requeue",
		"--open-mode=append", "--output=" + out, "--error=" + errPath}
	args = append(args, slurmLimits(a.step, a.lim)...)
	args = append(args, script)
	return append(args, argv...)
}

// submit submits the attempt: an item of a fan-out joins the array of
// the items started with it (slurm_array.go), any other step is a job.
func (a *slurmBatch) submit(ps procSpec) (string, error) {
	if key, ok := a.kind.arrayKey(a.step, a.lim); ok {
		return a.kind.arrays().submit(key, a, ps)
	}
	return a.submitJob(ps)
}

// arrayKey: the items of a fan-out in batch mode are arrays, by their
// limits.
func (*slurmKind) arrayKey(s *spec.Step, lim limits) (string, bool) {
	if s.FanOutOf == "" || slurmBlocking(s) {
		return "", false
	}
	return s.FanOutOf + "\x00" + strings.Join(slurmLimits(s, lim), "\x00"), true
}

// submitJob submits the attempt as a job of its own.
func (a *slurmBatch) submitJob(ps procSpec) (string, error) {
	out, err1 := filepath.Abs(ps.stdoutPath)
	errPath, err2 := filepath.Abs(ps.stderrPath)
	if err1 != nil || err2 != nil {
		return "", fmt.Errorf("log paths: %v %v", err1, err2)
	}
	if strings.ContainsAny(out+errPath, `%\`) {
		// sbatch reads % and \ in --output as patterns.
		return "", fmt.Errorf("slurm batch mode cannot write logs under %s: the path holds %% or \\ (use mode: blocking, or another state dir)", filepath.Dir(out))
	}
	script := strings.TrimSuffix(out, ".out") + ".sbatch"
	if err := os.WriteFile(script, []byte(slurmJobScript), 0o700); err != nil {
		return "", err
	}
	return runSbatch(a.sbatchArgs(script, out, errPath, ps.argv), ps.env, a.dir)
}

// runSbatch runs sbatch with args in dir, with environment env (the job's:
// --export=ALL), and returns the id of the job it submitted.
func runSbatch(args, env []string, dir string) (string, error) {
	stdout, stderr, err := runClient(slurmCmdTimeout, slurmCmdTimeout, env, dir, "sbatch", args...)
	var ee *osexec.ExitError
	switch {
	case err != nil && errors.As(err, &ee):
		msgs := clientMessages(stderr, err, func(l string) string {
			return strings.TrimSpace(strings.TrimPrefix(l, "sbatch: error: "))
		})
		return "", &rejected{log: stderr, msg: "slurm rejected the job: " + strings.Join(msgs, "; ") + userOptionsOf(args)}
	case err != nil:
		return "", err
	}
	id, _, _ := strings.Cut(strings.TrimSpace(stdout), ";")
	if _, err := strconv.Atoi(id); err != nil {
		return "", &rejected{msg: fmt.Sprintf("slurm rejected the job: sbatch printed %q, not a job id", strings.TrimSpace(stdout))}
	}
	return id, nil
}

// userOptionsOf is " (sbatch OPTIONS)" with the options that came from the
// step's slurm: block and limits, which a rejection is about, or "".
func userOptionsOf(args []string) string {
	var o []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			break // the job script
		}
		switch {
		case a == "--parsable", a == "--export=ALL", a == "--no-requeue", a == "--open-mode=append", strings.HasPrefix(a, "--array="),
			strings.HasPrefix(a, "--job-name="), strings.HasPrefix(a, "--chdir="),
			strings.HasPrefix(a, "--output="), strings.HasPrefix(a, "--error="):
			continue
		}
		o = append(o, a)
	}
	if len(o) == 0 {
		return ""
	}
	return " (sbatch " + strings.Join(o, " ") + ")"
}

func (a *slurmBatch) poller() *jobPoller { return a.kind.poller() }

func (a *slurmBatch) ref(id string) string { return executorSlurm + ":" + id }

// cancel: a queued job is withdrawn; a running one's processes (the batch
// script's too: --full) get SIGTERM, or SIGKILL when hard, and the job is
// canceled.
func (a *slurmBatch) cancel(id string, last jobState, hard bool) {
	switch {
	case hard:
		_, _ = slurmCmd("scancel", "--signal=KILL", "--full", id)
		_, _ = slurmCmd("scancel", id)
	case last.state == "RUNNING" || last.state == "COMPLETING" || last.state == "SUSPENDED":
		_, _ = slurmCmd("scancel", "--signal=TERM", "--full", id)
	default:
		_, _ = slurmCmd("scancel", id)
	}
}

// ended maps the job's final state: Slurm's time limit is a timeout (124),
// OUT_OF_MEMORY an OOM kill, and preemption, node failure, a cancel from
// outside faber and a job with no record say so in {error}.
func (a *slurmBatch) ended(id string, js jobState, o *outcome) string {
	slurmUsage(a.job, o, slurmAcct)
	failed := func(r string) string {
		if o.exitCode == 0 {
			o.exitCode = 1
		}
		return r
	}
	if js.vanished {
		return failed(fmt.Sprintf("the Slurm job %s left the queue with no record of how it ended", id))
	}
	stopped := o.timedOut || o.stoppedBy != ""
	switch js.state {
	case "TIMEOUT":
		if stopped {
			return ""
		}
		o.exitCode, o.signal = 124, 0
		o.cause = spec.CauseTimeout
		r := "slurm time limit reached"
		if t := flagValue(slurmLimits(a.step, a.lim), "--time"); t != "" {
			r += " (--time=" + t + ")"
		}
		return r
	case "OUT_OF_MEMORY":
		o.use.oomKilled = true
		failed("")
		return ""
	case "PREEMPTED":
		return failed("slurm preempted the job on " + js.node)
	case "NODE_FAIL", "BOOT_FAIL":
		return failed("slurm: node failure on " + js.node)
	case "DEADLINE":
		return failed("slurm ended the job at its deadline")
	case "CANCELLED":
		switch {
		case stopped:
			return ""
		case js.node == "":
			return failed("slurm canceled the job while it was queued")
		default:
			return failed("slurm canceled the job on " + js.node + " (scancel or an administrator)")
		}
	}
	return ""
}

// ownLine: slurmstepd's lines in the job's stderr ("*** JOB 12 ON vm
// CANCELLED AT ...") are Slurm's; when faber stopped the attempt, so is a
// shell's report of the kill.
func (a *slurmBatch) ownLine(line []byte, stopped bool) bool {
	return slurmLine(line) || (stopped && shellKillReport(line))
}

// slurmDone are the states of a job that ended (squeue %T).
var slurmDone = map[string]bool{
	"COMPLETED": true, "FAILED": true, "CANCELLED": true, "TIMEOUT": true, "OUT_OF_MEMORY": true,
	"NODE_FAIL": true, "PREEMPTED": true, "BOOT_FAIL": true, "DEADLINE": true,
}

// slurmListJobs is one squeue call: every job of this user that the
// controller knows, ended ones too (for MinJobAge after they ended), an
// array's tasks one by one (--array).
func slurmListJobs() (map[string]jobState, error) {
	out, err := slurmCmd("squeue", append([]string{"--noheader", "--states=all", "--array",
		"--Format=JobArrayID:|,State:|,exit_code:|,NodeList:|,JobID:"}, slurmUser()...)...)
	if err != nil {
		return nil, err
	}
	return parseSqueueJobs(out), nil
}

// parseSqueueJobs reads squeue's `JobArrayID|State|exit_code|NodeList|JobID`
// lines (an array's task is <array id>_<task>, with a JobID of its own);
// exit_code is a wait status (code<<8 | signal).
func parseSqueueJobs(out string) map[string]jobState {
	jobs := map[string]jobState{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimSpace(l), "|")
		if len(f) < 4 {
			continue
		}
		js := jobState{state: strings.TrimSpace(f[1]), node: strings.TrimSpace(f[3])}
		if ws, err := strconv.Atoi(strings.TrimSpace(f[2])); err == nil {
			js.exitCode, js.signal = ws>>8&0xff, ws&0x7f
			if js.signal != 0 {
				js.exitCode = 128 + js.signal
			}
		}
		if js.node == "(null)" || strings.HasPrefix(js.node, "(") {
			js.node = ""
		}
		js.done = slurmDone[js.state]
		if len(f) > 4 {
			js.raw = strings.TrimSpace(f[4])
		}
		jobs[strings.TrimSpace(f[0])] = js
	}
	return jobs
}

// slurmRecord looks jobs that left squeue up in sacct (one call), where
// the cluster keeps accounting.
func slurmRecord(ids []string) map[string]jobState {
	if _, err := osexec.LookPath("sacct"); err != nil {
		return nil
	}
	out, err := slurmCmd("sacct", "--noheader", "--parsable2", "--jobs="+strings.Join(ids, ","),
		"--format=JobID,State,ExitCode,NodeList")
	if err != nil {
		return nil
	}
	return parseSacctJobs(out)
}

// parseSacctJobs reads sacct's `JobID|State|ExitCode|NodeList` lines
// (ExitCode is code:signal; State may read "CANCELLED by 0"); job steps
// (ids with a dot) are left out.
func parseSacctJobs(out string) map[string]jobState {
	jobs := map[string]jobState{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimSpace(l), "|")
		if len(f) < 4 || strings.Contains(f[0], ".") {
			continue
		}
		state, _, _ := strings.Cut(f[1], " ")
		js := jobState{state: state, node: f[3], done: slurmDone[state]}
		code, sig, _ := strings.Cut(f[2], ":")
		js.exitCode, _ = strconv.Atoi(code)
		js.signal, _ = strconv.Atoi(sig)
		if js.signal != 0 {
			js.exitCode = 128 + js.signal
		}
		if js.node == "None assigned" {
			js.node = ""
		}
		jobs[f[0]] = js
	}
	return jobs
}
