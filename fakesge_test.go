//go:build linux

package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A fake Grid Engine for the contract test: qsub, qstat, qdel and qacct,
// played by this test binary (fakebatch_test.go has what it shares with
// the fake Slurm), so that random plans run with executor: sge in batch
// mode against the model of the contract without a cluster. It does what
// scripts/sge-cluster.sh measured of SGE 8.1 where faber's batch mode
// depends on it: qsub -terse prints "<id>" (an array: "<id>.1-<k>:1"); the
// job script is copied at submission and run by the -S shell in the home
// directory, with the job's environment (not qsub's: no -V) and Grid
// Engine's job variables (JOB_ID, JOB_NAME, SGE_TASK_ID "undefined" but in
// an array, TMPDIR of its own, ...), appending to its -o and -e files; a
// job that ended leaves qstat -xml, and qacct -j (an id, or a name
// pattern) has its record, with taskid, at once or a moment later
// (fakeSgeRecordLag). qdel of a running job sends the
// job's process group SIGUSR2 (as to a -notify job), then SIGKILL the
// notify time later (fakeNotifyTime); its record says "failed 100", as
// does a job killed from outside. A job waits in the queue (qw) for a
// moment first (fakeSgeQueued), and one deleted then is gone, with no
// record. State lives in $FABER_FAKE_SGE.

var fakeSgeEngine = &fakeEngine{
	executor: "sge", title: "Grid Engine", envVar: "FABER_FAKE_SGE",
	cmds: map[string]func(string, []string) int{
		"qsub":  fakeQsub,
		"qstat": fakeQstat,
		"qdel":  fakeQdel,
		"qacct": fakeQacct,
	},
}

// fakeSgeMain runs this test binary as a fake Grid Engine command when it
// was started as one (in the contract test, FABER_FAKE_SGE set).
func fakeSgeMain() { fakeSgeEngine.main() }

// fakeQsubFlags are qsub's options without a value (the others have one,
// -pe two).
var fakeQsubFlags = map[string]bool{"-terse": true, "-notify": true, "-cwd": true, "-V": true}

func fakeQsub(dir string, args []string) int {
	opt := map[string]string{"-S": "/bin/sh"}
	i := 0
	for ; i < len(args) && strings.HasPrefix(args[i], "-"); i++ {
		a := args[i]
		switch {
		case fakeQsubFlags[a]:
			opt[a] = "y"
		case a == "-pe" && i+2 < len(args):
			opt[a] = args[i+1] + " " + args[i+2]
			i += 2
		case i+1 < len(args):
			opt[a] = args[i+1]
			i++
		}
	}
	if i >= len(args) {
		fmt.Fprintln(os.Stderr, "Unable to read script file because of error: no script (the fake reads no stdin)")
		return 1
	}
	for _, o := range []string{"-q", "-P", "-pe", "-b", "-wd"} {
		if opt[o] != "" {
			fmt.Fprintf(os.Stderr, "Unable to run job: the fake Grid Engine does not take %s %s.\nExiting.\n", o, opt[o])
			return 1
		}
	}
	name := opt["-N"]
	if strings.ContainsAny(name, ":@/\\*? \t") {
		fmt.Fprintln(os.Stderr, "Unable to run job: Colon (':') not allowed in objectname.\nExiting.")
		return 1
	}
	// The job script is Grid Engine's copy, made at submission.
	script, err := os.ReadFile(args[i])
	if err != nil {
		fmt.Fprintf(os.Stderr, "Unable to read script file because of error: %v\n", err)
		return 1
	}
	id, err := fakeNewJob(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "Unable to run job:", err)
		return 1
	}
	jobDir := filepath.Join(dir, strconv.Itoa(id))
	copied := filepath.Join(jobDir, "script")
	if err := os.WriteFile(copied, script, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, "Unable to run job:", err)
		return 1
	}
	argv := append([]string{opt["-S"], copied}, args[i+1:]...)
	// -t <lo>-<hi>[:<step>]: tasks <id>.<lo> ... <id>.<hi>, each a job of
	// its own (the array's own directory only holds its id and script).
	first, last, step := 0, 0, 0
	if t, ok := opt["-t"]; ok {
		span, st, _ := strings.Cut(t, ":")
		lo, hi, isRange := strings.Cut(span, "-")
		first, _ = strconv.Atoi(lo)
		last = first
		if isRange {
			last, _ = strconv.Atoi(hi)
		}
		step = 1
		if n, err := strconv.Atoi(st); err == nil && n > 0 {
			step = n
		}
		if first < 1 || last < first {
			fmt.Fprintf(os.Stderr, "Unable to run job: invalid task range %q.\nExiting.\n", t)
			return 1
		}
		_ = os.WriteFile(filepath.Join(jobDir, "array"), nil, 0o644)
		_ = os.WriteFile(filepath.Join(jobDir, "name"), []byte(name), 0o644)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = "/"
	}
	if st, err := os.Stat(home); err != nil || !st.IsDir() {
		home = "/"
	}
	start := func(task int) bool {
		jid, taskID := strconv.Itoa(id), "undefined"
		if step > 0 {
			jid, taskID = jid+"."+strconv.Itoa(task), strconv.Itoa(task)
		}
		jd := filepath.Join(dir, jid)
		env := fakeSgeEnv(jd, strconv.Itoa(id), taskID, name, home, opt, copied)
		if step > 0 {
			env = append(env, "SGE_TASK_FIRST="+strconv.Itoa(first), "SGE_TASK_LAST="+strconv.Itoa(last), "SGE_TASK_STEPSIZE="+strconv.Itoa(step))
		} else {
			env = append(env, "SGE_TASK_FIRST=undefined", "SGE_TASK_LAST=undefined", "SGE_TASK_STEPSIZE=undefined")
		}
		// A job waits in the queue a moment, more or less (on the
		// cluster, about a second).
		queued := fakeSgeQueued[(id+task)%len(fakeSgeQueued)]
		throttle := ""
		if m := opt["-tc"]; m != "" && step > 0 {
			// -tc M: at most M tasks of the array run at once.
			throttle = jobDir + " " + m
		}
		if err := fakeStartJob(jd, name, env, home, opt["-o"], opt["-e"], argv, queued, throttle); err != nil {
			fmt.Fprintln(os.Stderr, "Unable to run job:", err)
			return false
		}
		return true
	}
	if step == 0 {
		if !start(0) {
			return 1
		}
	} else {
		for t := first; t <= last; t += step {
			if !start(t) {
				return 1
			}
		}
	}
	switch {
	case opt["-terse"] == "" && step > 0:
		fmt.Printf("Your job-array %d.%d-%d:%d (%q) has been submitted\n", id, first, last, step, name)
	case opt["-terse"] == "":
		fmt.Printf("Your job %d (%q) has been submitted\n", id, name)
	case step > 0:
		fmt.Printf("%d.%d-%d:%d\n", id, first, last, step)
	default:
		fmt.Println(id)
	}
	return 0
}

// fakeSgeQueued are the times a job waits in the queue, by job (and
// task) number.
var fakeSgeQueued = []time.Duration{0, 300 * time.Millisecond, 50 * time.Millisecond, 0, 800 * time.Millisecond}

// fakeSgeRecordLag are the times a job's accounting record takes to
// appear once it left qstat, by job number (on the cluster, with
// accounting_flush_time 0, within 50 ms; with the stock flush_time, 10 to
// 12 s).
var fakeSgeRecordLag = []time.Duration{0, 100 * time.Millisecond, 0, 400 * time.Millisecond}

// fakeSgeEnv is the environment of job (or task) directory jd: not
// qsub's (no -V), but a login's few variables and Grid Engine's job
// variables, the submitter's as SGE_O_*.
func fakeSgeEnv(jd, id, task, name, home string, opt map[string]string, script string) []string {
	host, _ := os.Hostname()
	user := os.Getenv("USER")
	if user == "" {
		user = "root"
	}
	cwd, _ := os.Getwd()
	tmp := filepath.Join(jd, "tmp")
	_ = os.MkdirAll(tmp, 0o700)
	return []string{
		"HOME=" + home, "USER=" + user, "LOGNAME=" + user, "SHELL=" + opt["-S"],
		"PATH=/usr/local/bin:/bin:/usr/bin",
		"TMPDIR=" + tmp, "TMP=" + tmp,
		"JOB_ID=" + id, "JOB_NAME=" + name, "JOB_SCRIPT=" + script, "REQUEST=" + name,
		"SGE_TASK_ID=" + task,
		"QUEUE=all.q", "HOSTNAME=" + host, "ENVIRONMENT=BATCH",
		"NSLOTS=1", "NHOSTS=1", "NQUEUES=1", "RESTARTED=0",
		"SGE_O_WORKDIR=" + cwd, "SGE_O_HOME=" + os.Getenv("HOME"), "SGE_O_PATH=" + os.Getenv("PATH"),
		"SGE_O_SHELL=" + os.Getenv("SHELL"), "SGE_O_LOGNAME=" + user, "SGE_O_HOST=" + host,
		"SGE_CWD_PATH=" + home, "SGE_STDOUT_PATH=" + opt["-o"], "SGE_STDERR_PATH=" + opt["-e"],
		"SGE_JOB_SPOOL_DIR=" + jd,
	}
}

// fakeSgeJob is a job (or array task) as qstat and qacct tell it.
type fakeSgeJob struct {
	fakeJobState
	number, task string // task "" but in an array
}

func fakeSgeJobs(dir string) []fakeSgeJob {
	var jobs []fakeSgeJob
	for _, j := range fakeJobs(dir) {
		n, t, _ := strings.Cut(j.id, ".")
		jobs = append(jobs, fakeSgeJob{fakeJobState: j, number: n, task: t})
	}
	return jobs
}

func fakeQstat(dir string, args []string) int {
	isXML := false
	for _, a := range args {
		switch a {
		case "-xml":
			isXML = true
		case "-j":
			return 0 // no details (an error reason): none to give
		}
	}
	host, _ := os.Hostname()
	user := os.Getenv("USER")
	var running, waiting []fakeSgeJob
	for _, j := range fakeSgeJobs(dir) {
		switch {
		case j.state != "RUNNING":
		case fakeJobWaits(dir, j.id):
			waiting = append(waiting, j)
		default:
			running = append(running, j)
		}
	}
	state := func(j fakeSgeJob) string {
		if _, err := os.Stat(filepath.Join(dir, j.id, "canceled")); err == nil {
			return "dr" // being deleted
		}
		return "r"
	}
	if !isXML {
		if len(running)+len(waiting) == 0 {
			return 0
		}
		fmt.Println("job-ID  prior   name       user         state submit/start at     queue                          slots ja-task-ID")
		fmt.Println(strings.Repeat("-", 111))
		for _, j := range running {
			fmt.Printf("%7s 0.50000 %-10.10s %-12s %-5s %s %-30s %5d %s\n", j.number, j.name, user, state(j), time.Now().Format("01/02/2006 15:04:05"), "all.q@"+host, 1, j.task)
		}
		for _, j := range waiting {
			fmt.Printf("%7s 0.00000 %-10.10s %-12s %-5s %s %-30s %5d %s\n", j.number, j.name, user, "qw", time.Now().Format("01/02/2006 15:04:05"), "", 1, j.task)
		}
		return 0
	}
	var b bytes.Buffer
	esc := func(s string) string {
		var e bytes.Buffer
		_ = xml.EscapeText(&e, []byte(s))
		return e.String()
	}
	b.WriteString("<?xml version='1.0'?>\n<job_info  xmlns:xsd=\"http://arc.liv.ac.uk/repos/darcs/sge/source/dist/util/resources/schemas/qstat/qstat.xsd\">\n  <queue_info>\n")
	for _, j := range running {
		fmt.Fprintf(&b, "    <job_list state=\"running\">\n      <JB_job_number>%s</JB_job_number>\n      <JAT_prio>0.50000</JAT_prio>\n      <JB_name>%s</JB_name>\n      <JB_owner>%s</JB_owner>\n      <state>%s</state>\n      <JAT_start_time>%s</JAT_start_time>\n      <queue_name>all.q@%s</queue_name>\n      <slots>1</slots>\n",
			j.number, esc(j.name), esc(user), state(j), time.Now().Format("2006-01-02T15:04:05"), esc(host))
		if j.task != "" {
			fmt.Fprintf(&b, "      <tasks>%s</tasks>\n", j.task)
		}
		b.WriteString("    </job_list>\n")
	}
	b.WriteString("  </queue_info>\n  <job_info>\n")
	// The waiting tasks of an array are listed together ("1,3,4").
	for i := 0; i < len(waiting); {
		j, tasks := waiting[i], []string{waiting[i].task}
		for i++; j.task != "" && i < len(waiting) && waiting[i].number == j.number; i++ {
			tasks = append(tasks, waiting[i].task)
		}
		fmt.Fprintf(&b, "    <job_list state=\"pending\">\n      <JB_job_number>%s</JB_job_number>\n      <JAT_prio>0.00000</JAT_prio>\n      <JB_name>%s</JB_name>\n      <JB_owner>%s</JB_owner>\n      <state>qw</state>\n      <JB_submission_time>%s</JB_submission_time>\n      <queue_name></queue_name>\n      <slots>1</slots>\n",
			j.number, esc(j.name), esc(user), time.Now().Format("2006-01-02T15:04:05"))
		if j.task != "" {
			fmt.Fprintf(&b, "      <tasks>%s</tasks>\n", strings.Join(tasks, ","))
		}
		b.WriteString("    </job_list>\n")
	}
	b.WriteString("  </job_info>\n</job_info>\n")
	_, _ = os.Stdout.Write(b.Bytes())
	return 0
}

// fakeQdel deletes jobs: "<id>" (every task of an array) or "<id>.<task>".
// A running job's monitor sends it the notify signal, then SIGKILL.
func fakeQdel(dir string, args []string) int {
	user := os.Getenv("USER")
	if user == "" {
		user = "root"
	}
	code := 0
	jobs := fakeSgeJobs(dir)
	for _, id := range args {
		if strings.HasPrefix(id, "-") {
			continue
		}
		found := false
		for _, j := range jobs {
			if (j.id != id && j.number != id) || j.state != "RUNNING" {
				continue
			}
			found = true
			jd := filepath.Join(dir, j.id)
			if _, err := os.Stat(filepath.Join(jd, "canceled")); err == nil {
				fmt.Printf("job %s is already in deletion\n", j.id)
				continue
			}
			waits := fakeJobWaits(dir, j.id)
			_ = os.WriteFile(filepath.Join(jd, "canceled"), nil, 0o644)
			if b, err := os.ReadFile(filepath.Join(jd, "monitor")); err == nil {
				if pid, _ := strconv.Atoi(string(b)); pid > 0 {
					_ = syscall.Kill(pid, syscall.SIGUSR2)
				}
			}
			if waits {
				fmt.Printf("%s has deleted job %s\n", user, j.id)
			} else {
				fmt.Printf("%s has registered the job %s for deletion\n", user, j.id)
			}
		}
		if !found {
			fmt.Fprintf(os.Stderr, "denied: job %q does not exist\n", id)
			code = 1
		}
	}
	return code
}

// fakeQacct prints the records of ended jobs: qacct -j <id> or -j <name
// pattern>.
func fakeQacct(dir string, args []string) int {
	want := ""
	for i, a := range args {
		if a == "-j" && i+1 < len(args) {
			want = args[i+1]
		}
	}
	host, _ := os.Hostname()
	var b strings.Builder
	for _, j := range fakeSgeJobs(dir) {
		if j.state == "RUNNING" {
			continue
		}
		if match, _ := filepath.Match(want, j.name); want != "" && want != j.number && !match {
			continue
		}
		jd := filepath.Join(dir, j.id)
		n, _ := strconv.Atoi(j.number)
		if st, err := os.Stat(filepath.Join(jd, "status")); err != nil || time.Since(st.ModTime()) < fakeSgeRecordLag[n%len(fakeSgeRecordLag)] {
			continue // not written yet
		}
		ws := syscall.WaitStatus(j.ws)
		failed, exit := "0", strconv.Itoa(ws.ExitStatus())
		if ws.Signaled() {
			name := ws.Signal().String()
			exit = fmt.Sprintf("%d                  (%s)", 128+int(ws.Signal()), strings.ToUpper(name[:1])+name[1:])
		}
		if _, err := os.Stat(filepath.Join(jd, "canceled")); err == nil || ws.Signaled() {
			failed = "100  : assumedly after job"
		}
		var user, sys time.Duration
		var rss int64
		if u, err := os.ReadFile(filepath.Join(jd, "usage")); err == nil {
			_, _ = fmt.Sscan(string(u), &user, &sys, &rss)
		}
		task := j.task
		if task == "" {
			task = "undefined"
		}
		fmt.Fprintf(&b, "==============================================================\n"+
			"qname        all.q\nhostname     %s\njobname      %s\njobnumber    %s\ntaskid       %s\n"+
			"failed       %s\nexit_status  %s\nru_wallclock 0s\nru_utime     %.3fs\nru_stime     %.3fs\nru_maxrss    %.3fKB\ncategory     -\n",
			host, j.name, j.number, task, failed, exit, user.Seconds(), sys.Seconds(), float64(rss))
	}
	if b.Len() == 0 {
		what := "name"
		if _, err := strconv.Atoi(want); err == nil {
			what = "id"
		}
		fmt.Fprintf(os.Stderr, "error: job %s %s not found\n", what, want)
		return 1
	}
	fmt.Print(b.String())
	return 0
}
