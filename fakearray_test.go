//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestArrayThrottle: the items of a fan-out under max_parallel that start
// together are one array whose throttle is the engine's (sbatch
// --array=…%M, qsub -tc M), not max_parallel jobs at a time; a retried
// item is a job of its own that starts only while fewer than max_parallel
// run; never more than max_parallel run. It runs against the fake
// engines (fakebatch_test.go), which hold an array's throttle as the real
// ones do; the Slurm and Grid Engine scripts (slurm_throttle,
// sge_throttle) check the same on the clusters.
func TestArrayThrottle(t *testing.T) {
	if testing.Short() {
		t.Skip("runs fake batch jobs: not in -short mode")
	}
	for _, engine := range []*fakeEngine{fakeSlurmEngine, fakeSgeEngine} {
		t.Run(engine.executor, func(t *testing.T) {
			t.Parallel()
			// Item 3 fails its first attempt: its retry comes while
			// the array's other tasks run.
			dir, jobs, subs, out := runFakeArray(t, engine, func(dir string) string {
				return "name: throttle\nexecutor: " + engine.executor + "\nsteps:\n" +
					"  - id: fan\n    foreach: {range: [1, 6]}\n    max_parallel: 2\n    result_handling: {on_failure: retry}\n    run: |\n" +
					"      mkdir -p " + dir + "/running && touch " + dir + "/running/{item}\n" +
					"      [ \"$(ls " + dir + "/running | wc -l)\" -le 2 ] || touch " + dir + "/overflow\n" +
					"      sleep 0.3\n" +
					"      [ \"$(ls " + dir + "/running | wc -l)\" -le 2 ] || touch " + dir + "/overflow\n" +
					"      rm " + dir + "/running/{item}\n" +
					"      if [ {item} = 3 ] && mkdir " + dir + "/failed3 2>/dev/null; then exit 1; fi\n" +
					"      touch " + dir + "/ran-{item}\n" +
					"  - id: after\n    needs: [fan]\n    executor: local\n    run: echo after\n"
			}, "--jobs", "8")
			for i := 1; i <= 6; i++ {
				if _, err := os.Stat(filepath.Join(dir, "ran-"+strconv.Itoa(i))); err != nil {
					t.Errorf("item %d did not run to its end\n%s", i, out)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "overflow")); err == nil {
				t.Errorf("more than max_parallel (2) items ran at once\n%s", out)
			}
			// Submissions: the six items as one array, throttled at 2;
			// item 3's retry as a job of its own.
			if len(subs) != 2 {
				t.Errorf("submissions = %v, want the array and the retry's job\n%s", subs, out)
			}
			sep := map[string]string{"slurm": "_0", "sge": ".1"}[engine.executor]
			b, err := os.ReadFile(filepath.Join(jobs, "1"+sep, "throttle"))
			if err != nil || !strings.HasSuffix(string(b), " 2") {
				t.Errorf("the array's first task: throttle %q (%v), want the engine's throttle of 2", b, err)
			}
			if _, err := os.Stat(filepath.Join(jobs, "2", "throttle")); err == nil {
				t.Errorf("the retry's job has a throttle: it is no array")
			}
		})
	}
}

// TestArrayPassTakesHeld: the items max_parallel held back are ready
// items of the next array pass (README "Fan-outs as job arrays": every
// ready item jobs lets start), not let go one at a time. Items 1 and 2 are
// the first array (jobs: 2, throttle 1); items 3 and 4 wait for
// max_parallel while item 2 runs, and start together when it ends: one
// array, throttled at 1.
func TestArrayPassTakesHeld(t *testing.T) {
	if testing.Short() {
		t.Skip("runs fake batch jobs: not in -short mode")
	}
	for _, engine := range []*fakeEngine{fakeSlurmEngine, fakeSgeEngine} {
		t.Run(engine.executor, func(t *testing.T) {
			t.Parallel()
			_, jobs, subs, out := runFakeArray(t, engine, func(string) string {
				return "name: held\nexecutor: " + engine.executor + "\njobs: 2\nsteps:\n" +
					"  - id: fan\n    foreach: {range: [1, 4]}\n    max_parallel: 1\n    run: sleep 0.2\n"
			})
			if len(subs) != 2 {
				t.Errorf("submissions = %v, want two arrays of two items\n%s", subs, out)
			}
			sep := map[string][2]string{"slurm": {"_0", "_1"}, "sge": {".1", ".2"}}[engine.executor]
			for _, task := range sep {
				b, err := os.ReadFile(filepath.Join(jobs, "2"+task, "throttle"))
				if err != nil || !strings.HasSuffix(string(b), " 1") {
					t.Errorf("the second array's task %s: throttle %q (%v), want the engine's throttle of 1\n%s", task, b, err, out)
				}
			}
		})
	}
}

// runFakeArray runs the plan that plan makes of its directory on the fake
// engine, with args after faber run plan.yaml, and fails unless the run
// succeeds. It returns the directory, the engine's job directory, the
// submissions' job ids (an array's is its one id) and faber's output.
func runFakeArray(t *testing.T, engine *fakeEngine, plan func(dir string) string, args ...string) (dir, jobs string, subs []string, out []byte) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(plan(dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	bin, err := engine.bin(dir, self)
	if err != nil {
		t.Fatal(err)
	}
	jobs = filepath.Join(dir, "fake"+engine.executor)
	if err := os.MkdirAll(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { endFakeJobs(jobs) })
	cmd := faberCmd(self, dir, filepath.Join(dir, ".faber"), append([]string{"run", "plan.yaml", "--ui", "plain"}, args...)...)
	cmd.Env = append(cmd.Env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), engine.envVar+"="+jobs)
	out, err = cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("faber run: %v\n%s", err, out)
	}
	ents, err := os.ReadDir(jobs)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			subs = append(subs, e.Name())
		}
	}
	return dir, jobs, subs, out
}
