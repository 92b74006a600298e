package exec

import (
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faber-run/faber/internal/lazyre"
	"github.com/faber-run/faber/spec"
)

// Grid Engine (executor: sge; Son of Grid Engine 8.1 is what faber is
// tested with, scripts/sge-cluster.sh, whose comment lists what the engine
// does). Each attempt is a job that runs a generated job script
// (sgeScript): as a qsub batch job by default (sge_batch.go), or with
// mode: blocking through qrsh -now no (sge_blocking.go).

// executorSge is the value of `executor:` that runs steps on Grid Engine.
const executorSge = "sge"

// SourceQacct says an attempt's usage came from Grid Engine's accounting.
const SourceQacct = "qacct"

// sgeRecordWait is how long resume looks for the record of a job that
// left qstat (reattachJobs): longer than the default accounting flush time.
const sgeRecordWait = 20 * time.Second

// sgeCmdTimeout bounds one of Grid Engine's client commands, so that a
// qmaster that does not answer cannot hold an attempt (or a resume).
const sgeCmdTimeout = 30 * time.Second

// sgeJobName is the Grid Engine job name of a step attempt:
// faber-<run-id>-<step>-a<N>, with what -N rejects (':', '@', '/', '\',
// '*', '?', white space) made '_'. Leftover jobs of a dead run are found
// by it (isRunJob).
func sgeJobName(runID, stepID string, attempt int) string {
	return "faber-" + sgeName(runID) + "-" + sgeName(stepID) + "-a" + strconv.Itoa(attempt)
}

func sgeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ':', '@', '/', '\\', '*', '?', ' ', '\t', '\n', '\r':
			return '_'
		}
		return r
	}, s)
}

// sgeKind runs attempts on Grid Engine. One instance per run: it keeps the
// poller of the run's batch jobs and what the poller read of their records.
type sgeKind struct {
	pollOnce sync.Once
	poll     *jobPoller
	arrOnce  sync.Once
	arr      *arrayBatcher[*sgeBatch]

	mu        sync.Mutex
	runID     string
	recs      map[string]sgeRecord // qacct's records of jobs that ended, by id
	withdrawn map[string]bool      // jobs faber deleted while they were queued
}

func (*sgeKind) name() string  { return executorSge }
func (*sgeKind) title() string { return "Grid Engine" }

func (k *sgeKind) attempt(runID string, s *spec.Step, n int, dir string, lim limits) attemptExecutor {
	k.mu.Lock()
	k.runID = runID
	k.mu.Unlock()
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	job := sgeJobName(runID, s.ID, n)
	if sgeBlocking(s) {
		return &sgeAttempt{kind: k, job: job, dir: dir, step: s, lim: lim}
	}
	return &sgeBatch{kind: k, runID: runID, job: job, dir: dir, step: s, lim: lim}
}

// sgeBlocking reports whether step s runs its attempts through qrsh (mode:
// blocking) rather than as batch jobs.
func sgeBlocking(s *spec.Step) bool {
	return s.Sge != nil && s.Sge.Mode == "blocking"
}

// describe: the qsub command line of attempt <attempt>, whose job script
// (<logs>/attempt-<N>.sge) runs the argv; or the qrsh one, whose command
// line is the job script.
func (k *sgeKind) describe(runID, attempt string, s *spec.Step, dir string, argv []string, throttle int) (wrapped, prefix []string) {
	job := "faber-" + sgeName(runID) + "-" + sgeName(s.ID) + "-a" + attempt
	lim := limitsOf(s, nil)
	if sgeBlocking(s) {
		prefix = append([]string{"qrsh"}, qrshArgs(job, s, lim)...)
		return append(prefix[:len(prefix):len(prefix)], argv...), prefix
	}
	if s.FanOutOf != "" {
		// A task of the array of the items that start with it
		// (sgeSubmitArray): the array's script runs the item's job
		// script, which runs argv (wrapped is argv itself).
		prefix = []string{"qsub", "-t", "1-<the items that start together>"}
		if throttle > 0 {
			prefix = append(prefix, "-tc", strconv.Itoa(throttle))
		}
		prefix = append(prefix, qsubArgs(sgeJobName(runID, s.FanOutOf, 0), s, lim, os.DevNull, os.DevNull,
			"<the first item's logs>/attempt-<N>.array.sge")...)
		return argv, prefix
	}
	at := "<logs>/attempt-" + attempt
	prefix = append([]string{"qsub"}, qsubArgs(job, s, lim, at+".out", at+".err", at+".sge")...)
	return append(prefix[:len(prefix):len(prefix)], argv...), prefix
}

// definition: a Grid Engine step's block counts, so that a changed queue
// or parallel environment re-runs it on resume --plan.
func (*sgeKind) definition(s *spec.Step) (string, any) { return "sge", s.Sge }

// check: Grid Engine's client commands that the steps' mode uses are in
// PATH.
func (*sgeKind) check(steps []*spec.Step) error {
	for _, s := range steps {
		need := []string{"qsub", "qstat", "qdel"}
		if sgeBlocking(s) {
			need = []string{"qrsh", "qstat", "qdel"}
		}
		for _, c := range need {
			if _, err := osexec.LookPath(c); err != nil {
				return fmt.Errorf("step %q: executor: sge needs Grid Engine's %s in PATH, and it is not there (run faber where Grid Engine's client commands are)", s.ID, c)
			}
		}
	}
	return nil
}

// sgeOptions are the job's resource requests, common to qsub and qrsh: the
// sge block's queue, project and parallel environment (for cpus), the
// attempt's memory as the memory resource (h_vmem unless the block names
// another; per slot when memory_per_slot), h_rt (below), then extra_args.
//
// h_rt is the step's timeout plus its kill_grace, whole seconds rounded up:
// faber's timeout counts from submission and stops the job gracefully
// (SIGTERM, then qdel after kill_grace), so h_rt, Grid Engine's SIGKILL,
// ends a job only when faber could not (it died); extra_args with an h_rt
// of their own win.
func sgeOptions(s *spec.Step, lim limits) []string {
	b := spec.Sge{}
	if s.Sge != nil {
		b = *s.Sge
	}
	var o []string
	if b.Queue != "" {
		o = append(o, "-q", b.Queue)
	}
	if b.Project != "" {
		o = append(o, "-P", b.Project)
	}
	cpus := lim.cpus
	if cpus <= 0 {
		cpus = s.CPUs
	}
	if b.PE != "" && cpus > 0 {
		o = append(o, "-pe", b.PE, strconv.Itoa(cpus))
	}
	userHrt := false
	for _, a := range b.ExtraArgs {
		if strings.Contains(a, "h_rt=") {
			userHrt = true
		}
	}
	if t := lim.timeout; t > 0 && !userHrt {
		grace := s.KillGrace
		if grace <= 0 {
			grace = 10 * time.Second
		}
		o = append(o, "-l", "h_rt="+strconv.FormatInt(int64((t+grace+time.Second-1)/time.Second), 10))
	}
	if mem := lim.memory; mem > 0 {
		if b.MemoryPerSlot && b.PE != "" && cpus > 1 {
			mem = (mem + int64(cpus) - 1) / int64(cpus)
		}
		res := b.MemoryResource
		if res == "" {
			res = "h_vmem"
		}
		o = append(o, "-l", res+"="+sgeSize(mem))
	}
	return append(o, b.ExtraArgs...)
}

// sgeSize writes bytes as Grid Engine reads a memory value: K, M, G are
// binary (k, m, g decimal); whole units when exact, else bytes.
func sgeSize(b int64) string {
	for _, u := range []struct {
		sfx   string
		shift uint
	}{{"G", 30}, {"M", 20}, {"K", 10}} {
		if b >= 1<<u.shift && b%(1<<u.shift) == 0 {
			return strconv.FormatInt(b>>u.shift, 10) + u.sfx
		}
	}
	return strconv.FormatInt(b, 10)
}

// sgeHrt is the h_rt the options request, or "".
func sgeHrt(opts []string) string {
	hrt := ""
	for i, a := range opts {
		if a != "-l" || i+1 >= len(opts) {
			continue
		}
		for _, r := range strings.Split(opts[i+1], ",") {
			if v, ok := strings.CutPrefix(r, "h_rt="); ok {
				hrt = v
			}
		}
	}
	return hrt
}

// sgeJobVars are the variables Grid Engine sets for a job, which the job
// keeps over the environment faber built (faber itself may run in a job).
var sgeJobVars = map[string]bool{
	"ARC": true, "ENVIRONMENT": true, "HOSTNAME": true, "JOB_ID": true, "JOB_NAME": true, "JOB_SCRIPT": true,
	"NHOSTS": true, "NQUEUES": true, "NSLOTS": true, "PE": true, "PE_HOSTFILE": true, "QUEUE": true,
	"REQNAME": true, "REQUEST": true, "RESTARTED": true, "TMPDIR": true, "TMP": true,
}

// sgeJobVar reports whether name is one of the job's own variables:
// sgeJobVars and SGE_* but the cluster's address (SGE_ROOT, SGE_CELL, the
// ports).
func sgeJobVar(name string) bool {
	if sgeJobVars[name] {
		return true
	}
	switch name {
	case "SGE_ROOT", "SGE_CELL", "SGE_QMASTER_PORT", "SGE_EXECD_PORT":
		return false
	}
	return strings.HasPrefix(name, "SGE_")
}

// sgeExitMarker starts the line a job script writes to stderr when the step
// exited 99 or 100, which Grid Engine reads as "requeue the job" and "hold
// it in error": the job exits 1 instead and faber reads the step's code
// from this line (ended; ownLine keeps it out of {error}).
const sgeExitMarker = "faber-sge: exit status "

var reSgeExit = lazyre.New(`^faber-sge: exit status ([0-9]+)`)

// sgeDeleting is the line a job script writes to stderr when Grid Engine
// is ending the job (SIGUSR2 of a -notify job: qdel, or h_rt), before it
// sends the step SIGTERM: a qdel faber did not ask for is then named in
// {error} (h_rt is told apart by the record's failed 37).
const sgeDeleting = "faber-sge: Grid Engine is ending the job (SIGUSR2: qdel or h_rt): SIGTERM to the step"

// sgeScript is the job script of an attempt: it goes to dir and runs argv
// with the environment faber built (env, but Grid Engine's own job
// variables), everything quoted for sh, never through qsub -V or -b y
// (which loses quoting). The step runs as the script's child, in the job's
// process group, with SIGUSR2 ignored: qdel of a -notify job sends SIGUSR2
// to the whole group, which the script turns into a SIGTERM to the group
// (the step's graceful stop); Grid Engine's SIGKILL follows the queue's
// notify time later. 99 and 100 are remapped (sgeExitMarker).
func sgeScript(job, dir string, env, argv []string) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# faber: the job script of " + strings.ReplaceAll(job, "\n", " ") + " (generated; Grid Engine runs it)\n")
	b.WriteString("cd " + shQuote(dir) + " || exit 1\n")
	b.WriteString("trap '' USR2\n")
	// The step's own status goes through a file: the script's wait can
	// be interrupted by the signal that stops the step, and then says
	// 128+SIGUSR2, not how the step ended.
	b.WriteString("st=${TMPDIR:-/tmp}/faber-sge-status.$$\nrm -f \"$st\"\n")
	b.WriteString("( trap : TERM\nenv --")
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || sgeJobVar(name) {
			continue
		}
		b.WriteString(" \\\n  " + shQuote(kv))
	}
	if len(argv) > 0 && strings.Contains(argv[0], "=") {
		// env would read it as one more variable.
		argv = append([]string{"/usr/bin/env", "--"}, argv...)
	}
	for _, a := range argv {
		b.WriteString(" \\\n  " + shQuote(a))
	}
	b.WriteString(`
echo $? > "$st" ) &
pid=$!
stop() { trap '' TERM USR2; kill -TERM 0; }
trap stop TERM
trap 'echo "` + sgeDeleting + `" >&2; stop' USR2
# wait returns early when a signal ran stop: wait again while the step's
# subshell lives.
while kill -0 "$pid" 2>/dev/null; do wait "$pid"; done
code=$(cat "$st" 2>/dev/null)
rm -f "$st"
case $code in
'') code=137 ;; # the subshell was killed too: Grid Engine's SIGKILL
99|100)
	echo "` + sgeExitMarker + `$code (the job exits 1: Grid Engine requeues a job that exits 99 and holds one that exits 100)" >&2
	exit 1 ;;
esac
exit "$code"
`)
	return b.String()
}

// sgeRecord is what qacct says of a job that ended (its last run).
type sgeRecord struct {
	failed     int    // 0: the job ran and ended by itself
	failedMsg  string // "qmaster enforced h_rt, h_cpu, or h_vmem limit"
	exitStatus int
	signal     int // when exit_status names one: "137 (Killed)"
	host       string
	user, sys  time.Duration
	maxRSS     int64
	category   string
}

// parseQacct reads qacct -j's blocks (each after a line of '='), keeping
// each job number's last block: a requeued job has one per run. An array
// task's record is <number>.<task>.
func parseQacct(out string) map[string]sgeRecord {
	recs := map[string]sgeRecord{}
	var id, task string
	var r sgeRecord
	flush := func() {
		if id != "" {
			if _, err := strconv.Atoi(task); err == nil {
				id += "." + task
			}
			recs[id] = r
		}
		id, task, r = "", "", sgeRecord{}
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "=====") {
			flush()
			continue
		}
		key, val, _ := strings.Cut(l, " ")
		val = strings.TrimSpace(val)
		switch key {
		case "jobnumber":
			id = val
		case "taskid":
			task = val // "undefined" but in an array
		case "hostname":
			r.host = val
		case "failed":
			code, msg, _ := strings.Cut(val, ":")
			r.failed, _ = strconv.Atoi(strings.TrimSpace(code))
			r.failedMsg = strings.TrimSpace(msg)
		case "exit_status":
			code, name, _ := strings.Cut(val, " ")
			r.exitStatus, _ = strconv.Atoi(code)
			if strings.TrimSpace(name) != "" && r.exitStatus > 128 {
				r.signal = r.exitStatus - 128
			}
		case "ru_utime":
			r.user = sgeSeconds(val)
		case "ru_stime":
			r.sys = sgeSeconds(val)
		case "ru_maxrss":
			if n, ok := sgeBytes(val); ok {
				r.maxRSS = n
			}
		case "category":
			r.category = val
		}
	}
	flush()
	return recs
}

// sgeSeconds reads qacct's "0.013s".
func sgeSeconds(v string) time.Duration {
	f, err := strconv.ParseFloat(strings.TrimSuffix(v, "s"), 64)
	if err != nil {
		return 0
	}
	return time.Duration(f * float64(time.Second))
}

// sgeBytes reads qacct's "4.578KB", "3.375MB", "0.000B".
func sgeBytes(v string) (int64, bool) {
	mult := 1.0
	for _, u := range []struct {
		sfx string
		m   float64
	}{{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"B", 1}} {
		if n, ok := strings.CutSuffix(v, u.sfx); ok {
			v, mult = n, u.m
			break
		}
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, false
	}
	return int64(f * mult), true
}

// sgeCmd runs one of Grid Engine's client commands, bounded in time, and
// returns its stdout; an error carries its stderr.
func sgeCmd(name string, args ...string) (string, error) {
	return queryClient(sgeCmdTimeout, name, args...)
}

// reattachable: the steps whose batch job qstat (or qacct) still knows.
func (k *sgeKind) reattachable(prior *Prior) (steps, spare []string, err error) {
	return reattachJobs(prior, batchEngine{
		name: executorSge, title: "Grid Engine", lister: "qstat",
		list: sgeListJobs,
		// qacct's record comes up to the qmaster's accounting flush time
		// (15 s by default) after the job left qstat.
		recordWait: sgeRecordWait,
		recorded: func(ids []string) (known []string) {
			runID := ""
			if prior.Run != nil {
				runID = prior.Run.RunID
			}
			for j := range sgeRecords(runID, ids) {
				known = append(known, j)
			}
			return known
		},
		mark: func(id string, _ jobState) string {
			if strings.Contains(id, ".") {
				return "FABER_SGE_JOB=" + id // an array task (sge_array.go)
			}
			return "JOB_ID=" + id
		},
	})
}

// endLeftovers deletes the run's jobs a dead faber left behind (found by
// name), but those of the steps resume re-attaches to, and waits (bounded)
// until they have left qstat.
func (k *sgeKind) endLeftovers(runID string, prior *Prior, keep map[string]bool, _ []string) int {
	if _, err := osexec.LookPath("qstat"); err != nil {
		return 0
	}
	kept := keptJobs(prior, keep, executorSge)
	mine := func(id, name string) bool { return isRunJob(sgeName(runID), name) && !kept[id] }
	names, err := sgeJobNames()
	if err != nil {
		return 0
	}
	var ids []string
	for id, name := range names {
		if mine(id, name) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return 0
	}
	sort.Strings(ids)
	_, _ = sgeCmd("qdel", ids...)
	deadline := time.Now().Add(slurmGoneWait)
	for time.Now().Before(deadline) {
		names, err := sgeJobNames()
		if err != nil {
			break
		}
		left := false
		for id, name := range names {
			if mine(id, name) {
				left = true
			}
		}
		if !left {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	return len(ids)
}
