package exec

import (
	"os"
	osexec "os/exec"
	"sort"
	"strings"
	"testing"
	"time"
)

// needSlurm skips a test unless FABER_SLURM=1 and a cluster answers
// (scripts/slurm-cluster.sh start); asked for but not answering fails.
func needSlurm(t *testing.T) {
	t.Helper()
	if os.Getenv("FABER_SLURM") != "1" {
		t.Skip("needs a Slurm cluster: run scripts/slurm-cluster.sh start and set FABER_SLURM=1")
	}
	if out, err := osexec.Command("sinfo").CombinedOutput(); err != nil {
		t.Fatalf("FABER_SLURM=1 but sinfo fails: %v\n%s", err, out)
	}
}

// TestCancelLeftoverSlurmJobs: the jobs of a dead run (here batch jobs, which
// no srun holds, as after a kill -9 of faber and of its srun) are canceled
// by name and gone from the queue when it returns; other jobs are left alone.
func TestCancelLeftoverSlurmJobs(t *testing.T) {
	needSlurm(t)
	run := "leftover-20260101T000000-beef"
	names := []string{
		slurmJobName(run, "build", 1),
		slurmJobName(run, "test-all", 3),
		"faber-other-20260101T000000-abcd-build-a1", // another run
	}
	for _, n := range names {
		out, err := osexec.Command("sbatch", "--parsable", "--job-name="+n, "--output=/dev/null",
			"--chdir="+t.TempDir(), "--wrap=sleep 300").CombinedOutput()
		if err != nil {
			t.Fatalf("sbatch: %v\n%s", err, out)
		}
		id := strings.TrimSpace(string(out))
		t.Cleanup(func() { _ = osexec.Command("scancel", id).Run() })
	}
	queued := func() []string {
		jobs, err := slurmJobs()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range jobs {
			for _, want := range names {
				if n == want {
					got = append(got, n)
				}
			}
		}
		sort.Strings(got)
		return got
	}
	if got := queued(); len(got) != 3 {
		t.Fatalf("queued %q, want the 3 test jobs", got)
	}
	start := time.Now()
	if n := cancelLeftoverSlurmJobs(run, nil); n != 2 {
		t.Fatalf("canceled %d jobs, want 2", n)
	}
	if got := queued(); len(got) != 1 || got[0] != names[2] {
		t.Fatalf("after cancel, queued %q, want only %s", got, names[2])
	}
	t.Logf("canceled and gone in %v", time.Since(start))
	if n := cancelLeftoverSlurmJobs(run, nil); n != 0 {
		t.Fatalf("second call canceled %d jobs, want 0", n)
	}
}
