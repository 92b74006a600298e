//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A fake Slurm for the contract test: sbatch, squeue, scancel and sacct,
// played by this test binary (fakebatch_test.go has what it shares with
// the fake Grid Engine), so that random plans run with executor: slurm in
// batch mode against the model of the contract without a cluster. Jobs run
// on this machine at once (never PENDING). State lives in
// $FABER_FAKE_SLURM; a job ended by scancel without --signal is
// CANCELLED.

var fakeSlurmEngine = &fakeEngine{
	executor: "slurm", title: "Slurm", envVar: "FABER_FAKE_SLURM",
	cmds: map[string]func(string, []string) int{
		"sbatch":  fakeSbatch,
		"squeue":  fakeSqueue,
		"scancel": fakeScancel,
		"sacct":   func(string, []string) int { return 0 }, // no accounting
	},
}

// fakeSlurmMain runs this test binary as a fake Slurm command when it was
// started as one (in the contract test, FABER_FAKE_SLURM set).
func fakeSlurmMain() { fakeSlurmEngine.main() }

func fakeSbatch(dir string, args []string) int {
	opt := map[string]string{}
	i := 0
	for ; i < len(args) && strings.HasPrefix(args[i], "--"); i++ {
		k, v, _ := strings.Cut(args[i], "=")
		opt[k] = v
	}
	if i >= len(args) {
		fmt.Fprintln(os.Stderr, "sbatch: error: no script")
		return 1
	}
	if p := opt["--partition"]; p != "" {
		fmt.Fprintln(os.Stderr, "sbatch: error: Batch job submission failed: Invalid partition name specified")
		return 1
	}
	id, err := fakeNewJob(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sbatch: error:", err)
		return 1
	}
	// --array=0-<k-1>: tasks <id>_0 ... <id>_<k-1>, each a job of its own
	// (the array's own directory only holds its id).
	// --array=0-<k-1>%M: at most M of them run at once (fakeSlot).
	tasks := []string{strconv.Itoa(id)}
	throttle := ""
	if a, ok := opt["--array"]; ok {
		a, m, _ := strings.Cut(a, "%")
		if m != "" {
			throttle = filepath.Join(dir, strconv.Itoa(id)) + " " + m
		}
		_, last, _ := strings.Cut(a, "-")
		k, _ := strconv.Atoi(last)
		tasks = tasks[:0]
		for t := 0; t <= k; t++ {
			tasks = append(tasks, fmt.Sprintf("%d_%d", id, t))
		}
		_ = os.WriteFile(filepath.Join(dir, strconv.Itoa(id), "array"), nil, 0o644)
	}
	for _, task := range tasks {
		if !fakeStart(dir, task, opt, args[i:], throttle) {
			return 1
		}
	}
	fmt.Println(id)
	return 0
}

// fakeStart starts job (or array task) id of sbatch's options opt and
// script and arguments argv; it reports whether it could.
func fakeStart(dir, id string, opt map[string]string, argv []string, throttle string) bool {
	// The job's environment is sbatch's (--export=ALL).
	env := append(os.Environ(), "SLURM_JOB_ID="+id)
	if arr, task, ok := strings.Cut(id, "_"); ok {
		env = append(env, "SLURM_ARRAY_JOB_ID="+arr, "SLURM_ARRAY_TASK_ID="+task)
	}
	if err := fakeStartJob(filepath.Join(dir, id), opt["--job-name"], env, opt["--chdir"], opt["--output"], opt["--error"], argv, 0, throttle); err != nil {
		fmt.Fprintln(os.Stderr, "sbatch: error:", err)
		return false
	}
	return true
}

func fakeSqueue(dir string, args []string) int {
	all, format := false, ""
	for _, a := range args {
		switch {
		case a == "--states=all":
			all = true
		case strings.HasPrefix(a, "--Format="), strings.HasPrefix(a, "--format="):
			format = a
		}
	}
	for _, j := range fakeJobs(dir) {
		if !all && j.state != "RUNNING" {
			continue
		}
		switch {
		case strings.HasPrefix(format, "--Format="):
			fmt.Printf("%s|%s|%d|localhost|%s\n", j.id, j.state, j.ws, j.id)
		case format == "--format=%i %j":
			fmt.Printf("%s %s\n", j.id, j.name)
		default:
			fmt.Printf("%s %s\n", j.id, j.state)
		}
	}
	return 0
}

func fakeScancel(dir string, args []string) int {
	sig := ""
	var ids []string
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "--signal="):
			sig = strings.TrimPrefix(a, "--signal=")
		case strings.HasPrefix(a, "-"):
		default:
			ids = append(ids, a)
		}
	}
	for _, id := range ids {
		jd := filepath.Join(dir, id)
		pid := fakeJobPid(dir, id)
		if pid == 0 {
			continue // ended already
		}
		switch sig {
		case "KILL":
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		case "TERM":
			_ = syscall.Kill(-pid, syscall.SIGTERM)
		default:
			// A cancel: SIGTERM, then SIGKILL a moment later (Slurm's
			// KillWait), the job recorded CANCELLED.
			_ = os.WriteFile(filepath.Join(jd, "canceled"), nil, 0o644)
			_ = syscall.Kill(-pid, syscall.SIGTERM)
			time.Sleep(50 * time.Millisecond)
			if _, err := os.Stat(filepath.Join(jd, "status")); err != nil {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
	}
	return 0
}
