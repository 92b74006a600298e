package exec

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestSlurmWrap checks the srun argv an attempt gets from the plan's
// executor and slurm: block in mode: blocking; no cluster is needed.
func TestSlurmWrap(t *testing.T) {
	p := mustPlan(t, `
name: p
executor: slurm
slurm:
  mode: blocking
  partition: gpu
  account: proj
  time: "2:00:00"
steps:
  - id: plain
    executor: local
    run: echo hi
  - id: defaults
    slurm:
      partition: cpu
    run: echo hi
  - id: every
    dir: sub/{step_id}
    timeout: 90s
    slurm:
      qos: high
      cpus: 4
      mem: 8G
      gpus: a100:2
      time: ""
      extra_args: [--constraint=fast, --exclusive]
    run: echo hi
  - id: rounded
    timeout: 2s
    slurm:
      time: ""
    run: echo hi
  - id: cmd
    run: /tool --flag
commands:
  /tool: sh
`)
	dir := p.Dir
	r := &Runner{Plan: p, RunID: "p-20260101T000000-abcd"}
	sh := func(script string) []string { return []string{"sh", "-c", script} }
	cases := []struct {
		step string
		argv []string
		want []string
	}{
		{"plain", sh("echo hi"), sh("echo hi")},
		{"defaults", sh("echo hi"), append([]string{"srun", "--job-name=faber-p-20260101T000000-abcd-defaults-a3",
			"--chdir=" + dir, "--export=ALL", "--partition=cpu", "--account=proj", "--time=2:00:00", "--"}, sh("echo hi")...)},
		{"every", sh("echo hi"), append([]string{"srun", "--job-name=faber-p-20260101T000000-abcd-every-a3",
			"--chdir=" + filepath.Join(dir, "sub", "every"), "--export=ALL", "--partition=gpu", "--account=proj",
			"--qos=high", "--cpus-per-task=4", "--mem=8G", "--gres=gpu:a100:2", "--time=2",
			"--constraint=fast", "--exclusive", "--"}, sh("echo hi")...)},
		{"rounded", sh("echo hi"), append([]string{"srun", "--job-name=faber-p-20260101T000000-abcd-rounded-a3",
			"--chdir=" + dir, "--export=ALL", "--partition=gpu", "--account=proj", "--time=1", "--"}, sh("echo hi")...)},
		{"cmd", []string{"/abs/tool.sh", "--flag"}, []string{"srun", "--job-name=faber-p-20260101T000000-abcd-cmd-a3",
			"--chdir=" + dir, "--export=ALL", "--partition=gpu", "--account=proj", "--time=2:00:00", "--", "/abs/tool.sh", "--flag"}},
	}
	for _, c := range cases {
		t.Run(c.step, func(t *testing.T) {
			def := p.Step(c.step)
			if def == nil {
				t.Fatalf("no step %q", c.step)
			}
			sr := &stepRun{def: def, st: &StepState{ID: def.ID, Attempt: 3}}
			l := r.attemptExecutor(sr, 3, r.vars(sr, 3, nil), limitsOf(def, nil))
			if c.step == "plain" {
				if _, ok := l.(*localAttempt); !ok {
					t.Fatalf("a local step got executor %#v", l)
				}
				return
			}
			got := l.(processExecutor).wrap(c.argv)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got  %q\nwant %q", got, c.want)
			}
			if j, want := l.(*slurmAttempt).job, "faber-p-20260101T000000-abcd-"+c.step+"-a3"; j != want {
				t.Fatalf("job name %q, want %q", j, want)
			}
		})
	}
}

func TestSlurmTimeRounding(t *testing.T) {
	cases := []struct {
		timeout time.Duration
		want    string
	}{
		{0, ""},
		{time.Second, "--time=1"},
		{time.Minute, "--time=1"},
		{time.Minute + time.Millisecond, "--time=2"},
		{90 * time.Minute, "--time=90"},
		{25 * time.Hour, "--time=1500"},
	}
	for _, c := range cases {
		got := strings.Join(slurmOptions(nil, c.timeout), " ")
		if got != c.want {
			t.Errorf("timeout %v: %q, want %q", c.timeout, got, c.want)
		}
	}
}

// TestSlurmFinish maps what srun and slurmstepd write (recorded from Slurm
// 22.05) to the attempt's exit code and reason.
func TestSlurmFinish(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no scancel/squeue: nothing to clean up here
	argv := []string{"srun", "--job-name=j", "--chdir=/w", "--export=ALL", "--partition=nope", "--time=1", "--", "sh", "-c", "x"}
	cases := []struct {
		name     string
		o        outcome
		wantCode int
		want     string
	}{
		{"step's own failure", outcome{exitCode: 10, stderrTail: []byte("srun: error: vm: task 0: Exited with exit code 10\nrun 1 failed\n")}, 10, ""},
		{"success", outcome{stderrTail: []byte("")}, 0, ""},
		{"unknown partition", outcome{exitCode: 1, stderrTail: []byte(
			"srun: error: invalid partition specified: nope\nsrun: error: Unable to allocate resources: Invalid partition name specified\n")},
			1, "slurm rejected the job: invalid partition specified: nope; Unable to allocate resources: Invalid partition name specified (srun --partition=nope --time=1)"},
		{"bad option", outcome{exitCode: 255, stderrTail: []byte("srun: unrecognized option '--bogus'\nTry \"srun --help\" for more information\n")},
			255, "slurm rejected the job: unrecognized option '--bogus' (srun --partition=nope --time=1)"},
		{"bad gres", outcome{exitCode: 1, stderrTail: []byte("srun: error: Invalid generic resource (gres) specification\n")},
			1, "slurm rejected the job: Invalid generic resource (gres) specification (srun --partition=nope --time=1)"},
		{"time limit", outcome{exitCode: 143, stderrTail: []byte("still working\n" +
			"slurmstepd-vm: error: *** STEP 11.0 ON vm CANCELLED AT 2026-11-22T10:55:07 DUE TO TIME LIMIT ***\n" +
			"srun: Job step aborted: Waiting up to 7 seconds for job step to finish.\nsrun: error: vm: task 0: Terminated\n")},
			124, "slurm time limit reached (--time=1)"},
		{"job time limit", outcome{exitCode: 143, stderrTail: []byte(
			"slurmstepd: error: *** JOB 11 ON node7 CANCELLED AT 2026-11-22T10:55:07 DUE TO TIME LIMIT ***\n")},
			124, "slurm time limit reached (--time=1)"},
		{"preempted", outcome{exitCode: 143, stderrTail: []byte(
			"srun: Job step aborted: Waiting up to 7 seconds for job step to finish.\n" +
				"slurmstepd-vm: error: *** STEP 1.0 ON vm CANCELLED AT 2026-11-22T10:55:24 DUE TO PREEMPTION ***\nsrun: error: vm: task 0: Terminated\n")},
			143, "slurm preempted the job on vm"},
		{"node failure reported as success by srun", outcome{exitCode: 0, stderrTail: []byte("working\nsrun: error: Node failure on vm\nsrun: error: Node failure on vm\n")},
			1, "slurm: node failure on vm"},
		{"node failure by slurmstepd", outcome{exitCode: 137, stderrTail: []byte(
			"slurmstepd: error: *** JOB 4 ON n1 CANCELLED AT 2026-11-22T10:55:24 DUE TO NODE FAILURE, reason: Not responding ***\n")},
			137, "slurm: node failure on n1"},
		{"scancel from outside", outcome{exitCode: 143, stderrTail: []byte(
			"srun: Job step aborted: Waiting up to 7 seconds for job step to finish.\n" +
				"slurmstepd-vm: error: *** STEP 9.0 ON vm CANCELLED AT 2026-11-22T10:53:32 ***\nsrun: error: vm: task 0: Terminated\n")},
			143, "slurm canceled the job on vm (scancel or an administrator)"},
		{"srun terminated while queued", outcome{exitCode: 1, stderrTail: []byte("srun: job 7 queued and waiting for resources\n" +
			"srun: Job allocation 7 has been revoked\nsrun: Force Terminated JobId=7\n")},
			1, "slurm canceled the job while it was queued"},
		{"canceled while queued", outcome{exitCode: 1, stderrTail: []byte("srun: job 6 queued and waiting for resources\n" +
			"srun: Job has been cancelled\nsrun: error: Unable to allocate resources: Job/step already completing or completed\n")},
			1, "slurm canceled the job while it was queued"},
		{"faber's timeout while queued", outcome{exitCode: 124, timedOut: true, timeout: 2 * time.Second, stderrTail: []byte(
			"srun: Requested partition configuration not available now\nsrun: job 5 queued and waiting for resources\n" +
				"srun: Job allocation 5 has been revoked\nsrun: Force Terminated JobId=5\n")},
			124, "timed out after 2s while the Slurm job j waited in the queue (Requested partition configuration not available now)"},
		{"faber's timeout while running", outcome{exitCode: 124, timedOut: true, timeout: 2 * time.Second, stderrTail: []byte(
			"srun: job 5 queued and waiting for resources\nsrun: job 5 has been allocated resources\n" +
				"slurmstepd-vm: error: *** STEP 5.0 ON vm CANCELLED AT 2026-11-22T10:53:32 ***\n")},
			124, ""},
		{"faber stopped it", outcome{exitCode: 143, stoppedBy: reasonInterrupt, stderrTail: []byte(
			"slurmstepd-vm: error: *** STEP 5.0 ON vm CANCELLED AT 2026-11-22T10:53:32 ***\n")},
			143, ""},
		// srun exited before slurmstepd's line reached it (seen in CI): the
		// controller's job state says why.
		{"preempted, slurmstepd's line lost", outcome{exitCode: 143, stderrTail: []byte(
			"srun: Job step aborted: Waiting up to 7 seconds for job step to finish.\nsrun: error: vm: task 0: Terminated\n")},
			143, "slurm preempted the job on vm"},
		{"time limit, slurmstepd's line lost", outcome{exitCode: 143, stderrTail: []byte("srun: error: vm: task 0: Terminated\n")},
			124, "slurm time limit reached (--time=1)"},
		{"node failure, no line", outcome{exitCode: 137, stderrTail: []byte("working\n")},
			137, "slurm: node failure on vm"},
		{"scancel from outside, line lost", outcome{exitCode: 143, stderrTail: []byte("srun: error: vm: task 0: Terminated\n")},
			143, "slurm canceled the job on vm (scancel or an administrator)"},
		{"step's own failure, controller agrees", outcome{exitCode: 3, stderrTail: []byte("srun: error: vm: task 0: Exited with exit code 3\n")},
			3, ""},
		{"stderr's reason wins over the state", outcome{exitCode: 143, stderrTail: []byte(
			"slurmstepd-vm: error: *** STEP 9.0 ON vm CANCELLED AT 2026-11-22T10:53:32 DUE TO PREEMPTION ***\n")},
			143, "slurm preempted the job on vm"},
		{"queued then canceled: not asked", outcome{exitCode: 1, stderrTail: []byte("srun: job 6 queued and waiting for resources\n" +
			"srun: Job has been cancelled\n")},
			1, "slurm canceled the job while it was queued"},
		{"rejected: not asked", outcome{exitCode: 1, stderrTail: []byte("srun: error: invalid partition specified: nope\n")},
			1, "slurm rejected the job: invalid partition specified: nope (srun --partition=nope --time=1)"},
	}
	// What the controller says of the job (squeue's state), asked only when
	// stderr does not say; "" for the cases not listed.
	states := map[string]string{
		"faber stopped it":                      "CANCELLED",
		"preempted, slurmstepd's line lost":     "PREEMPTED",
		"time limit, slurmstepd's line lost":    "TIMEOUT",
		"node failure, no line":                 "NODE_FAIL",
		"scancel from outside, line lost":       "CANCELLED",
		"step's own failure, controller agrees": "FAILED",
		"stderr's reason wins over the state":   "CANCELLED",
		"queued then canceled: not asked":       "CANCELLED",
		"rejected: not asked":                   "FAILED",
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			state := func(job string) (string, string) {
				if job != "j" {
					t.Errorf("asked for job %q", job)
				}
				return states[c.name], "vm"
			}
			got := slurmFinish("j", argv, &o, state, nil)
			if got != c.want || o.exitCode != c.wantCode {
				t.Fatalf("got exit %d %q\nwant exit %d %q", o.exitCode, got, c.wantCode, c.want)
			}
		})
	}
}

func TestSlurmLine(t *testing.T) {
	for line, want := range map[string]bool{
		"srun: error: vm: task 0: Exited with exit code 1":                    true,
		"srun: Job step aborted: Waiting up to 7 seconds":                     true,
		"slurmstepd: error: *** JOB 4 ON n1 CANCELLED AT 2026-11-22T10:55:24": true,
		"slurmstepd-vm: error: *** STEP 1.0 ON vm CANCELLED AT x ***":         true,
		"Field 'name' is required":                                            false,
		" srun: indented is the step's":                                       false,
		"srunner: not srun":                                                   false,
	} {
		if got := slurmLine([]byte(line)); got != want {
			t.Errorf("slurmLine(%q) = %v, want %v", line, got, want)
		}
	}
}

func TestIsRunJob(t *testing.T) {
	run := "p-20260101T000000-abcd"
	for name, want := range map[string]bool{
		"faber-p-20260101T000000-abcd-build-a1":      true,
		"faber-p-20260101T000000-abcd-my-step-a12":   true,
		"faber-p-20260101T000000-abcd-build":         false,
		"faber-p-20260101T000000-abce-build-a1":      false,
		"faber-p-20260101T000000-abcd-build-ax":      false,
		"faber-p-20260101T000000-abcd--a1":           false,
		"other-p-20260101T000000-abcd-build-a1":      false,
		"faber-q-p-20260101T000000-abcd-build-a1":    false,
		"faber-p-20260101T000000-abcd-build-a1 more": false,
	} {
		if got := isRunJob(run, name); got != want {
			t.Errorf("isRunJob(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestUsedKinds: a resume asks an engine for leftovers only when a step
// (the end step included, a sub-plan step by its inherited executor) names
// it; this machine's leftovers are always ended.
func TestUsedKinds(t *testing.T) {
	for y, want := range map[string]string{
		"name: p\nsteps:\n  - id: a\n    run: x\n":                                             "local",
		"name: p\nexecutor: local\nsteps:\n  - id: a\n    run: x\n":                            "local",
		"name: p\nexecutor: slurm\nsteps:\n  - id: a\n    run: x\n":                            "local slurm",
		"name: p\nsteps:\n  - id: a\n    run: x\n  - id: b\n    executor: slurm\n    run: x\n": "local slurm",
		"name: p\nsteps:\n  - id: a\n    run: x\nend:\n  executor: slurm\n  run: x\n":          "local slurm",
	} {
		var names []string
		for _, k := range usedKinds(mustPlan(t, y)) {
			names = append(names, k.name())
		}
		if got := strings.Join(names, " "); got != want {
			t.Errorf("usedKinds(%q) = %q, want %q", y, got, want)
		}
	}
}

// TestCancelLeftoverSlurmJobsWithoutSlurm: on a machine without Slurm,
// resume must not wait or fail because of it.
func TestCancelLeftoverSlurmJobsWithoutSlurm(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	start := time.Now()
	if n := cancelLeftoverSlurmJobs("p-20260101T000000-abcd", nil); n != 0 {
		t.Fatalf("canceled %d jobs without squeue", n)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("took %v without squeue", d)
	}
}

// TestReattachableWithoutSlurm: a run with a recorded running batch job
// cannot be resumed while Slurm cannot be asked about it (the job may
// still run: a new attempt would run beside it); one without cannot hang
// or fail on it.
func TestReattachableWithoutSlurm(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	k := &slurmKind{}
	prior := &Prior{Steps: map[string]*StepState{
		"a": {ID: "a", Status: StatusInProgress, Attempt: 1, Job: "slurm:12"},
	}}
	if _, _, err := k.reattachable(prior); err == nil || !strings.Contains(err.Error(), "could run them twice") {
		t.Fatalf("err = %v, want a refusal", err)
	}
	prior.Steps["a"].Job = ""
	if steps, _, err := k.reattachable(prior); err != nil || steps != nil {
		t.Fatalf("no job recorded: steps %v, err %v", steps, err)
	}
}
