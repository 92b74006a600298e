package exec

import (
	"bytes"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faber-run/faber/internal/lazyre"
	"github.com/faber-run/faber/spec"
)

// executorSlurm is the value of `executor:` that runs steps through srun.
const executorSlurm = "slurm"

// Bounds on Slurm's client commands, so that a controller that does not
// answer cannot hold an attempt (or a resume) forever.
const (
	slurmCmdTimeout = 15 * time.Second
	// slurmGoneWait is how long faber waits for a canceled job to leave the
	// queue (Slurm sends SIGKILL KillWait seconds after SIGTERM, 30s by
	// default, then the job is completing for a moment).
	slurmGoneWait = 45 * time.Second
)

// slurmJobName is the Slurm job name of a step attempt:
// faber-<run-id>-<step>-a<N>. Leftover jobs of a dead run are found by it.
func slurmJobName(runID, stepID string, attempt int) string {
	return "faber-" + runID + "-" + stepID + "-a" + strconv.Itoa(attempt)
}

// slurmKind runs attempts through Slurm (SPEC §9): as batch jobs
// (slurm_batch.go), or with mode: blocking through srun.
type slurmKind struct {
	pollOnce sync.Once
	poll     *jobPoller
	arrOnce  sync.Once
	arr      *arrayBatcher[*slurmBatch]
}

func (*slurmKind) name() string  { return executorSlurm }
func (*slurmKind) title() string { return "Slurm" }

func (k *slurmKind) attempt(runID string, s *spec.Step, n int, dir string, lim limits) attemptExecutor {
	if slurmBlocking(s) {
		return newSlurmAttempt(slurmJobName(runID, s.ID, n), s, dir, lim)
	}
	return k.batch(runID, slurmJobName(runID, s.ID, n), s, dir, lim)
}

// slurmBlocking reports whether step s runs its attempts through srun
// (mode: blocking) rather than as batch jobs.
func slurmBlocking(s *spec.Step) bool {
	return s.Slurm != nil && s.Slurm.Mode == "blocking"
}

// describe: the srun command line of attempt <attempt>, with the job name
// in the runner's format and the step's declared limits.
func (k *slurmKind) describe(runID, attempt string, s *spec.Step, dir string, argv []string, throttle int) (wrapped, prefix []string) {
	job := "faber-" + runID + "-" + s.ID + "-a" + attempt
	if slurmBlocking(s) {
		a := newSlurmAttempt(job, s, dir, limitsOf(s, nil))
		return a.wrap(argv), a.wrap(nil)
	}
	// The attempt's files, under the run's logs/<step>/ (README, "Logs").
	at := "<logs>/attempt-" + attempt
	b := k.batch(runID, job, s, dir, limitsOf(s, nil))
	if s.FanOutOf != "" {
		// A task of the array of the items that start with it: the
		// array's job script runs the item's task script, which runs argv
		// (wrapped is argv itself).
		b.job = "faber-" + runID + "-" + s.FanOutOf + "-a0"
		arr := "--array=<the items that start together>"
		if throttle > 0 {
			arr += "%" + strconv.Itoa(throttle) // the engine's throttle (max_parallel)
		}
		prefix = append([]string{"sbatch", arr},
			b.sbatchArgs("<the first item's logs>/attempt-<N>.array.sbatch", os.DevNull, os.DevNull, nil)...)
		return argv, prefix
	}
	prefix = append([]string{"sbatch"}, b.sbatchArgs(at+".sbatch", at+".out", at+".err", nil)...)
	return append(prefix[:len(prefix):len(prefix)], argv...), prefix
}

// endLeftovers cancels the jobs a dead faber left behind for the run, but
// those of the steps resume re-attaches to.
func (*slurmKind) endLeftovers(runID string, prior *Prior, keep map[string]bool, _ []string) int {
	return cancelLeftoverSlurmJobs(runID, keptJobs(prior, keep, executorSlurm))
}

// check: Slurm's client commands that the steps' mode uses are in PATH.
func (*slurmKind) check(steps []*spec.Step) error {
	for _, s := range steps {
		need := []string{"sbatch", "squeue", "scancel"}
		if slurmBlocking(s) {
			need = []string{"srun", "squeue", "scancel"}
		}
		for _, c := range need {
			if _, err := osexec.LookPath(c); err != nil {
				return fmt.Errorf("step %q: executor: slurm needs Slurm's %s in PATH, and it is not there (run faber where Slurm's client commands are)", s.ID, c)
			}
		}
	}
	return nil
}

// reattachable: the steps whose batch job squeue (or sacct) still knows.
func (*slurmKind) reattachable(prior *Prior) (steps, spare []string, err error) {
	return reattachJobs(prior, batchEngine{
		name: executorSlurm, title: "Slurm", lister: "squeue",
		list: slurmListJobs,
		recorded: func(ids []string) (known []string) {
			for j, js := range slurmRecord(ids) {
				if js.done {
					known = append(known, j)
				}
			}
			return known
		},
		mark: func(id string, js jobState) string {
			if js.raw != "" {
				id = js.raw // an array task's processes carry its own job id
			}
			return "SLURM_JOB_ID=" + id
		},
	})
}

// definition: a Slurm step's block counts, so that a changed partition or
// time limit re-runs it on resume --plan.
func (*slurmKind) definition(s *spec.Step) (string, any) { return "slurm", s.Slurm }

// slurmAttempt runs a step attempt as a Slurm job step through srun.
//
// srun blocks until the job ends and hands back its exit code, stdout and
// stderr, so the attempt's logs, exit-code rules and handlers work as for a
// local process. The environment faber built for the srun process is the
// job's (--export=ALL). --unbuffered is not used: it runs the task on a
// pseudo-terminal, which would merge its stderr into stdout.
type slurmAttempt struct {
	job  string // faber-<run-id>-<step>-a<N>: leftover jobs are found by it
	dir  string // absolute: srun resolves a relative --chdir against its own, changed, directory
	step *spec.Step
	lim  limits
}

func newSlurmAttempt(job string, step *spec.Step, dir string, lim limits) *slurmAttempt {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return &slurmAttempt{job: job, dir: dir, step: step, lim: lim}
}

func (a *slurmAttempt) wrap(argv []string) []string {
	return slurmArgv(a.job, a.dir, a.step, a.lim, argv)
}

// writesLogs: srun relays the job's output, read through pipes.
func (a *slurmAttempt) writesLogs() bool { return false }

// setUp: Slurm enforces the limits (--mem, --cpus-per-task), no cgroup here.
func (a *slurmAttempt) setUp() error { return nil }

func (a *slurmAttempt) command(argv []string, newCmd func([]string) *osexec.Cmd) *osexec.Cmd {
	return newCmd(argv)
}

// terminate: a running job's tasks get SIGTERM through scancel (srun
// itself must not: it would SIGKILL them at once); a job that does not run
// yet is withdrawn by SIGTERM to srun.
func (a *slurmAttempt) terminate(grp procGroup) {
	if !slurmTerminate(a.job) {
		_ = grp.signal(false)
	}
}

// kill: SIGKILL to srun; finish then makes sure the job is gone.
func (a *slurmAttempt) kill(grp procGroup) { _ = grp.signal(true) }

func (a *slurmAttempt) finish(argv []string, o *outcome, hard <-chan struct{}) string {
	reason := slurmFinish(a.job, argv, o, slurmJobState, hard)
	slurmUsage(a.job, o, slurmAcct)
	return reason
}

// ownLine: srun's and slurmstepd's lines are Slurm's; when faber stopped the
// attempt, so is a waiting shell's report of the kill (Slurm signals a job's
// processes one by one, so the shell can see its child die first).
func (a *slurmAttempt) ownLine(line []byte, stopped bool) bool {
	return slurmLine(line) || (stopped && shellKillReport(line))
}

func (a *slurmAttempt) release() {}

// slurmArgv wraps a local argv into the srun command that runs it as the
// Slurm job jobName in dir, with the step's slurm options under the
// attempt's limits lim (grown by a rule or set by a classification):
// memory is --mem, cpus --cpus-per-task, the timeout --time, over the slurm
// block's own.
func slurmArgv(jobName, dir string, s *spec.Step, lim limits, argv []string) []string {
	out := []string{"srun", "--job-name=" + jobName, "--chdir=" + dir, "--export=ALL"}
	out = append(out, slurmLimits(s, lim)...)
	out = append(out, "--")
	return append(out, argv...)
}

// slurmLimits are the slurm block's options of step s under the attempt's
// limits lim, which win over the block's own.
func slurmLimits(s *spec.Step, lim limits) []string {
	sl := spec.Slurm{}
	if s.Slurm != nil {
		sl = *s.Slurm
	}
	if lim.memory > 0 {
		sl.Mem = slurmMem(lim.memory)
	}
	if lim.cpus > 0 {
		sl.CPUs = lim.cpus
	}
	if lim.timeout > s.Timeout {
		sl.Time = "" // a grown timeout is the job's time limit too
	}
	return slurmOptions(&sl, lim.timeout)
}

// slurmOptions are the srun options of a slurm: block. The time limit is
// the block's `time`, else the step's timeout rounded up to whole minutes
// (Slurm's unit), so that Slurm never ends a job before faber's own timeout.
func slurmOptions(s *spec.Slurm, timeout time.Duration) []string {
	if s == nil {
		s = &spec.Slurm{}
	}
	var o []string
	add := func(flag, v string) {
		if v != "" {
			o = append(o, flag+"="+v)
		}
	}
	add("--partition", s.Partition)
	add("--account", s.Account)
	add("--qos", s.QOS)
	if s.CPUs > 0 {
		add("--cpus-per-task", strconv.Itoa(s.CPUs))
	}
	add("--mem", s.Mem)
	if s.GPUs != "" {
		add("--gres", "gpu:"+s.GPUs)
	}
	switch {
	case s.Time != "":
		add("--time", s.Time)
	case timeout > 0:
		add("--time", strconv.FormatInt(int64((timeout+time.Minute-1)/time.Minute), 10))
	}
	return append(o, s.ExtraArgs...)
}

// slurmLine reports whether a stderr line is Slurm's own (srun's, or
// slurmstepd's as forwarded by srun) rather than the step's: such lines are
// skipped for {error} (SPEC §10); slurmFinish reads them instead.
func slurmLine(line []byte) bool {
	return bytes.HasPrefix(line, []byte("srun:")) || bytes.HasPrefix(line, []byte("slurmstepd:")) ||
		bytes.HasPrefix(line, []byte("slurmstepd-"))
}

// reShellKillReport matches a shell's report that a command it waited for
// was killed: dash and busybox print "Terminated" or "Killed", bash
// "sh: line 1: 123 Terminated   sleep 30", zsh "zsh: terminated  sleep 30".
var reShellKillReport = lazyre.New(`^(?:(?:.*: line [0-9]+: +[0-9]+ +)?(?:Terminated|Killed)(?:\s.*)?|zsh: (?:terminated|killed)\s.*)$`)

// shellKillReport reports whether a stderr line of an attempt faber stopped
// (timeout, stop, cancel) is a shell's report of the signal faber sent. A
// local process group gets the signal all at once, so its shell dies
// without a word; Slurm signals a job's processes one by one, children
// first, so a waiting shell can print "Terminated" before its own signal
// arrives. Such trailing lines are skipped for {error} under Slurm, which
// then says "timed out after D" as it would locally.
func shellKillReport(line []byte) bool {
	return reShellKillReport().Match(line)
}

// slurmUser limits squeue and scancel to the jobs of this user.
func slurmUser() []string {
	if uid := os.Getuid(); uid >= 0 {
		return []string{"--user=" + strconv.Itoa(uid)}
	}
	return nil
}

// slurmCmd runs one of Slurm's client commands, bounded in time, and
// returns its stdout.
func slurmCmd(name string, args ...string) (string, error) {
	return queryClient(slurmCmdTimeout, name, args...)
}

// slurmJobs lists this user's queued and running jobs as id -> name.
func slurmJobs() (map[string]string, error) {
	out, err := slurmCmd("squeue", append([]string{"--noheader", "--array", "--format=%i %j"}, slurmUser()...)...)
	if err != nil {
		return nil, err
	}
	jobs := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if id, name, ok := strings.Cut(strings.TrimSpace(l), " "); ok {
			jobs[id] = name
		}
	}
	return jobs, nil
}

// waitGone waits (bounded) until none of the jobs for which keep reports
// true is in the queue any more, or until hard is closed (a hard stop:
// the next resume cancels what is left, cancelLeftoverSlurmJobs).
func waitGone(keep func(id, name string) bool, hard <-chan struct{}) {
	deadline := time.Now().Add(slurmGoneWait)
	for {
		select {
		case <-hard:
			return
		default:
		}
		jobs, err := slurmJobs()
		if err != nil {
			return
		}
		left := false
		for id, name := range jobs {
			if keep(id, name) {
				left = true
			}
		}
		if !left || time.Now().After(deadline) {
			return
		}
		select {
		case <-hard:
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// slurmTerminate is the graceful half of stopping a Slurm attempt (timeout,
// stop, Ctrl-C): when the job runs, its tasks get SIGTERM through scancel,
// and faber's SIGKILL after the grace period follows as for a local process
// group. srun itself must not get the SIGTERM: it would SIGKILL the tasks at
// once. It returns false when the job does not run yet (or Slurm cannot be
// asked): the caller then sends SIGTERM to srun, which withdraws the request.
func slurmTerminate(job string) bool {
	out, err := slurmCmd("squeue", append([]string{"--noheader", "--format=%T", "--name=" + job}, slurmUser()...)...)
	if err != nil || !strings.Contains(out, "RUNNING") {
		return false
	}
	_, err = slurmCmd("scancel", append([]string{"--signal=TERM", "--state=RUNNING", "--name=" + job}, slurmUser()...)...)
	return err == nil
}

// slurmCancel makes sure the attempt's job is gone: its running tasks are
// killed, a queued job is withdrawn, and it waits (bounded) until the job
// has left the queue. srun cancels the job when it gets SIGTERM, but a srun
// killed with SIGKILL leaves a queued job behind.
func slurmCancel(job string, hard <-chan struct{}) {
	_, _ = slurmCmd("scancel", append([]string{"--signal=KILL", "--state=RUNNING", "--name=" + job}, slurmUser()...)...)
	_, _ = slurmCmd("scancel", append([]string{"--name=" + job}, slurmUser()...)...)
	waitGone(func(_, name string) bool { return name == job }, hard)
}

// cancelLeftoverSlurmJobs cancels the Slurm jobs a dead faber left behind
// for run runID (found by job name), but those in kept (by id); it returns
// how many it canceled. It
// waits, bounded, until they have left the queue. Without Slurm's client
// commands (or a controller to ask) it does nothing.
func cancelLeftoverSlurmJobs(runID string, kept map[string]bool) int {
	if _, err := osexec.LookPath("squeue"); err != nil {
		return 0
	}
	mine := func(id, name string) bool { return isRunJob(runID, name) && !kept[id] }
	jobs, err := slurmJobs()
	if err != nil {
		return 0
	}
	var ids []string
	for id, name := range jobs {
		if mine(id, name) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return 0
	}
	// An error may only mean that some ended meanwhile: wait for the rest.
	_, _ = slurmCmd("scancel", ids...)
	waitGone(mine, nil)
	return len(ids)
}

// isRunJob reports whether a job name is an attempt of run runID:
// faber-<run-id>-<step>-a<N>.
func isRunJob(runID, name string) bool {
	rest, ok := strings.CutPrefix(name, "faber-"+runID+"-")
	if !ok {
		return false
	}
	i := strings.LastIndex(rest, "-a")
	if i <= 0 {
		return false
	}
	_, err := strconv.Atoi(rest[i+2:])
	return err == nil
}

// Slurm's own stderr lines that slurmFinish understands, as srun and
// slurmstepd write them (seen with Slurm 22.05).
var (
	reStepCancelled = lazyre.New(`^slurmstepd(?:-[^:]*)?: error: \*\*\* (?:JOB|STEP) \S+ ON (\S+) CANCELLED AT \S+(?: DUE TO ([A-Z][A-Z ]*[A-Z]))?`)
	reTaskLine      = lazyre.New(`^srun: error: \S+: tasks? [0-9,-]+: `)
	// slurmstepd's report of the cgroup OOM killer ("Detected 1 oom-kill
	// event(s) in StepId=..."; oom_kill in newer versions), srun's "task 0:
	// Out Of Memory".
	reSlurmOOM  = lazyre.New(`(?i)^slurmstepd.*detected \d+ oom[-_]kill event|^srun: error: \S+: tasks? [0-9,-]+: Out Of Memory`)
	reNodeFail  = lazyre.New(`^srun: error: (Node failure on .*)`)
	reQueued    = lazyre.New(`^srun: job \S+ queued and waiting for resources`)
	reAllocated = lazyre.New(`^srun: job \S+ has been allocated resources`)
	reSrunError = lazyre.New(`^srun: (?:error: )?(.*)`)
	// A queued job that was canceled, or whose srun was told to stop.
	reWithdrawn = lazyre.New(`^srun: (?:Job has been cancelled|Job allocation \S+ has been revoked)`)
	// srun's lines about its own progress, which say nothing of why.
	reLifecycle = lazyre.New(`^srun: (?:Job step aborted|Force Terminated|forcing job termination|interrupt|Job step \S+ aborted|Step created|Jobs? \S+ step creation)`)
)

// slurmFinish completes the outcome of an attempt that ran through srun
// (argv): it makes sure no job is left behind when the attempt did not end
// by itself, and it maps Slurm's own failures (rejected job, time limit,
// preemption, node failure, a cancel from outside faber) to an exit code. It
// returns the reason, which becomes {error}, when Slurm rather than the step
// decided how the attempt ended.
//
// srun forwards slurmstepd's "CANCELLED ... DUE TO ..." line only when it
// arrives before srun exits, which it sometimes does not; when srun failed
// and its stderr does not say why, jobState (slurmJobState outside tests)
// asks the controller how the job ended.
func slurmFinish(job string, argv []string, o *outcome, jobState func(job string) (state, node string), hard <-chan struct{}) (reason string) {
	if o.startErr != nil {
		return ""
	}
	if o.timedOut || o.stoppedBy != "" || o.signal != 0 {
		slurmCancel(job, hard)
	}

	var (
		cancelled, due, node          string
		nodeFail                      string
		ran, queued, alloc, withdrawn bool
		srunErrs, hints               []string
	)
	for _, raw := range bytes.Split(o.stderrTail, []byte("\n")) {
		line := string(bytes.TrimSuffix(raw, []byte("\r")))
		if reSlurmOOM().MatchString(line) {
			o.use.oomKilled = true
		}
		switch {
		case reStepCancelled().MatchString(line):
			m := reStepCancelled().FindStringSubmatch(line)
			cancelled, node, due = line, m[1], m[2]
			ran = true
		case reTaskLine().MatchString(line):
			ran = true
		case reNodeFail().MatchString(line):
			nodeFail = reNodeFail().FindStringSubmatch(line)[1]
			ran = true
		case reQueued().MatchString(line):
			queued = true
		case reAllocated().MatchString(line):
			alloc = true
		case strings.HasPrefix(line, "srun: error: "), strings.HasPrefix(line, "srun: unrecognized option"),
			strings.HasPrefix(line, "srun: invalid option"), strings.HasPrefix(line, "srun: option requires"):
			srunErrs = appendNew(srunErrs, reSrunError().FindStringSubmatch(line)[1])
		case reWithdrawn().MatchString(line):
			withdrawn = true
		case strings.HasPrefix(line, "srun: ") && !reLifecycle().MatchString(line):
			hints = appendNew(hints, strings.TrimPrefix(line, "srun: "))
		}
	}

	if o.timedOut || o.stoppedBy != "" {
		// faber stopped it: the outcome stands. A job that never left the
		// queue says why in srun's lines, which {error} otherwise skips.
		if o.timedOut && queued && !alloc {
			reason = fmt.Sprintf("timed out after %s while the Slurm job %s waited in the queue", o.timeout, job)
			if len(hints) > 0 {
				reason += " (" + strings.Join(hints, "; ") + ")"
			}
		}
		return reason
	}
	if o.exitCode != 0 && cancelled == "" && nodeFail == "" && !withdrawn && (ran || len(srunErrs) == 0) {
		state, n := jobState(job)
		if state == "OUT_OF_MEMORY" {
			o.use.oomKilled = true
		}
		if d, ok := slurmStateDue[state]; ok {
			due, node = d, n
			if state == "CANCELLED" {
				cancelled = state
			}
		}
	}
	failed := func(r string) string {
		if o.exitCode == 0 {
			o.exitCode = 1 // srun may report 0 when Slurm, not the step, ended the job
		}
		return r
	}
	switch {
	case due == "TIME LIMIT":
		o.exitCode = 124 // a timeout, whoever enforced it (SPEC §3)
		o.cause = spec.CauseTimeout
		reason = "slurm time limit reached"
		if t := flagValue(argv, "--time"); t != "" {
			reason += " (--time=" + t + ")"
		}
		return reason
	case due == "PREEMPTION":
		return failed("slurm preempted the job on " + node)
	case nodeFail != "" || strings.Contains(due, "NODE FAIL"):
		if nodeFail == "" {
			nodeFail = "node failure on " + node
		}
		return failed("slurm: " + lowerFirst(nodeFail))
	case cancelled != "" && due == "":
		return failed("slurm canceled the job on " + node + " (scancel or an administrator)")
	case cancelled != "":
		return failed("slurm canceled the job on " + node + " due to " + strings.ToLower(due))
	case !ran && withdrawn:
		return failed("slurm canceled the job while it was queued")
	case !ran && o.exitCode != 0 && len(srunErrs) > 0:
		reason = "slurm rejected the job: " + strings.Join(srunErrs, "; ")
		if opts := userOptions(argv); opts != "" {
			reason += " (srun " + opts + ")"
		}
		return failed(reason)
	}
	return ""
}

// slurmStateDue maps the job states (squeue %T) of jobs that Slurm ended to
// the words slurmstepd uses for them in "CANCELLED ... DUE TO ...".
var slurmStateDue = map[string]string{
	"PREEMPTED": "PREEMPTION",
	"TIMEOUT":   "TIME LIMIT",
	"NODE_FAIL": "NODE FAILURE",
	"CANCELLED": "",
}

// slurmJobState asks the controller for the state and node of the job named
// job, which it remembers for a while after the job ended (MinJobAge, 300 s
// by default). It returns "" when Slurm cannot say.
func slurmJobState(job string) (state, node string) {
	out, err := slurmCmd("squeue", append([]string{"--noheader", "--states=all", "--format=%T %N", "--name=" + job}, slurmUser()...)...)
	if err != nil {
		return "", ""
	}
	last := strings.TrimSpace(out)
	if i := strings.LastIndexByte(last, '\n'); i >= 0 {
		last = last[i+1:]
	}
	state, node, _ = strings.Cut(strings.TrimSpace(last), " ")
	return state, strings.TrimSpace(node)
}

// flagValue returns the value of --flag=value among srun's own options.
func flagValue(argv []string, flag string) string {
	for _, a := range argv {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

// userOptions are the srun options that came from the step's slurm: block,
// the ones a rejection is about.
func userOptions(argv []string) string {
	var o []string
	for _, a := range argv[min(1, len(argv)):] {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "--job-name=") || strings.HasPrefix(a, "--chdir=") || a == "--export=ALL" {
			continue
		}
		o = append(o, a)
	}
	return strings.Join(o, " ")
}

func appendNew(list []string, s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return list
	}
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
