package exec

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"
)

// TestSgeOptions checks qsub's options from the plan's sge: block, the
// step's limits and its timeout; no cluster is needed.
func TestSgeOptions(t *testing.T) {
	p := mustPlan(t, `
name: p
executor: sge
sge:
  pe: smp
  queue: all.q
  project: proj
steps:
  - id: plain
    run: echo hi
  - id: limits
    cpus: 4
    memory: 2GiB
    timeout: 90s
    kill_grace: 5s
    sge: {memory_per_slot: true, memory_resource: mem_free, extra_args: "-l scratch=1G"}
    run: echo hi
  - id: own-hrt
    timeout: 1m
    sge: {pe: "", extra_args: [-l, "h_rt=0:0:30,h_vmem=1G"]}
    cpus: 2
    run: echo hi
`)
	cases := map[string][]string{
		"plain":   {"-q", "all.q", "-P", "proj"},
		"limits":  {"-q", "all.q", "-P", "proj", "-pe", "smp", "4", "-l", "h_rt=95", "-l", "mem_free=512M", "-l", "scratch=1G"},
		"own-hrt": {"-q", "all.q", "-P", "proj", "-l", "h_rt=0:0:30,h_vmem=1G"},
	}
	for id, want := range cases {
		s := p.Step(id)
		if got := sgeOptions(s, limitsOf(s, nil)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: sgeOptions = %q, want %q", id, got, want)
		}
	}
	// own-hrt's cpus are not requested (no pe): the plan says so.
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0].Message, `step "own-hrt": cpus is not requested from Grid Engine without sge: pe`) {
		t.Errorf("warnings: %+v", p.Warnings)
	}
	if got := sgeHrt(cases["own-hrt"]); got != "0:0:30" {
		t.Errorf("sgeHrt = %q", got)
	}
	s := p.Step("plain")
	got := qsubArgs(sgeJobName("r:1@x", "plain", 2), s, limitsOf(s, nil), "/l/a.out", "/l/a.err", "/l/a.sge")
	want := []string{"-terse", "-N", "faber-r_1_x-plain-a2", "-o", "/l/a.out", "-e", "/l/a.err", "-j", "n", "-S", "/bin/sh",
		"-notify", "-r", "n", "-q", "all.q", "-P", "proj", "/l/a.sge"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("qsubArgs = %q\nwant %q", got, want)
	}
	for b, want := range map[int64]string{512 << 20: "512M", 3 << 30: "3G", 1000: "1000", 1536: "1536", 1 << 10: "1K"} {
		if got := sgeSize(b); got != want {
			t.Errorf("sgeSize(%d) = %q, want %q", b, got, want)
		}
	}
}

// TestSgeScript runs a job script (with sh, here) whose environment and
// argv hold quotes, newlines, $, backticks and backslashes: the step gets
// them byte for byte, in its dir; Grid Engine's own variables stay the
// job's; 99 and 100 are remapped and said on a marker line.
func TestSgeScript(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a POSIX shell script")
	}
	dir := filepath.Join(t.TempDir(), "it's a \"dir\"")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	hostile := "a'b\"c $HOME `id` $(id) \\ back\\\\slash\nnew\tline\x01 é ;&|<>*?[ #~ {x}"
	env := []string{"PATH=" + os.Getenv("PATH"), "HOSTILE=" + hostile, "JOB_ID=faber's", "SGE_TASK_ID=9", "SGE_ROOT=/sge", "EMPTY="}
	argv := []string{"sh", "-c", `printf '%s\n' "$HOSTILE" > env.txt; printf '<%s>\n' "$@" > argv.txt; pwd > pwd.txt;` +
		` printf '%s|%s|%s|%s' "${JOB_ID-unset}" "${SGE_TASK_ID-unset}" "$SGE_ROOT" "${EMPTY-unset}" > vars.txt; exit "$CODE"`, "zero", hostile, "", "-x"}
	script := sgeScript("faber-r-s-a1", dir, env, argv)
	if _, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(script), ""); err != nil {
		t.Fatalf("the job script does not parse: %v\n%s", err, script)
	}
	path := filepath.Join(t.TempDir(), "attempt-1.sge")
	if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ code, exit, marker string }{{"0", "0", ""}, {"3", "3", ""}, {"99", "1", "99"}, {"100", "1", "100"}} {
		cmd := osexec.Command("sh", path)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "SGE_TASK_ID=7", "CODE=" + c.code}
		out, err := cmd.CombinedOutput()
		exit := "0"
		if ee, ok := err.(*osexec.ExitError); ok {
			exit = strings.TrimSpace(strings.TrimPrefix(ee.Error(), "exit status "))
		} else if err != nil {
			t.Fatal(err)
		}
		if exit != c.exit {
			t.Errorf("exit %s: the job exits %s, want %s (%s)", c.code, exit, c.exit, out)
		}
		code, marked := sgeMarkedExit(out)
		if (c.marker != "") != marked || (marked && strconv.Itoa(code) != c.marker) {
			t.Errorf("exit %s: marker %v %d in %q", c.code, marked, code, out)
		}
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read("env.txt"); got != hostile+"\n" {
		t.Errorf("env: %q, want %q", got, hostile)
	}
	if got, want := read("argv.txt"), "<"+hostile+">\n<>\n<-x>\n"; got != want {
		t.Errorf("argv: %q, want %q", got, want)
	}
	if got := strings.TrimSpace(read("pwd.txt")); got != dir {
		t.Errorf("dir: %q, want %q", got, dir)
	}
	// JOB_ID is not the job's here: faber's own was left out.
	if got := read("vars.txt"); got != "unset|7|/sge|" {
		t.Errorf("vars: %q", got)
	}
}

// TestParseQstatXML reads qstat -xml as SGE 8.1 prints it: running jobs
// under queue_info, pending ones under job_info; Eqw is done.
func TestParseQstatXML(t *testing.T) {
	doc := `<?xml version='1.0'?>
<job_info  xmlns:xsd="http://arc.liv.ac.uk/repos/darcs/sge/source/dist/util/resources/schemas/qstat/qstat.xsd">
  <queue_info>
    <job_list state="running">
      <JB_job_number>12</JB_job_number>
      <JAT_prio>0.50000</JAT_prio>
      <JB_name>faber-r-a-a1</JB_name>
      <JB_owner>root</JB_owner>
      <state>r</state>
      <JAT_start_time>2026-11-27T13:51:43</JAT_start_time>
      <queue_name>all.q@vm</queue_name>
      <slots>1</slots>
    </job_list>
  </queue_info>
  <job_info>
    <job_list state="pending">
      <JB_job_number>13</JB_job_number>
      <JAT_prio>0.00000</JAT_prio>
      <JB_name>faber-r-b-a1</JB_name>
      <JB_owner>root</JB_owner>
      <state>qw</state>
      <JB_submission_time>2026-11-27T13:51:43</JB_submission_time>
      <queue_name></queue_name>
      <slots>1</slots>
    </job_list>
    <job_list state="pending">
      <JB_job_number>14</JB_job_number>
      <JB_name>faber-r-c-a1</JB_name>
      <state>Eqw</state>
      <queue_name></queue_name>
    </job_list>
  </job_info>
</job_info>
`
	got, err := parseQstatXML([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]jobState{
		"12": {state: "r", node: "vm"},
		"13": {state: "qw"},
		"14": {state: "Eqw", done: true, exitCode: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseQstatXML = %+v, want %+v", got, want)
	}
	empty := "<?xml version='1.0'?>\n<job_info>\n  <queue_info>\n  </queue_info>\n  <job_info>\n  </job_info>\n</job_info>\n"
	if got, err := parseQstatXML([]byte(empty)); err != nil || len(got) != 0 {
		t.Errorf("no jobs: %v %v", got, err)
	}
	if _, err := parseQstatXML([]byte("error: commlib error")); err == nil {
		t.Error("not XML: no error")
	}
	if !sgeRunning("r") || !sgeRunning("dr") || !sgeRunning("t") || sgeRunning("qw") || sgeRunning("hqw") || sgeRunning("Eqw") || sgeRunning("SUBMITTED") {
		t.Error("sgeRunning")
	}
}

// TestParseQacct reads qacct -j's blocks: a requeued job's last run counts;
// failed and exit_status keep their code, a signal's name gives the signal.
func TestParseQacct(t *testing.T) {
	out := `==============================================================
qname        all.q               
hostname     vm                  
jobname      faber-r-a-a1        
jobnumber    12                  
taskid       undefined
failed       25  : rescheduling
exit_status  99                  
ru_wallclock 1s
ru_utime     0.001s
ru_stime     0.002s
ru_maxrss    4.578KB
category     -l h_rt=5
==============================================================
qname        all.q               
hostname     vm                  
jobname      faber-r-a-a1        
jobnumber    12                  
failed       37  : qmaster enforced h_rt, h_cpu, or h_vmem limit
exit_status  137                  (Killed)
ru_utime     1.500s
ru_stime     0.250s
ru_maxrss    3.375MB
category     -l h_rt=5
==============================================================
qname        all.q               
hostname     node2
jobname      faber-r-b-a1
jobnumber    13
failed       0    
exit_status  3                   
ru_maxrss    0.000B
category     -pe smp 2
`
	got := parseQacct(out)
	want := map[string]sgeRecord{
		"12": {failed: 37, failedMsg: "qmaster enforced h_rt, h_cpu, or h_vmem limit", exitStatus: 137, signal: 9, host: "vm",
			user: 1500 * time.Millisecond, sys: 250 * time.Millisecond, maxRSS: 3375 * (1 << 20) / 1000, category: "-l h_rt=5"},
		"13": {exitStatus: 3, host: "node2", category: "-pe smp 2"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseQacct =\n%+v\nwant\n%+v", got, want)
	}
	if got := parseQacct(""); len(got) != 0 {
		t.Errorf("no record: %v", got)
	}
}

// TestSgeEnded maps qacct's records to exit codes, causes and reasons.
func TestSgeEnded(t *testing.T) {
	p := mustPlan(t, "name: p\nexecutor: sge\nsteps:\n  - id: a\n    run: x\n")
	s := p.Step("a")
	k := &sgeKind{}
	end := func(rec *sgeRecord, js jobState, tail string, timedOut bool) (outcome, string) {
		o := outcome{exec: &sgeBatch{}, exitCode: js.exitCode, signal: js.signal, timedOut: timedOut, stderrTail: []byte(tail)}
		if timedOut {
			o.exitCode = 124
		}
		if rec != nil {
			k.recs = map[string]sgeRecord{"1": *rec}
		}
		r := k.ended("1", js, &o, s, limitsOf(s, nil))
		return o, r
	}
	done := jobState{state: "ended", done: true}
	o, r := end(&sgeRecord{failed: 37, exitStatus: 137, signal: 9, host: "vm", category: "-l h_rt=2"}, jobState{state: "ended", done: true, exitCode: 137, signal: 9}, "", false)
	if o.exitCode != 124 || o.cause != "timeout" || r != "sge time limit reached (h_rt=2)" || o.use.source != SourceQacct {
		t.Errorf("h_rt: %d %q %q", o.exitCode, o.cause, r)
	}
	o, r = end(&sgeRecord{failed: 37, exitStatus: 137, host: "vm", category: "-l h_rt=2"}, jobState{state: "ended", done: true, exitCode: 137}, "", true)
	if o.exitCode != 124 || r != "" {
		t.Errorf("faber's timeout first: %d %q", o.exitCode, r)
	}
	o, r = end(&sgeRecord{failed: 100, exitStatus: 137, signal: 9, host: "vm"}, jobState{state: "ended", done: true, exitCode: 137, signal: 9}, "", false)
	if o.exitCode != 137 || r != "sge deleted the job on vm (qdel or an administrator)" {
		t.Errorf("qdel: %d %q", o.exitCode, r)
	}
	o, r = end(&sgeRecord{exitStatus: 143, host: "vm"}, jobState{state: "ended", done: true, exitCode: 143}, "x\n"+sgeDeleting+"\nTerminated\n", false)
	if o.exitCode != 143 || r != "sge deleted the job on vm (qdel or an administrator)" {
		t.Errorf("qdel -notify: %d %q", o.exitCode, r)
	}
	o, r = end(&sgeRecord{exitStatus: 1, host: "vm"}, jobState{state: "ended", done: true, exitCode: 1}, "oops\n"+sgeExitMarker+"100 (...)\n", false)
	if o.exitCode != 100 || r != "" || o.errorText() != "oops" {
		t.Errorf("100: %d %q %q", o.exitCode, r, o.errorText())
	}
	o, r = end(&sgeRecord{failed: 26, failedMsg: "opening output file", host: "vm"}, done, "", false)
	if o.exitCode != 1 || r != "sge could not run the job on vm (failed 26: opening output file)" {
		t.Errorf("failed 26: %d %q", o.exitCode, r)
	}
	k.recs = nil
	o, r = end(nil, jobState{state: "qw", done: true, vanished: true}, "", false)
	if o.exitCode != 1 || r != "the Grid Engine job 1 left the queue with no record of how it ended" {
		t.Errorf("vanished: %d %q", o.exitCode, r)
	}
	o, r = end(nil, jobState{state: sgeWithdrawn, done: true, exitCode: 143}, "", true)
	if r != "" {
		t.Errorf("withdrawn on a timeout: %d %q", o.exitCode, r)
	}
}

func TestParseErrorReason(t *testing.T) {
	out := "job_number:                 79\nerror reason          1:      11/27/2026 14:29:41 [0:19453]: error: can't open output file \"/nonexistent/x.out\": No such file or directory\nscheduling info:            Job is in error state\n"
	if got, want := parseErrorReason(out), `: can't open output file "/nonexistent/x.out": No such file or directory`; got != want {
		t.Errorf("parseErrorReason = %q, want %q", got, want)
	}
	if got := parseErrorReason("job_number: 1\n"); got != "" {
		t.Errorf("no reason: %q", got)
	}
}

// TestSgeArrayTasks: qstat -xml lists an array's running tasks one by one
// and its waiting ones together ("1-4:1", "1,3,4", "5-9:2"); each task is
// <array>.<task> to faber, as in qacct's records (taskid) and qdel.
func TestSgeArrayTasks(t *testing.T) {
	doc := `<?xml version='1.0'?>
<job_info>
  <queue_info>
    <job_list state="running">
      <JB_job_number>2</JB_job_number>
      <JB_name>faber-r-fan-a0</JB_name>
      <state>r</state>
      <queue_name>all.q@vm</queue_name>
      <tasks>2</tasks>
    </job_list>
  </queue_info>
  <job_info>
    <job_list state="pending">
      <JB_job_number>2</JB_job_number>
      <JB_name>faber-r-fan-a0</JB_name>
      <state>qw</state>
      <queue_name></queue_name>
      <tasks>1,3-4:1,5-9:2</tasks>
    </job_list>
  </job_info>
</job_info>
`
	got, err := parseQstatXML([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]jobState{"2.2": {state: "r", node: "vm"}}
	for _, task := range []string{"1", "3", "4", "5", "7", "9"} {
		want["2."+task] = jobState{state: "qw"}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseQstatXML = %+v, want %+v", got, want)
	}
	recs := parseQacct(`==============================================================
jobname      faber-r-fan-a0
jobnumber    2
taskid       1
failed       0
exit_status  0
==============================================================
jobname      faber-r-fan-a0
jobnumber    2
taskid       2
failed       0
exit_status  3
==============================================================
jobname      faber-r-b-a1
jobnumber    4
taskid       undefined
failed       0
exit_status  5
`)
	if len(recs) != 3 || recs["2.1"].exitStatus != 0 || recs["2.2"].exitStatus != 3 || recs["4"].exitStatus != 5 {
		t.Errorf("parseQacct of an array's tasks = %+v", recs)
	}
}

// TestSgeArrayBatcher: the items of a fan-out submitted together are one
// qsub -t 1-<k> whose tasks are <id>.1..<id>.k, each item's job script
// written beside its logs and run by the array's script with the item's
// log files; an item whose options differ (its memory grew) is a job of
// its own.
func TestSgeArrayBatcher(t *testing.T) {
	calls := fakeClient(t, "qsub", "case \"$*\" in *' -t '*|'-t '*) echo $((n + 40)).1-3:1 ;; *) echo $((n + 40)) ;; esac")
	logs := t.TempDir()
	k := &sgeKind{}
	k.arrays().window = 3 * time.Second // all four start well within it, however busy the machine
	item := func(key string, mem int64) (*sgeBatch, procSpec) {
		s, ps := fanItem(logs, key, "echo "+key)
		return k.attempt("r-1", s, 1, logs, limits{memory: mem}).(*sgeBatch), ps
	}
	submit := map[string]func() (string, error){}
	for _, key := range []string{"a", "b", "c"} {
		submit[key] = func() (string, error) { a, ps := item(key, 0); return a.submit(ps) }
	}
	submit["d"] = func() (string, error) { a, ps := item("d", 2<<30); return a.submit(ps) } // grown limits: its own submission
	ids := submitTogether(t, submit)
	b, _ := os.ReadFile(calls)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d qsub calls, want 2 (one array, one job):\n%s", len(lines), b)
	}
	var array string
	for _, l := range lines {
		if strings.HasPrefix(l, "-t 1-3 ") {
			array = l
		}
	}
	if array == "" || !strings.Contains(array, "-N faber-r-1-fan-a0 ") || !strings.Contains(array, "-o /dev/null -e /dev/null") {
		t.Fatalf("no array submission named after the fan-out with /dev/null output:\n%s", b)
	}
	tasks := map[string]bool{}
	for _, key := range []string{"a", "b", "c"} {
		id := ids[key]
		if !strings.HasPrefix(id, "4") || !strings.Contains(id, ".") {
			t.Errorf("item %s: id %q, not an array task", key, id)
		}
		tasks[id] = true
	}
	if len(tasks) != 3 || strings.Contains(ids["d"], ".") {
		t.Errorf("ids %v: want three distinct tasks and a job", ids)
	}
	// The array's script runs each task's item script into its logs.
	scripts, _ := filepath.Glob(filepath.Join(logs, "*", "attempt-1.array.sge"))
	if len(scripts) != 1 {
		t.Fatalf("array scripts: %v", scripts)
	}
	for _, key := range []string{"a", "b", "c"} {
		task := strings.TrimPrefix(ids[key][strings.Index(ids[key], "."):], ".")
		cmd := osexec.Command("/bin/sh", scripts[0])
		cmd.Env = append(os.Environ(), "SGE_TASK_ID="+task, "JOB_ID=41")
		if err := cmd.Run(); err != nil {
			t.Fatalf("task %s: %v", task, err)
		}
		got, _ := os.ReadFile(filepath.Join(logs, key, "attempt-1.out"))
		if string(got) != key+"\n" {
			t.Errorf("task %s wrote %q to item %s's log, want %q", task, got, key, key+"\n")
		}
	}
}
