//go:build linux

package main

import (
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A fake Slurm for the contract test: sbatch, squeue, scancel and sacct,
// played by this test binary (symlinks named so, see TestMain), so that
// random plans run with executor: slurm in batch mode against the model of
// the contract without a cluster. Jobs run on this machine at once (never
// PENDING), each watched by a monitor process of its own that records how
// it ended, so a job outlives the faber that submitted it, as on a real
// cluster. State lives in $FABER_FAKE_SLURM: a directory per job id with
// name, pid (the job's process group) and, once it ended, status (a wait
// status) and canceled (scancel without --signal).

// fakeSlurmCommands are the commands the fake plays.
var fakeSlurmCommands = []string{"sbatch", "squeue", "scancel", "sacct", "fakeslurm-job"}

// fakeSlurmBin makes a directory of symlinks to this test binary, one per
// fake command, to put first in PATH.
func fakeSlurmBin(dir, self string) (string, error) {
	bin := filepath.Join(dir, "fakeslurm-bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return "", err
	}
	for _, c := range fakeSlurmCommands {
		if err := os.Symlink(self, filepath.Join(bin, c)); err != nil {
			return "", err
		}
	}
	return bin, nil
}

// fakeSlurmMain runs this test binary as a fake Slurm command when it was
// started as one (in the contract test, FABER_FAKE_SLURM set).
func fakeSlurmMain() {
	if os.Getenv("FABER_FAKE_SLURM") == "" {
		return
	}
	name := filepath.Base(os.Args[0])
	for _, c := range fakeSlurmCommands {
		if c == name {
			os.Exit(fakeSlurm(name, os.Args[1:]))
		}
	}
}

// fakeSlurm runs fake command name (args without it); it returns the exit
// code.
func fakeSlurm(name string, args []string) int {
	dir := os.Getenv("FABER_FAKE_SLURM")
	switch name {
	case "sbatch":
		return fakeSbatch(dir, args)
	case "squeue":
		return fakeSqueue(dir, args)
	case "scancel":
		return fakeScancel(dir, args)
	case "sacct":
		return 0 // no accounting
	case "fakeslurm-job":
		return fakeJob(dir, args)
	}
	return 2
}

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
	var id int
	for id = 1; ; id++ {
		err := os.Mkdir(filepath.Join(dir, strconv.Itoa(id)), 0o755)
		if err == nil {
			break
		}
		if !os.IsExist(err) {
			fmt.Fprintln(os.Stderr, "sbatch: error:", err)
			return 1
		}
	}
	// --array=0-<k-1>: tasks <id>_0 ... <id>_<k-1>, each a job of its own
	// (the array's own directory only holds its id).
	tasks := []string{strconv.Itoa(id)}
	if a, ok := opt["--array"]; ok {
		_, last, _ := strings.Cut(a, "-")
		k, _ := strconv.Atoi(last)
		tasks = tasks[:0]
		for t := 0; t <= k; t++ {
			tasks = append(tasks, fmt.Sprintf("%d_%d", id, t))
		}
		_ = os.WriteFile(filepath.Join(dir, strconv.Itoa(id), "array"), nil, 0o644)
	}
	for _, task := range tasks {
		if !fakeStart(dir, task, opt, args[i:]) {
			return 1
		}
	}
	fmt.Println(id)
	return 0
}

// fakeStart starts job (or array task) id of sbatch's options opt and
// script and arguments argv; it reports whether it could.
func fakeStart(dir, id string, opt map[string]string, argv []string) bool {
	jd := filepath.Join(dir, id)
	_ = os.MkdirAll(jd, 0o755)
	_ = os.WriteFile(filepath.Join(jd, "name"), []byte(opt["--job-name"]), 0o644)
	// The monitor: its own session, so that it outlives faber; it starts
	// the job and records its end.
	self, _ := os.Executable()
	mon := osexec.Command(self, append([]string{id, opt["--chdir"], opt["--output"], opt["--error"]}, argv...)...)
	mon.Args[0] = "fakeslurm-job"
	// The monitor carries no FABER_RUN_ID: resume's scan for a dead
	// faber's processes must not take it for one of them.
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "FABER_RUN_ID=") {
			mon.Env = append(mon.Env, e)
		}
	}
	// The job's environment is sbatch's (--export=ALL), in a file: in the
	// monitor's own it would carry FABER_RUN_ID.
	_ = os.WriteFile(filepath.Join(jd, "env"), []byte(strings.Join(os.Environ(), "\x00")), 0o600)
	mon.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := mon.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "sbatch: error:", err)
		return false
	}
	// The job is listed once its process group is known.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, err := os.Stat(filepath.Join(jd, "pid")); err == nil {
			break
		}
	}
	_ = mon.Process.Release()
	return true
}

// fakeJob is the monitor: args are id, chdir, output, error, script, argv.
func fakeJob(dir string, args []string) int {
	id, chdir, out, errPath := args[0], args[1], args[2], args[3]
	jd := filepath.Join(dir, id)
	cmd := osexec.Command(args[4], args[5:]...)
	cmd.Dir = chdir
	env, _ := os.ReadFile(filepath.Join(jd, "env"))
	cmd.Env = append(strings.Split(string(env), "\x00"), "SLURM_JOB_ID="+id)
	if arr, task, ok := strings.Cut(id, "_"); ok {
		cmd.Env = append(cmd.Env, "SLURM_ARRAY_JOB_ID="+arr, "SLURM_ARRAY_TASK_ID="+task)
	}
	o, _ := os.OpenFile(out, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	e, _ := os.OpenFile(errPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	cmd.Stdout, cmd.Stderr = o, e
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	status := 127 << 8
	if err := cmd.Start(); err == nil {
		_ = os.WriteFile(filepath.Join(jd, "pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
		_ = cmd.Wait()
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			status = int(ws.Signal())
		} else {
			status = ws.ExitStatus() << 8
		}
		// As Slurm does at a job's end: nothing of it outlives it.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	} else {
		_ = os.WriteFile(filepath.Join(jd, "pid"), []byte("0"), 0o644)
	}
	tmp := filepath.Join(jd, "status.tmp")
	_ = os.WriteFile(tmp, []byte(strconv.Itoa(status)), 0o644)
	_ = os.Rename(tmp, filepath.Join(jd, "status"))
	return 0
}

type fakeJobState struct {
	id, name, state string
	ws              int
}

func fakeJobs(dir string) []fakeJobState {
	ents, _ := os.ReadDir(dir)
	var jobs []fakeJobState
	for _, e := range ents {
		arr, _, _ := strings.Cut(e.Name(), "_")
		if _, err := strconv.Atoi(arr); err != nil {
			continue
		}
		jd := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(jd, "array")); err == nil {
			continue // an array's id: its tasks are its jobs
		}
		name, _ := os.ReadFile(filepath.Join(jd, "name"))
		j := fakeJobState{id: e.Name(), name: string(name), state: "RUNNING"}
		if b, err := os.ReadFile(filepath.Join(jd, "status")); err == nil {
			j.ws, _ = strconv.Atoi(string(b))
			switch _, err := os.Stat(filepath.Join(jd, "canceled")); {
			case err == nil:
				j.state = "CANCELLED"
			case j.ws == 0:
				j.state = "COMPLETED"
			default:
				j.state = "FAILED"
			}
		}
		jobs = append(jobs, j)
	}
	sort.Slice(jobs, func(a, b int) bool { return jobs[a].id < jobs[b].id })
	return jobs
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
		if _, err := os.Stat(filepath.Join(jd, "status")); err == nil {
			continue // ended already
		}
		b, err := os.ReadFile(filepath.Join(jd, "pid"))
		if err != nil {
			continue
		}
		pid, _ := strconv.Atoi(string(b))
		if pid <= 0 {
			continue
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

// endFakeJobs kills what is left of the fake Slurm's jobs (a case that
// ended with a job running, as a killed faber's last session can).
func endFakeJobs(dir string) {
	for _, j := range fakeJobs(dir) {
		if j.state != "RUNNING" {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(dir, j.id, "pid")); err == nil {
			if pid, _ := strconv.Atoi(string(b)); pid > 0 {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
	}
}
