package exec

import (
	"bytes"
	"encoding/base64"
	osexec "os/exec"
	"strings"
	"time"

	"github.com/faber-run/faber/spec"
)

// Grid Engine's blocking mode (sge: {mode: blocking}): each attempt is one
// qrsh -now no, which waits for a slot, runs the job and relays its
// stdout, stderr and exit code, as srun does for Slurm. qrsh joins its
// arguments into one command line for a shell on the execution host and
// its builtin transport breaks lines there, so the job script (sgeScript,
// the same as a batch job's) travels as one base64 word: `echo <base64> |
// base64 -d | sh`. The job dies with faber's session.

// qrshArgs are qrsh's options for job job of step s under limits lim; the
// command line follows them.
func qrshArgs(job string, s *spec.Step, lim limits) []string {
	args := []string{"-now", "no", "-N", job, "-notify"}
	return append(args, sgeOptions(s, lim)...)
}

// qrshScript is the placeholder of the command line in the wrapped argv:
// command puts the job script there once it knows the environment.
const qrshScript = "<job script>"

// sgeAttempt runs a step attempt through qrsh.
type sgeAttempt struct {
	kind *sgeKind
	job  string
	dir  string // absolute
	step *spec.Step
	lim  limits
	argv []string // the attempt's own argv, which the job script runs
}

func (a *sgeAttempt) wrap(argv []string) []string {
	a.argv = argv
	out := append([]string{"qrsh"}, qrshArgs(a.job, a.step, a.lim)...)
	return append(out, qrshScript)
}

// writesLogs: qrsh relays the job's output, read through pipes.
func (a *sgeAttempt) writesLogs() bool { return false }

// setUp: Grid Engine enforces the limits, no cgroup here.
func (a *sgeAttempt) setUp() error { return nil }

func (a *sgeAttempt) command(argv []string, newCmd func([]string) *osexec.Cmd) *osexec.Cmd {
	cmd := newCmd(argv)
	if n := len(cmd.Args); n > 0 && cmd.Args[n-1] == qrshScript {
		script := sgeScript(a.job, a.dir, cmd.Env, a.argv)
		cmd.Args[n-1] = "echo " + base64.StdEncoding.EncodeToString([]byte(script)) + " | base64 -d | sh"
	}
	return cmd
}

// terminate: qdel of the job (by name): a queued job is withdrawn (qrsh
// then exits); a running one gets SIGUSR2 (-notify), which its script
// turns into SIGTERM to the step. qrsh does not end on SIGTERM.
func (a *sgeAttempt) terminate(grp procGroup) {
	_, _ = sgeCmd("qdel", a.job)
}

// kill: SIGKILL to qrsh, and the job deleted.
func (a *sgeAttempt) kill(grp procGroup) {
	_ = grp.signal(true)
	_, _ = sgeCmd("qdel", a.job)
}

// finish: a rejection names qsub's words; the step's 99 or 100 come back
// from the job script's marker line; h_rt, an outside qdel and Grid
// Engine's other failures come from the job's record, as in batch mode.
func (a *sgeAttempt) finish(argv []string, o *outcome, hard <-chan struct{}) string {
	if o.startErr != nil {
		return ""
	}
	for _, l := range bytes.Split(o.stderrTail, []byte("\n")) {
		if msg, ok := bytes.CutPrefix(bytes.TrimSpace(l), []byte("Unable to run job: ")); ok {
			if o.exitCode == 0 {
				o.exitCode = 1
			}
			return "sge rejected the job: " + strings.TrimSuffix(string(msg), ".") + " (qrsh" + strings.TrimPrefix(sgeUserOptions(a.step, a.lim), " (qsub")
		}
	}
	// The record is looked up when Grid Engine may have ended the job
	// (a signal's code) or said so; the step's own codes need none.
	deleting := bytes.Contains(o.stderrTail, []byte(sgeDeleting))
	if o.exitCode > 128 || deleting {
		var rec sgeRecord
		found := false
		for i := 0; i < 15 && !found; i++ {
			out, _ := sgeCmd("qacct", "-j", a.job)
			for _, r := range parseQacct(out) {
				rec, found = r, true
			}
			if !found {
				select {
				case <-hard:
					i = 15
				case <-time.After(200 * time.Millisecond):
				}
			}
		}
		if found {
			id := a.job
			a.kind.mu.Lock()
			if a.kind.recs == nil {
				a.kind.recs = map[string]sgeRecord{}
			}
			a.kind.recs[id] = rec
			a.kind.mu.Unlock()
			return a.kind.ended(id, jobState{state: "ended", done: true, node: rec.host}, o, a.step, a.lim)
		}
	}
	if code, ok := sgeMarkedExit(o.stderrTail); ok && !o.timedOut {
		o.exitCode, o.signal = code, 0
	}
	if deleting && !o.timedOut && o.stoppedBy == "" {
		if o.exitCode == 0 {
			o.exitCode = 1
		}
		return "sge deleted the job (qdel or an administrator)"
	}
	return ""
}

// ownLine: the job script's lines are faber's; when faber stopped the
// attempt, so is a shell's report of the kill.
func (a *sgeAttempt) ownLine(line []byte, stopped bool) bool {
	return bytes.HasPrefix(line, []byte("faber-sge: ")) || (stopped && shellKillReport(line))
}

func (a *sgeAttempt) release() {}
