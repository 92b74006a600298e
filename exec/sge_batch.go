package exec

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/faber-run/faber/spec"
)

// Grid Engine's batch mode, the default of executor: sge: each attempt is
// a qsub job running its job script (sgeScript, written next to the
// attempt's logs as attempt-<N>.sge). The job appends to the attempt's log
// files itself (-o, -e: Grid Engine opens them for appending), is not
// rerunnable (-r n: faber's rules decide retries) and gets SIGUSR2 before
// qdel's SIGKILL (-notify), which its script turns into the step's SIGTERM.
// One qstat -xml per tick covers every job of the user; a job that left it
// is looked up in qacct (one call for all the run's jobs, by name).

// qsubArgs are qsub's options and arguments for job job of step s under
// limits lim: its logs at out and errPath, its job script at script.
func qsubArgs(job string, s *spec.Step, lim limits, out, errPath, script string) []string {
	args := []string{"-terse", "-N", job, "-o", out, "-e", errPath, "-j", "n", "-S", "/bin/sh", "-notify", "-r", "n"}
	args = append(args, sgeOptions(s, lim)...)
	return append(args, script)
}

// sgeBatch is one attempt as a Grid Engine batch job.
type sgeBatch struct {
	kind  *sgeKind
	runID string
	job   string // faber-<run-id>-<step>-a<N>: leftover jobs are found by it
	dir   string // absolute
	step  *spec.Step
	lim   limits
}

// submit submits the attempt: an item of a fan-out joins the array of
// the items started with it (sge_array.go), any other step is a job.
func (a *sgeBatch) submit(ps procSpec) (string, error) {
	if key, ok := a.kind.arrayKey(a.step, a.lim); ok {
		return a.kind.arrays().submit(key, a, ps)
	}
	return a.submitJob(ps)
}

// arrayKey: the items of a fan-out in batch mode are arrays, by their
// options.
func (*sgeKind) arrayKey(s *spec.Step, lim limits) (string, bool) {
	if s.FanOutOf == "" || sgeBlocking(s) {
		return "", false
	}
	return s.FanOutOf + "\x00" + strings.Join(sgeOptions(s, lim), "\x00"), true
}

// submitJob submits the attempt as a job of its own.
func (a *sgeBatch) submitJob(ps procSpec) (string, error) {
	out, errPath, err := sgeLogPaths(ps)
	if err != nil {
		return "", err
	}
	script := strings.TrimSuffix(out, ".out") + ".sge"
	if err := os.WriteFile(script, []byte(sgeScript(a.job, a.dir, ps.env, ps.argv)), 0o700); err != nil {
		return "", err
	}
	return runQsub(qsubArgs(a.job, a.step, a.lim, out, errPath, script), ps.env, a.step, a.lim)
}

// sgeLogPaths are the absolute paths of ps's logs, which qsub's -o and -e
// take as they are.
func sgeLogPaths(ps procSpec) (out, errPath string, err error) {
	out, err1 := filepath.Abs(ps.stdoutPath)
	errPath, err2 := filepath.Abs(ps.stderrPath)
	if err1 != nil || err2 != nil {
		return "", "", fmt.Errorf("log paths: %v %v", err1, err2)
	}
	if strings.ContainsAny(out+errPath, ":$") {
		// qsub reads -o [host:]path and expands $VARIABLE in it.
		return "", "", fmt.Errorf("sge batch mode cannot write logs under %s: the path holds ':' or '$' (use another state dir)", filepath.Dir(out))
	}
	return out, errPath, nil
}

// runQsub runs qsub with args and environment env (qsub's own: the job
// gets the one its script sets) and returns the id of the job it submitted
// (of an array: "<id>.1-<k>:1", the id before the dot); s and lim name the
// options a rejection is about.
func runQsub(args, env []string, s *spec.Step, lim limits) (string, error) {
	stdout, stderr, err := runClient(sgeCmdTimeout, sgeCmdTimeout, env, "", "qsub", args...)
	var ee *osexec.ExitError
	switch {
	case err != nil && errors.As(err, &ee):
		msgs := clientMessages(stderr, err, func(l string) string {
			if l = strings.TrimSpace(strings.TrimPrefix(l, "Unable to run job: ")); l == "Exiting." {
				return ""
			}
			return strings.TrimSuffix(l, ".")
		})
		return "", &rejected{log: stderr, msg: "sge rejected the job: " + strings.Join(msgs, "; ") + sgeUserOptions(s, lim)}
	case err != nil:
		return "", err
	}
	id, _, _ := strings.Cut(strings.TrimSpace(stdout), ".")
	if _, err := strconv.Atoi(id); err != nil {
		return "", &rejected{msg: fmt.Sprintf("sge rejected the job: qsub printed %q, not a job id", strings.TrimSpace(stdout))}
	}
	return id, nil
}

// sgeUserOptions is " (qsub OPTIONS)" with the options that came from the
// step's sge: block and limits, which a rejection is about, or "".
func sgeUserOptions(s *spec.Step, lim limits) string {
	o := sgeOptions(s, lim)
	if len(o) == 0 {
		return ""
	}
	return " (qsub " + strings.Join(o, " ") + ")"
}

func (a *sgeBatch) poller() *jobPoller { return a.kind.poller() }

func (a *sgeBatch) ref(id string) string { return executorSge + ":" + id }

// cancel: qdel. A queued job is withdrawn (and leaves no record: faber
// remembers it did that); a running one gets SIGUSR2 (-notify), which its
// script turns into SIGTERM to the step, then Grid Engine's SIGKILL the
// queue's notify time later. A second qdel (hard) changes nothing of that.
func (a *sgeBatch) cancel(id string, last jobState, hard bool) {
	if !sgeRunning(last.state) {
		a.kind.mu.Lock()
		if a.kind.withdrawn == nil {
			a.kind.withdrawn = map[string]bool{}
		}
		a.kind.withdrawn[id] = true
		a.kind.mu.Unlock()
	}
	_, _ = sgeCmd("qdel", id)
}

// sgeRunning reports whether a qstat state is a job that runs (r, t, Rr,
// dr, ...), rather than one that waits (qw, hqw, Rq, Eqw).
func sgeRunning(state string) bool {
	return strings.ContainsAny(state, "rt")
}

// ended maps the job's end: qacct's failed 37 with an h_rt is a timeout
// (124), failed 100 (SIGKILL: qdel, or a kill from outside) that faber did
// not ask for says so, an error state or any other failure names Grid
// Engine's reason; a step's 99 or 100 comes back from the job script's
// marker line.
func (a *sgeBatch) ended(id string, js jobState, o *outcome) string {
	return a.kind.ended(id, js, o, a.step, a.lim)
}

func (k *sgeKind) ended(id string, js jobState, o *outcome, s *spec.Step, lim limits) string {
	k.mu.Lock()
	rec, hasRec := k.recs[id]
	delete(k.recs, id)
	withdrawn := k.withdrawn[id]
	delete(k.withdrawn, id)
	k.mu.Unlock()
	if hasRec {
		o.use.source = SourceQacct
		o.use.user, o.use.sys, o.use.peakRSS = rec.user, rec.sys, rec.maxRSS
	}
	if code, ok := sgeMarkedExit(o.stderrTail); ok && !o.timedOut && (!hasRec || rec.failed == 0) {
		o.exitCode, o.signal = code, 0
	}
	failed := func(r string) string {
		if o.exitCode == 0 {
			o.exitCode = 1
		}
		return r
	}
	stopped := o.timedOut || o.stoppedBy != ""
	switch {
	case js.vanished:
		if stopped && withdrawn {
			return ""
		}
		return failed(fmt.Sprintf("the Grid Engine job %s left the queue with no record of how it ended", id))
	case js.state == sgeWithdrawn:
		if stopped {
			return ""
		}
		return failed("sge deleted the job while it was queued")
	case strings.Contains(js.state, "E"):
		why := sgeErrorReason(id)
		_, _ = sgeCmd("qdel", id)
		return failed("sge held the job in error state (" + js.state + ")" + why)
	case stopped:
		return ""
	case bytes.Contains(o.stderrTail, []byte(sgeDeleting)) && (!hasRec || rec.failed == 0 || rec.failed == 100):
		// qdel's SIGUSR2 came, and the step ended on the SIGTERM it
		// became, or on Grid Engine's SIGKILL after the notify time.
		node := js.node
		if hasRec {
			node = rec.host
		}
		return failed("sge deleted the job on " + node + " (qdel or an administrator)")
	case !hasRec || rec.failed == 0:
		return ""
	case rec.failed == 37:
		hrt := ""
		for _, w := range strings.Fields(rec.category) {
			for _, r := range strings.Split(w, ",") {
				if v, ok := strings.CutPrefix(r, "h_rt="); ok {
					hrt = v
				}
			}
		}
		if hrt == "" {
			hrt = sgeHrt(sgeOptions(s, lim))
		}
		if hrt == "" {
			return failed("sge ended the job at a limit: " + rec.failedMsg)
		}
		o.exitCode, o.signal = 124, 0
		o.cause = spec.CauseTimeout
		return "sge time limit reached (h_rt=" + hrt + ")"
	case rec.failed == 100:
		return failed("sge deleted the job on " + rec.host + " (qdel or an administrator)")
	default:
		return failed(fmt.Sprintf("sge could not run the job on %s (failed %d: %s)", rec.host, rec.failed, rec.failedMsg))
	}
}

// sgeMarkedExit is the step's exit code from the job script's marker line
// (sgeExitMarker), the last one in tail.
func sgeMarkedExit(tail []byte) (int, bool) {
	code, found := 0, false
	for _, l := range bytes.Split(tail, []byte("\n")) {
		if m := reSgeExit().FindSubmatch(l); m != nil {
			if n, err := strconv.Atoi(string(m[1])); err == nil {
				code, found = n, true
			}
		}
	}
	return code, found
}

// sgeErrorReason is ": <qstat -j's error reason>" of a job in error state,
// or "".
func sgeErrorReason(id string) string {
	job, _, _ := strings.Cut(id, ".") // an array task's: its array's
	out, _ := sgeCmd("qstat", "-j", job)
	return parseErrorReason(out)
}

// parseErrorReason reads qstat -j's "error reason    1:      11/27/2026
// 14:29:41 [0:19453]: error: can't open output file ...".
func parseErrorReason(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "error reason") {
			continue
		}
		_, v, _ := strings.Cut(l, ":")
		if _, msg, ok := strings.Cut(v, "]: "); ok {
			v = msg
		}
		return ": " + strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), "error: "))
	}
	return ""
}

// ownLine: the job script's lines (sgeExitMarker, sgeDeleting) are faber's;
// when faber stopped the
// attempt, so is a shell's report of the kill.
func (a *sgeBatch) ownLine(line []byte, stopped bool) bool {
	return bytes.HasPrefix(line, []byte("faber-sge: ")) || (stopped && shellKillReport(line))
}

// sgeWithdrawn is the state of a job faber deleted while it was queued.
const sgeWithdrawn = "withdrawn"

// poller is the run's poller of its Grid Engine jobs.
func (k *sgeKind) poller() *jobPoller {
	k.pollOnce.Do(func() { k.poll = newJobPoller(sgeListJobs, k.record) })
	return k.poll
}

// record looks jobs that left qstat up in qacct (one call) and keeps their
// records for ended; a job faber withdrew while queued has none, and ends
// at once.
func (k *sgeKind) record(ids []string) map[string]jobState {
	k.mu.Lock()
	runID := k.runID
	k.mu.Unlock()
	recs := sgeRecords(runID, ids)
	out := map[string]jobState{}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, id := range ids {
		if r, ok := recs[id]; ok {
			if k.recs == nil {
				k.recs = map[string]sgeRecord{}
			}
			k.recs[id] = r
			out[id] = jobState{state: "ended", done: true, exitCode: r.exitStatus, signal: r.signal, node: r.host}
		} else if k.withdrawn[id] {
			out[id] = jobState{state: sgeWithdrawn, done: true, exitCode: 143}
		}
	}
	return out
}

// sgeRecords asks qacct for the records of jobs ids: one call for every
// job of run runID (by name, faber-<run-id>-*), else one per job.
func sgeRecords(runID string, ids []string) map[string]sgeRecord {
	if _, err := osexec.LookPath("qacct"); err != nil {
		return nil
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	all := map[string]sgeRecord{}
	if runID != "" {
		out, _ := sgeCmd("qacct", "-j", "faber-"+sgeName(runID)+"-*")
		all = parseQacct(out)
	} else {
		asked := map[string]bool{}
		for _, id := range ids {
			id, _, _ = strings.Cut(id, ".") // an array task's: its array's
			if asked[id] {
				continue
			}
			asked[id] = true
			out, _ := sgeCmd("qacct", "-j", id)
			for j, r := range parseQacct(out) {
				all[j] = r
			}
		}
	}
	recs := map[string]sgeRecord{}
	for j, r := range all {
		if want[j] {
			recs[j] = r
		}
	}
	return recs
}

// qstatDoc is qstat -xml's document: running jobs under queue_info, the
// others under job_info.
type qstatDoc struct {
	Running []qstatJob `xml:"queue_info>job_list"`
	Pending []qstatJob `xml:"job_info>job_list"`
}

type qstatJob struct {
	Number string `xml:"JB_job_number"`
	Name   string `xml:"JB_name"`
	State  string `xml:"state"`
	Queue  string `xml:"queue_name"`
	// Tasks are an array's: a running task is listed alone ("3"), the
	// waiting ones together ("1-4:1", "1,3,4", "5-9:2").
	Tasks string `xml:"tasks"`
}

// ids are the job's ids as faber knows them: its number, or each of its
// tasks' <number>.<task>.
func (j qstatJob) ids() []string {
	if j.Tasks == "" {
		return []string{j.Number}
	}
	var ids []string
	for _, r := range strings.Split(j.Tasks, ",") {
		span, stepS, _ := strings.Cut(r, ":")
		loS, hiS, isRange := strings.Cut(span, "-")
		lo, err1 := strconv.Atoi(loS)
		hi, err2 := lo, error(nil)
		if isRange {
			hi, err2 = strconv.Atoi(hiS)
		}
		step := 1
		if stepS != "" {
			if n, err := strconv.Atoi(stepS); err == nil && n > 0 {
				step = n
			}
		}
		if err1 != nil || err2 != nil || hi-lo > 1<<20 {
			continue
		}
		for t := lo; t <= hi; t += step {
			ids = append(ids, j.Number+"."+strconv.Itoa(t))
		}
	}
	return ids
}

// sgeListJobs is one qstat -xml call: every queued or running job of this
// user (qstat without -u lists the caller's own).
func sgeListJobs() (map[string]jobState, error) {
	out, err := sgeCmd("qstat", "-xml")
	if err != nil {
		return nil, err
	}
	return parseQstatXML([]byte(out))
}

// parseQstatXML reads qstat -xml: a job in an error state (Eqw) is done
// (it would wait for qdel forever), any other is not (qstat lists no job
// that ended).
func parseQstatXML(out []byte) (map[string]jobState, error) {
	jobs, err := qstatJobs(out)
	if err != nil {
		return nil, err
	}
	m := map[string]jobState{}
	for _, j := range jobs {
		js := jobState{state: j.State}
		if _, host, ok := strings.Cut(j.Queue, "@"); ok {
			js.node = host
		}
		if strings.Contains(j.State, "E") {
			js.done, js.exitCode = true, 1
		}
		for _, id := range j.ids() {
			m[id] = js
		}
	}
	return m, nil
}

func qstatJobs(out []byte) ([]qstatJob, error) {
	var doc qstatDoc
	if err := xml.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("qstat -xml: %w", err)
	}
	return append(doc.Running, doc.Pending...), nil
}

// sgeJobNames lists this user's queued and running jobs as id -> name.
func sgeJobNames() (map[string]string, error) {
	out, err := sgeCmd("qstat", "-xml")
	if err != nil {
		return nil, err
	}
	jobs, err := qstatJobs([]byte(out))
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, j := range jobs {
		for _, id := range j.ids() {
			m[id] = j.Name
		}
	}
	return m, nil
}
