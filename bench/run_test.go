//go:build unix

// Package bench holds bench/run.sh, which compares the faber binary with the
// process-spawn floor, and its test. The in-process benchmark of the runner
// (BenchmarkRunner) is in package main, next to the store adapter it uses.
package bench

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"testing"
)

// TestRunScript runs bench/run.sh on tiny plans, so that the script cannot rot
// unnoticed: it must build faber, run every section and print every table.
// The figures themselves are not checked; only their shape.
func TestRunScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds faber and runs the benchmark script")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		t.Skip("no GNU time at /usr/bin/time (bench/run.sh installs it; a test does not)")
	}
	cmd := exec.Command("bash", "run.sh")
	cmd.Env = append(os.Environ(), "N=20", "CHAINS=5", "CHATTY=1", "HUGE=200", "SYNC_CHAIN=5", "J=4", "CHAIN=5", "REPS=1", "SCALE=10 30", "LIST=50", "TMPFS=", "STATE_BASE="+t.TempDir(), "TMPDISK="+t.TempDir(), "SETTLE_S=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bench/run.sh: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.Bytes(), out)
	}
	for _, want := range []string{
		`(?m)^\| 20 independent, --jobs 4 \(floor: xargs -P 4\) \| faber --ui plain \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|`,
		`(?m)^\| chain of 5 \(floor: shell loop\) \| faber --ui json \| [0-9.]+ \|`,
		`(?m)^\| 1\. chain of 5 ≤ 1\.3× a shell loop \(state on disk\) \| [0-9.]+× \| (PASS|FAIL) \|$`,
		`(?m)^\| 1\. \(context\) a one-step run, state on disk \(read-ahead ([0-9]+ KiB|none|unknown)\): faber's fixed cost per run \| [0-9.]+ ms \| info \|$`,
		`(?m)^### State dir .*; read-ahead ([0-9]+ KiB|none|unknown)\)$`,
		`(?m)^### State dir on disk, in the repository \(.*; creating a file took [0-9]+ µs before the rounds; read-ahead`,
		`(?m)^\| 1\. \(context\) creating a file in the state dir on disk before the chains \(waited 0 s for recent deletions\) \| [0-9]+ µs \| info \|$`,
		`(?m)^\| 2\. a step printing 1 MB, --ui plain ≤ 1\.3× .* \| [0-9.]+× \| (PASS|FAIL) \|$`,
		`(?m)^\| 4\. 200 no-op steps: peak RSS ≤ 400 MB \| [0-9]+ MB \| (PASS|FAIL) \|$`,
		`(?m)^\| 4\. memory per step ≤ 3 KB \(RSS growth from 20 to 200 steps; median of 1 rounds, -?[0-9.]+–-?[0-9.]+\) \| -?[0-9.]+ KB \| (PASS|FAIL) \|$`,
		`(?m)^\| 5\. .*\| [0-9.]+× \| (PASS|FAIL) \|$`,
		`(?m)^\| 30 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|$`,
		`(?m)^\| faber resume \(29 done\): the last step in_progress after \| -?[0-9]+ ms \|$`,
		`(?m)^list 50 runs: [0-9.]+ s \(goal ≤ 0\.3 s\) (PASS|FAIL)$`,
		`(?m)^list --limit 20: [0-9]+ ms \(goal ≤ 50 ms\) (PASS|FAIL)$`,
		// one column per place of the state dir (TMPDISK is skipped on tmpfs)
		`(?m)^\| state ≤ 2 KB per step attempt \(allocated, logs aside\) \|( [0-9]+ B, (met|\*\*missed\*\*) \|){1,2}$`,
	} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("output does not match %s:\n%s", want, out)
		}
	}
	if bytes.Contains(out, []byte("nan")) {
		t.Errorf("a figure is missing (nan):\n%s", out)
	}
}

// TestFanoutScript runs bench/fanout.sh on a tiny fan-out: the shape of
// its table, not its figures.
func TestFanoutScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds faber and runs the benchmark script")
	}
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		t.Skip("no GNU time at /usr/bin/time (bench/fanout.sh installs it; a test does not)")
	}
	cmd := exec.Command("bash", "fanout.sh")
	cmd.Env = append(os.Environ(), "ITEMS=20", "J=4", "REPS=2", "STATE_BASE="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bench/fanout.sh: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.Bytes(), out)
	}
	for _, want := range []string{
		`(?m)^\| foreach: \{range: \[1, 20\]\}, run: "true" \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9]+ \|$`,
		`(?m)^\| time ≤ 1.3× the spawn floor \| [0-9.]+× \| (PASS|FAIL) \|$`,
		`(?m)^\| peak RSS ≤ 150 MB \| [0-9]+ MB \| (PASS|FAIL) \|$`,
	} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("no match for %s in:\n%s", want, out)
		}
	}
}

// TestImportScript runs bench/import.sh on tiny workflows: the shape of
// its tables, not their figures.
func TestImportScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds faber and runs the benchmark script")
	}
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		t.Skip("no GNU time at /usr/bin/time (bench/import.sh installs it; a test does not)")
	}
	cmd := exec.Command("bash", "import.sh")
	cmd.Env = append(os.Environ(), "JOBS=20 200", "REPS=1", "STATE_BASE="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bench/import.sh: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.Bytes(), out)
	}
	for _, want := range []string{
		`(?m)^\| 200 \| faber import torc w.yaml -o plan.yaml \| [0-9.]+ \| [0-9.]+ \| [0-9]+ \|$`,
		`(?m)^\| 20 \| faber validate w.yaml \(the Torc file\) \| [0-9.]+ \| [0-9.]+ \| [0-9]+ \|$`,
		`(?m)^\| 200 \| faber run plan.yaml --dry-run \| [0-9.]+ \| [0-9.]+ \| [0-9]+ \|$`,
		`(?m)^\| faber import torc w.yaml -o plan.yaml: 200 jobs, wall under 20 s \| [0-9.]+ s \| (PASS|FAIL) \|$`,
		`(?m)^\| faber run plan.yaml --dry-run: CPU for 200 jobs ≤ 1.5 × 10 × for 20 \(linear: 10×\) \| [0-9.]+× \| (PASS|FAIL) \|$`,
	} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("no match for %s in:\n%s", want, out)
		}
	}
	if bytes.Contains(out, []byte("nan")) {
		t.Errorf("a figure is missing (nan):\n%s", out)
	}
}

// TestCacheScript runs bench/cache.sh on a few megabytes: the shape of its
// table, not its figures.
func TestCacheScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds faber and runs the benchmark script")
	}
	if _, err := exec.LookPath("sha256sum"); err != nil {
		t.Skip("no sha256sum")
	}
	cmd := exec.Command("bash", "cache.sh")
	cmd.Env = append(os.Environ(), "SIZE_MB=4", "FILES=3", "REPS=2", "STATE_BASE="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bench/cache.sh: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.Bytes(), out)
	}
	for _, want := range []string{
		`(?m)^\| inputs: 4 MB in 3 files \| sha256sum ms \| faber ms \(cache hit\) \| ratio \|$`,
		`(?m)^\| content \(SHA-256\) \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|$`,
		`(?m)^\| a cache hit ≤ 1.5× sha256sum of its inputs \| [0-9.]+× \| (PASS|FAIL) \|$`,
	} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("no match for %s in:\n%s", want, out)
		}
	}
	if bytes.Contains(out, []byte("nan")) {
		t.Errorf("a figure is missing (nan):\n%s", out)
	}
}

// TestGoals28Script runs bench/goals28.sh on tiny sizes, every goal: the
// shape of its tables (each goal's rows, PASS or FAIL, the load average at
// its start and end), not its figures.
func TestGoals28Script(t *testing.T) {
	if testing.Short() {
		t.Skip("builds faber and runs the benchmark script")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		t.Skip("no GNU time at /usr/bin/time (bench/goals28.sh installs it; a test does not)")
	}
	cmd := exec.Command("bash", "goals28.sh")
	cmd.Env = append(os.Environ(), "N=30", "SMALL=10", "LIST=20", "REPS=2", "PAIRS=2", "CHAINS=5 10", "SETTLE_S=0", "STATE_BASE="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bench/goals28.sh: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.Bytes(), out)
	}
	const result = ` \| (PASS|FAIL) \|$`
	for _, want := range []string{
		`(?m)^[0-9]+ CPUs, .*; N=30 SMALL=10 LIST=20 J=8 REPS=2 PAIRS=2; load average at the start [0-9.]+ [0-9.]+ [0-9.]+\. `,
		`(?m)^### 1\. A fully cached fan-out of 30 items, one input file each$`,
		`(?m)^Load average at the start: [0-9.]+ [0-9.]+ [0-9.]+; state dirs on [a-z0-9]+ \(read-ahead ([0-9]+ KiB|none|unknown)\), creating a file took [0-9]+ µs before the rounds\.$`,
		`(?m)^\| items a cached run's output says were cached \(fewest of 4 runs\) \| 30 of 30 \| PASS \|$`,
		`(?m)^\| 1\. cached run ≤ 3× ` + "`cat`" + ` of its inputs \(4 pairs, [0-9.]+–[0-9.]+\) \| [0-9.]+×` + result,
		`(?m)^\| 1\. cached run: peak RSS ≤ 100 MB \([0-9]+–[0-9]+\) \| [0-9]+ MB` + result,
		`(?m)^\| 1\. first run: peak RSS ≤ 150 MB \([0-9]+–[0-9]+\) \| [0-9]+ MB` + result,
		`(?m)^### 2\. A fan-out of 30 items without inputs next to the same 30 steps listed$`,
		`(?m)^\| 2\. foreach of 30 items, no inputs: peak RSS ≤ the steps listed \(median of 2 rounds' ratios, [0-9.]+–[0-9.]+\) \| [0-9.]+×` + result,
		`(?m)^\| 2\. foreach of 30 items: peak RSS ≤ 80 MB \([0-9]+–[0-9]+\) \| [0-9]+ MB` + result,
		`(?m)^\| 2\. memory per item: \(peak at 30 − peak at 10\) / 20 items \(median of 2 rounds, -?[0-9.]+–-?[0-9.]+\) \| -?[0-9.]+ KB \| info \|$`,
		`(?m)^\| 3\. a one-step run ≤ 2× ` + "`faber version`" + ` \(2 pairs, [0-9.]+–[0-9.]+\) \| [0-9.]+×` + result,
		`(?m)^\| 3\. chain of 5 ≤ 1\.2× ` + regexp.QuoteMeta("`for i in $(seq 5); do sh -c true; done`") + `, state on [a-z0-9]+ \(40 pairs, [0-9.]+–[0-9.]+; faber [0-9.]+ ms\) \| [0-9.]+×` + result,
		`(?m)^\| 3\. chain of 10 ≤ 1\.2× .* \(20 pairs, .*\) \| [0-9.]+×` + result,
		`(?m)^\| the floor under it: ` + "`true`" + ` started 5 times by Go's os/exec as faber starts it, nothing recorded \(bench/spawnfloor; 40 pairs, [0-9.]+–[0-9.]+; [0-9.]+ ms\) \| [0-9.]+× \| info \|$`,
		`(?m)^\| the floor under it: ` + "`true`" + ` started 10 times .* \(bench/spawnfloor; 20 pairs, .*\) \| [0-9.]+× \| info \|$`,
		`(?m)^\| 4\. ` + "`faber status RUN`" + ` of a finished 30-step run ≤ 50 ms \(2 runs, [0-9.]+–[0-9.]+; [0-9.]+× ` + "`faber version`" + `\) \| [0-9.]+ ms` + result,
		`(?m)^\| 4\. ` + "`faber status --json RUN`" + ` of it ≤ 50 ms \([0-9.]+–[0-9.]+; [0-9.]+× ` + "`faber version`" + `\) \| [0-9.]+ ms` + result,
		`(?m)^\| 4\. ` + "`faber list`" + ` of 20 runs ≤ 0\.15 s \(2 runs, [0-9.]+–[0-9.]+; [0-9.]+× ` + "`faber version`" + `\) \| [0-9.]+ s` + result,
	} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("output does not match %s:\n%s", want, out)
		}
	}
	// Each goal's table starts and ends with the load average.
	for _, want := range []string{`(?m)^Load average at the start: `, `(?m)^Load average at the end: [0-9.]+ [0-9.]+ [0-9.]+\.$`} {
		if n := len(regexp.MustCompile(want).FindAll(out, -1)); n != 4 {
			t.Errorf("%d lines match %s, want one per goal (4):\n%s", n, want, out)
		}
	}
	if bytes.Contains(out, []byte("nan")) {
		t.Errorf("a figure is missing (nan):\n%s", out)
	}
}

// TestSettle: settle (bench/lib.sh) waits while creating a file costs more
// than SETTLE_US, for at most SETTLE_S, each probe in a fresh directory,
// and says how long it waited and what the cost was at first.
func TestSettle(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	script := `source lib.sh
settle "$1"
echo "cost=$SETTLE_COST waited=$SETTLE_WAITED"
echo "$SETTLED"
ls -d "$1"/probe.* | wc -l`
	for _, tc := range []struct {
		env  []string
		want []string
	}{
		// Never slow enough: no wait, one probe.
		{[]string{"SETTLE_US=1000000", "SETTLE_S=60"}, []string{`(?m)^cost=[0-9]+ waited=0$`, `(?m)^creating a file took [0-9]+ µs before the rounds$`, `(?m)^1$`}},
		// Always too slow: waits SETTLE_S in steps, probing after each.
		{[]string{"SETTLE_US=-1", "SETTLE_S=2", "SETTLE_STEP=1"}, []string{`(?m)^cost=[0-9]+ waited=2$`, `(?m)^creating a file took [0-9]+ µs before the rounds, after waiting 2 s for recent deletions to settle \([0-9]+ µs at first\)$`, `(?m)^3$`}},
	} {
		sub := t.TempDir()
		cmd := exec.Command("bash", "-c", script, "bash", sub)
		cmd.Env = append(os.Environ(), tc.env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", tc.env, err, out)
		}
		for _, w := range tc.want {
			if !regexp.MustCompile(w).Match(out) {
				t.Errorf("%v: output does not match %s:\n%s", tc.env, w, out)
			}
		}
	}
}

// TestBatchArrayScript runs bench/batch_array.sh on a tiny fan-out for
// each batch engine whose test cluster is up (FABER_SLURM=1, FABER_SGE=1,
// as for the cluster scripts): the shape of its table, and that the
// fan-out was one submission, with and without max_parallel (then one
// array with the engine's throttle).
func TestBatchArrayScript(t *testing.T) {
	for _, e := range []struct{ engine, env, submit, status, maxpar string }{
		{"slurm", "FABER_SLURM", "sbatch", "squeue", ""},
		{"slurm", "FABER_SLURM", "sbatch", "squeue", "2"},
		{"sge", "FABER_SGE", "qsub", "qstat", ""},
		{"sge", "FABER_SGE", "qsub", "qstat", "2"},
	} {
		t.Run(e.engine+e.maxpar, func(t *testing.T) {
			if testing.Short() || os.Getenv(e.env) != "1" {
				t.Skipf("needs a %s test cluster (scripts/%s-cluster.sh start) and %s=1", e.engine, e.engine, e.env)
			}
			if _, err := os.Stat("/usr/bin/time"); err != nil {
				t.Skip("no GNU time at /usr/bin/time (bench/batch_array.sh installs it; a test does not)")
			}
			cmd := exec.Command("bash", "batch_array.sh")
			cmd.Env = append(os.Environ(), "ENGINE="+e.engine, "ITEMS=4", "REPS=1", "MAXPAR="+e.maxpar, "STATE_BASE="+t.TempDir())
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("bench/batch_array.sh: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.Bytes(), out)
			}
			for _, want := range []string{
				`(?m)^\| ` + e.submit + ` submissions by faber \| 1 \| PASS \(a few per fan-out\) \|$`,
				`(?m)^\| ` + e.status + ` calls by faber \(one per tick, all jobs\) \| [0-9]+ \([0-9.]+ per s\) \| (PASS|FAIL) .*\|$`,
				`(?m)^\| ratio \(median of rounds\) \| [0-9.]+× \| (PASS|FAIL) \(≤ 1.2×\) \|$`,
				`(?m)^\| faber's peak RSS \| [0-9]+ MB \| \|$`,
			} {
				if !regexp.MustCompile(want).Match(out) {
					t.Errorf("no match for %s in:\n%s", want, out)
				}
			}
		})
	}
}

// TestResourcesScript runs bench/resources.sh on a few steps of 0.05 s in
// every order: the shape of its table (the lower bound stated, each
// order's rows, the oversubscription row), not its figures, except that
// every attempt started and nothing was oversubscribed, which holds at any
// size.
func TestResourcesScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds faber and runs the benchmark script")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("no jq (bench/resources.sh sweeps the events with it)")
	}
	cmd := exec.Command("bash", "resources.sh")
	cmd.Env = append(os.Environ(), "N1=6", "D1=0.05", "N2=2", "D2=0.05", "NM=3", "DM=0.05", "NG=2", "DG=0.05", "REPS=2", "STATE_BASE="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bench/resources.sh: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.Bytes(), out)
	}
	const result = ` \| (PASS|FAIL) \|$`
	for _, want := range []string{
		`(?m)^[0-9]+ CPUs, .*; REPS=2; load average at the start: [0-9.]+ [0-9.]+ [0-9.]+\.$`,
		`(?m)^Capacity: ` + "`resources: \\{cpus: 4, memory: 16G, gpus: 2\\}`" + `, .*Plan: one parallel phase of 13 ` + "`sleep`" + ` steps: 6 × .*`,
		`(?m)^Lower bound: max\(CPU-seconds / CPUs = 0\.750 / 4 = 0\.188, memory GiB-seconds / memory = 0\.900 / 16 = 0\.056, GPU-seconds / GPUs = 0\.050, pool-seconds / pool size = 0\.050, the longest step = 0\.05\) = \*\*0\.188 s\*\*\.$`,
		`(?m)^\| first \| makespan, first start to last end \(2 rounds, [0-9.]+–[0-9.]+ s; attempts started: 13 of 13\) \| [0-9.]+ s \| info \|$`,
		`(?m)^\| mixed \| makespan ≤ 1\.15× the lower bound \(0\.188 s; median of 2 rounds, [0-9.]+–[0-9.]+\) \| [0-9.]+×` + result,
		`(?m)^\| last \| largest sums held at once: CPUs / memory / GPUs / pool db \(capacity 4 / 16 GiB / 2 / 2; most of 2 rounds\) \| [0-9]+ / [0-9.]+ GiB / [0-9]+ / [0-9]+ \| PASS \|$`,
		`(?m)^\| all \| makespan / lower bound ≤ 1\.15×, median of every run \(6 runs, [0-9.]+–[0-9.]+\) \| [0-9.]+×` + result,
		`(?m)^\| all \| oversubscription: .* \| 0, 0 \| PASS \|$`,
		`(?m)^Load average at the end: [0-9.]+ [0-9.]+ [0-9.]+\.$`,
	} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("output does not match %s:\n%s", want, out)
		}
	}
	if n := len(regexp.MustCompile(`(?m)^\| (first|mixed|last) \| `).FindAll(out, -1)); n != 9 {
		t.Errorf("%d rows for the orders, want 3 for each of 3:\n%s", n, out)
	}
	if bytes.Contains(out, []byte("nan")) {
		t.Errorf("a figure is missing (nan):\n%s", out)
	}
}
