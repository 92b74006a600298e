//go:build linux

package main

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/internal/tmuxtest"
	"github.com/faber-run/faber/state"
)

// TestAttachResumeTmux: faber attach of a run whose faber was killed (-9)
// while a batch job of its step ran (the fake Slurm of fakeslurm_test.go,
// whose jobs outlive faber) asks whether to resume it. y resumes it in
// that terminal: the step is re-attached to its job (step_reattached, one
// attempt, no step_orphaned), the job's end is recorded and the run ends
// success, attach exiting 0 as resume does. n leaves the run as it was
// (not one event more) and attach exits 130, the run's code, as does
// Ctrl-C at the question; attach --resume then resumes it without asking.
func TestAttachResumeTmux(t *testing.T) {
	tm, bin, dir := tmuxtest.New(t, "attachresume", ".")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fakeBin, err := fakeSlurmEngine.bin(dir, self)
	if err != nil {
		t.Fatal(err)
	}

	// killed starts a run of a step whose batch job waits for the file
	// release, kills its faber with SIGKILL once the job's id is in the
	// store, and returns the run's directory, state dir, id and the
	// environment that puts the fake Slurm in front (as "VAR=value ...").
	killed := func(t *testing.T, name string) (work, stateDir, id, env string) {
		tm.SetT(t)
		work, stateDir = tmuxtest.PlanDir(t, dir, name, `name: jobs
executor: slurm
steps:
  - id: hold
    run: touch started; while [ ! -f release ]; do sleep 0.1; done; echo held
`)
		jobs := filepath.Join(work, "fakeslurm")
		if err := os.MkdirAll(jobs, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { endFakeJobs(jobs) })
		path := fakeBin + string(os.PathListSeparator) + os.Getenv("PATH")
		env = "PATH=" + path + " " + fakeSlurmEngine.envVar + "=" + jobs
		owner := osexec.Command(bin, "run", "plan.yaml", "--ui", "plain", "--state-dir", stateDir)
		owner.Dir = work
		owner.Env = append(os.Environ(), "PATH="+path, fakeSlurmEngine.envVar+"="+jobs, "CI=1", "NO_COLOR=1")
		if err := owner.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = owner.Wait(); close(done) }()
		deadline := time.Now().Add(30 * time.Second)
		for {
			if time.Now().After(deadline) {
				_ = owner.Process.Kill()
				t.Fatal("the step's batch job did not start within 30s")
			}
			if _, err := os.Stat(filepath.Join(work, "started")); err == nil {
				if ids, _ := state.RunIDs(stateDir); len(ids) == 1 {
					if v, err := run.View(stateDir, ids[0]); err == nil && len(v.Steps) == 1 && v.Steps[0].Job != "" {
						id = ids[0]
						break
					}
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = owner.Process.Kill()
		<-done
		waitOwnerGone(t, stateDir, id)
		return work, stateDir, id, env
	}
	events := func(t *testing.T, stateDir, id string) string {
		t.Helper()
		out, err := osexec.Command(bin, "events", id, "--json", "--state-dir", stateDir).Output()
		if err != nil {
			t.Fatalf("faber events: %v", err)
		}
		return string(out)
	}
	question := func(id string) string {
		return "resume run " + id + " now? it re-attaches to these jobs, records how they end, and goes on [y/N]"
	}
	// resumed checks, once the job was released, that attach's resume
	// ended the run success re-attached to the job, and exited 0.
	resumed := func(t *testing.T, name, work, stateDir, id string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(work, "release"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		tm.WaitFor(name, 30*time.Second, "the resumed run's summary", func(s string) bool {
			return strings.Contains(s, id+" success in ")
		})
		if code := tm.WaitExit(name, work, 15*time.Second); code != "0" {
			t.Errorf("faber attach exited %s after resuming, want 0 (resume's):\n%s", code, tm.Capture(name))
		}
		waitOwnerGone(t, stateDir, id)
		v, err := run.View(stateDir, id)
		if err != nil {
			t.Fatal(err)
		}
		if st := v.Steps[0]; st.Status != exec.StatusSuccess || st.Attempt != 1 {
			t.Errorf("step hold after attach's resume: %s, attempt %d; want success, attempt 1 (its job re-attached)", st.Status, st.Attempt)
		}
		ev := events(t, stateDir, id)
		if !strings.Contains(ev, `"type":"step_reattached"`) || strings.Contains(ev, `"type":"step_orphaned"`) {
			t.Errorf("the run's events lack step_reattached, or have step_orphaned:\n%s", ev)
		}
		if out, err := os.ReadFile(filepath.Join(state.RunDir(stateDir, id), "logs", "hold", "attempt-1.out")); err != nil || string(out) != "held\n" {
			t.Errorf("the job's log: %q, %v; want \"held\\n\"", out, err)
		}
	}

	t.Run("yes", func(t *testing.T) {
		work, stateDir, id, env := killed(t, "yes")
		tm.Start("yes", work, "env "+env+" "+bin+" attach "+id+" --state-dir "+stateDir, 120, 40)
		s := tm.WaitFor("yes", 15*time.Second, "the question", func(s string) bool { return strings.Contains(s, question(id)) })
		if !strings.Contains(s, "batch jobs ran, which may run on: hold (slurm:") {
			t.Errorf("attach does not name the job before asking:\n%s", s)
		}
		tm.Keys("yes", "y", "Enter")
		tm.WaitFor("yes", 15*time.Second, "the resumed run's live view", func(s string) bool {
			return strings.Contains(s, "hold") && strings.Contains(s, "in_progress") && !strings.Contains(s, question(id))
		})
		resumed(t, "yes", work, stateDir, id)
	})

	t.Run("no then --resume", func(t *testing.T) {
		work, stateDir, id, env := killed(t, "no")
		before := events(t, stateDir, id)
		tm.Start("no", work, "env "+env+" "+bin+" attach "+id+" --state-dir "+stateDir, 120, 40)
		tm.WaitFor("no", 15*time.Second, "the question", func(s string) bool { return strings.Contains(s, question(id)) })
		tm.Keys("no", "n", "Enter")
		if code := tm.WaitExit("no", work, 15*time.Second); code != "130" {
			t.Errorf("faber attach answered n exited %s, want 130 (the run's):\n%s", code, tm.Capture("no"))
		}
		if after := events(t, stateDir, id); after != before {
			t.Errorf("answering n changed the run's events:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		if o, err := state.OwnerOf(stateDir, id); err != nil || o.Alive {
			t.Errorf("after n the run has an owner (%+v, %v); nothing should run it", o, err)
		}
		// Ctrl-C at the question is a no too.
		tm.Start("ctrlc", work, "env "+env+" "+bin+" attach "+id+" --state-dir "+stateDir, 120, 40)
		tm.WaitFor("ctrlc", 15*time.Second, "the question", func(s string) bool { return strings.Contains(s, question(id)) })
		tm.Keys("ctrlc", "C-c")
		if code := tm.WaitExit("ctrlc", work, 15*time.Second); code != "130" {
			t.Errorf("faber attach given Ctrl-C at the question exited %s, want 130 (the run's):\n%s", code, tm.Capture("ctrlc"))
		}
		if after := events(t, stateDir, id); after != before {
			t.Errorf("Ctrl-C at the question changed the run's events:\nbefore:\n%s\nafter:\n%s", before, after)
		}

		tm.Start("flag", work, "env "+env+" "+bin+" attach --resume "+id+" --state-dir "+stateDir, 120, 40)
		tm.WaitFor("flag", 15*time.Second, "the resumed run's live view", func(s string) bool {
			return strings.Contains(s, "hold") && strings.Contains(s, "in_progress") && strings.Contains(s, "q leave")
		})
		if s := tm.Capture("flag"); strings.Contains(s, "[y/N]") {
			t.Errorf("attach --resume asked:\n%s", s)
		}
		resumed(t, "flag", work, stateDir, id)
	})
}
