//go:build unix

package main

// BenchmarkRunner measures faber's orchestration overhead in-process: it runs
// exec.Runner over a real state.Store, with the store adapter and the
// --ui json renderer that `faber run` uses, so that `go test -cpuprofile` (or
// -trace) sees faber's own costs without the CLI around them. bench/run.sh
// compares the faber binary with the process-spawn floor.
//
//	go test -run '^$' -bench Runner/par -benchtime 1x -cpuprofile cpu.out -o faber.test .
//	go tool pprof -top -cum faber.test cpu.out
//
// The benchmarks spawn thousands of processes, so `go test ./...` does not run
// them (benchmarks run only with -bench).

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/state"
	"github.com/faber-run/faber/tui"
)

// parPlan is N independent `true` steps in one parallel phase.
func parPlan(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: par%d\nphases:\n  - name: p\n    parallel: true\n    steps:\n", n)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "      - {id: s%d, run: \"true\"}\n", i)
	}
	return b.String()
}

// chainPlan is a chain of N `true` steps (top-level steps are sequential).
func chainPlan(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: chain%d\nsteps:\n", n)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - {id: s%d, run: \"true\"}\n", i)
	}
	return b.String()
}

// fanPlan is one foreach: step of N `true` items.
func fanPlan(n int) string {
	return fmt.Sprintf("name: fan%d\nsteps:\n  - id: t\n    foreach: {range: [1, %d]}\n    run: \"true\"\n", n, n)
}

// runOnce parses plan text, creates a run in a fresh state dir under base and
// runs it to the end with the given number of jobs.
func runOnce(tb testing.TB, base, text string, jobs int) time.Duration {
	tb.Helper()
	dir, err := os.MkdirTemp(base, "state")
	if err != nil {
		tb.Fatal(err)
	}
	// Removed at the end, not between runs: see run.sh's fresh_dir.
	tb.Cleanup(func() { os.RemoveAll(dir) })
	file := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	plan, err := spec.Parse(file, []byte(text), spec.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	now := time.Now()
	runID := state.NewRunID(dir, plan.Name, now)
	st, err := state.Create(dir, state.Meta{RunID: runID, Plan: plan.Name, PlanFile: file, StartedAt: now}, []byte(text),
		state.Options{Sync: benchSync()})
	if err != nil {
		tb.Fatal(err)
	}
	sink := tui.NewJSON(io.Discard) // what --ui json renders, in its own goroutine
	r := &exec.Runner{
		Plan:   plan,
		RunID:  runID,
		RunDir: st.Dir(),
		Store:  run.Recorder{Store: st},
		Sink:   sink,
		Jobs:   jobs,
	}
	status, err := r.Run(context.Background(), nil)
	sink.Close()
	if err != nil || status != exec.RunSuccess {
		tb.Fatalf("run: %s, %v", status, err)
	}
	if path := os.Getenv("BENCH_HEAPPROFILE"); path != "" {
		// What is live at the end of the run, the store still open: the
		// runner's and the store's steady state.
		writeHeapProfile(tb, path)
		runtime.KeepAlive(r)
	}
	if err := st.Close(); err != nil {
		tb.Fatal(err)
	}
	return time.Since(start)
}

// writeHeapProfile writes the live heap after a GC to path.
func writeHeapProfile(tb testing.TB, path string) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		tb.Fatal(err)
	}
}

// cpuTime is this process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// envInt reads a positive integer from the environment, else def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// BenchmarkRunner runs the benchmark plans in-process: par (BENCH_N
// independent steps, default 2000, --jobs BENCH_J, default 8) and chain
// (BENCH_CHAIN steps, default 300), and fan (a foreach: of BENCH_N items,
// --jobs BENCH_J). ns/op is one whole run; ms/step is the
// wall time per step, cpu-ms/step faber's own CPU per step. BENCH_DIR picks
// the file system the state dir is on; BENCH_HEAPPROFILE names a file for the
// live heap at the end of each run.
func BenchmarkRunner(b *testing.B) {
	base := os.Getenv("BENCH_DIR")
	if base == "" {
		base = b.TempDir()
	}
	n, j, chain := envInt("BENCH_N", 2000), envInt("BENCH_J", 8), envInt("BENCH_CHAIN", 300)
	cases := []struct {
		name  string
		text  string
		steps int
		jobs  int
	}{
		{"par", parPlan(n), n, j},
		{"chain", chainPlan(chain), chain, 1},
		{"fan", fanPlan(n), n + 1, j},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var total time.Duration
			cpu0 := cpuTime()
			for range b.N {
				total += runOnce(b, base, c.text, c.jobs)
			}
			steps := float64(b.N * c.steps)
			b.ReportMetric(float64(total.Microseconds())/1000/steps, "ms/step")
			// faber's own CPU (user+system, children excluded): what the
			// orchestration costs, less sensitive to the machine's load than
			// wall time.
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/steps, "cpu-ms/step")
		})
	}
}

// benchSync is FABER_SYNC as faber reads it (an unknown value counts as no).
func benchSync() bool {
	on, _ := parseSync(os.Getenv("FABER_SYNC"))
	return on
}
