//go:build linux

package main

import (
	"fmt"
	"os"
	osexec "os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The fake batch systems of the contract test (fakeslurm_test.go,
// fakesge_test.go) share this: each is played by this test binary, its
// commands symlinks named so (first in PATH) and dispatched by argv[0]
// when the engine's variable names its state directory. Jobs run on this
// machine, at once or (the fake Grid Engine's) after a wait in the queue,
// each watched by a monitor process of its own, in a session of its own,
// that records how it ended, so a job outlives the faber that submitted
// it, as on a real cluster. The state
// is a directory per job id (an array task's: <id>_<task> on Slurm,
// <id>.<task> on Grid Engine; the array's own holds a file "array"), with
// name, env (the job's environment), monitor (the monitor's pid), queued
// (how long it waits in the queue) and waiting while it does, pid (the
// job's process group) once it runs, usage and status (a wait status) once
// it ended, canceled when scancel or qdel ended it, withdrawn when qdel
// took it out of the queue.

// fakeEngine is a fake batch system.
type fakeEngine struct {
	executor string // the plan's executor:
	title    string
	envVar   string // its state directory: set, this binary plays its commands
	cmds     map[string]func(dir string, args []string) int
}

// fakeMonitorName is argv[0] of a job's monitor.
const fakeMonitorName = "fakebatch-job"

// fakeNotifyTime is how long a job that got the notify signal
// (fakeMonitor) has before its SIGKILL: the queue's notify time.
const fakeNotifyTime = 1500 * time.Millisecond

// main runs this test binary as one of e's commands, or as a job's
// monitor, when it was started as one (e.envVar set).
func (e *fakeEngine) main() {
	dir := os.Getenv(e.envVar)
	if dir == "" {
		return
	}
	name := filepath.Base(os.Args[0])
	if name == fakeMonitorName {
		os.Exit(fakeMonitor(os.Args[1:]))
	}
	if cmd, ok := e.cmds[name]; ok {
		os.Exit(cmd(dir, os.Args[1:]))
	}
}

// bin makes a directory of symlinks to this test binary, one per fake
// command, to put first in PATH.
func (e *fakeEngine) bin(dir, self string) (string, error) {
	bin := filepath.Join(dir, "fake"+e.executor+"-bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return "", err
	}
	for c := range e.cmds {
		if err := os.Symlink(self, filepath.Join(bin, c)); err != nil {
			return "", err
		}
	}
	return bin, nil
}

// fakeNewJob takes the next free job number of state directory dir and
// makes its directory.
func fakeNewJob(dir string) (int, error) {
	for id := 1; ; id++ {
		err := os.Mkdir(filepath.Join(dir, strconv.Itoa(id)), 0o755)
		if err == nil {
			return id, nil
		}
		if !os.IsExist(err) {
			return 0, err
		}
	}
}

// fakeStartJob starts the job of directory jd: job name name, environment
// env, working directory chdir, output and error files out and errPath,
// command argv, after queued in the queue (0: at once). It returns once
// the job runs or waits.
//
// throttle, for a task of an array with the engine's throttle (sbatch
// --array=…%M, qsub -tc M), is "<slots dir> <M>": the task waits in the
// queue until it holds one of M slot files there (fakeSlot).
func fakeStartJob(jd, name string, env []string, chdir, out, errPath string, argv []string, queued time.Duration, throttle string) error {
	_ = os.MkdirAll(jd, 0o755)
	if throttle != "" {
		_ = os.WriteFile(filepath.Join(jd, "throttle"), []byte(throttle), 0o644)
	}
	_ = os.WriteFile(filepath.Join(jd, "name"), []byte(name), 0o644)
	// The job's environment, in a file: in the monitor's own it would
	// carry the submitter's FABER_RUN_ID.
	_ = os.WriteFile(filepath.Join(jd, "env"), []byte(strings.Join(env, "\x00")), 0o600)
	if queued > 0 {
		_ = os.WriteFile(filepath.Join(jd, "queued"), []byte(queued.String()), 0o644)
	}
	// The monitor: its own session, so that it outlives faber; it starts
	// the job and records its end.
	self, _ := os.Executable()
	mon := osexec.Command(self, append([]string{jd, chdir, out, errPath}, argv...)...)
	mon.Args[0] = fakeMonitorName
	// The monitor carries no FABER_RUN_ID: resume's scan for a dead
	// faber's processes must not take it for one of them.
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "FABER_RUN_ID=") {
			mon.Env = append(mon.Env, e)
		}
	}
	mon.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := mon.Start(); err != nil {
		return err
	}
	_ = os.WriteFile(filepath.Join(jd, "monitor"), []byte(strconv.Itoa(mon.Process.Pid)), 0o644)
	// The job is listed once its process group is known (or the monitor
	// is ready to withdraw it from the queue).
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, err := os.Stat(filepath.Join(jd, "pid")); err == nil {
			break
		}
		if _, err := os.Stat(filepath.Join(jd, "waiting")); err == nil {
			break
		}
	}
	_ = mon.Process.Release()
	return nil
}

// fakeMonitor is the monitor: args are the job's directory, working
// directory, output, error, then its command. SIGUSR2 to the monitor is
// the notify of a deleted job: SIGUSR2 to the job's process group, then
// SIGKILL fakeNotifyTime later; a job still in the queue (the file queued
// says how long it waits there) is withdrawn instead: it leaves no record.
func fakeMonitor(args []string) int {
	jd, chdir, out, errPath := args[0], args[1], args[2], args[3]
	notify := make(chan os.Signal, 1)
	signal.Notify(notify, syscall.SIGUSR2)
	if b, err := os.ReadFile(filepath.Join(jd, "queued")); err == nil {
		wait, _ := time.ParseDuration(string(b))
		_ = os.WriteFile(filepath.Join(jd, "waiting"), nil, 0o644)
		select {
		case <-notify:
			_ = os.WriteFile(filepath.Join(jd, "withdrawn"), nil, 0o644)
			return 0
		case <-time.After(wait):
		}
	}
	if b, err := os.ReadFile(filepath.Join(jd, "throttle")); err == nil {
		_ = os.WriteFile(filepath.Join(jd, "waiting"), nil, 0o644)
		slot, ok := fakeSlot(string(b), notify)
		if !ok {
			_ = os.WriteFile(filepath.Join(jd, "withdrawn"), nil, 0o644)
			return 0
		}
		defer os.Remove(slot)
	}
	cmd := osexec.Command(args[4], args[5:]...)
	cmd.Dir = chdir
	env, _ := os.ReadFile(filepath.Join(jd, "env"))
	cmd.Env = strings.Split(string(env), "\x00")
	o, _ := os.OpenFile(out, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	e, _ := os.OpenFile(errPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	cmd.Stdout, cmd.Stderr = o, e
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	status := 127 << 8
	if err := cmd.Start(); err == nil {
		pid := cmd.Process.Pid
		_ = os.WriteFile(filepath.Join(jd, "pid"), []byte(strconv.Itoa(pid)), 0o644)
		go func() {
			<-notify
			_ = syscall.Kill(-pid, syscall.SIGUSR2)
			time.Sleep(fakeNotifyTime)
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}()
		_ = cmd.Wait()
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			status = int(ws.Signal())
		} else {
			status = ws.ExitStatus() << 8
		}
		// As a batch system does at a job's end: nothing of it outlives
		// it.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			usage := fmt.Sprintf("%d %d %d", time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()), ru.Maxrss)
			_ = os.WriteFile(filepath.Join(jd, "usage"), []byte(usage), 0o644)
		}
	} else {
		_ = os.WriteFile(filepath.Join(jd, "pid"), []byte("0"), 0o644)
	}
	tmp := filepath.Join(jd, "status.tmp")
	_ = os.WriteFile(tmp, []byte(strconv.Itoa(status)), 0o644)
	_ = os.Rename(tmp, filepath.Join(jd, "status"))
	return 0
}

// fakeSlot waits until it holds one of an array's throttle slots (spec
// "<dir> <M>": the files slot-0 … slot-<M-1> in dir, each made by the task
// that holds it), and returns the slot's file; ok is false when the task
// was deleted (notify) while it waited.
func fakeSlot(spec string, notify <-chan os.Signal) (slot string, ok bool) {
	dir, m, _ := strings.Cut(spec, " ")
	max, _ := strconv.Atoi(m)
	for {
		for i := 0; i < max; i++ {
			slot = filepath.Join(dir, "slot-"+strconv.Itoa(i))
			if f, err := os.OpenFile(slot, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err == nil {
				f.Close()
				return slot, true
			}
		}
		select {
		case <-notify:
			return "", false
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// fakeJobState is a job as the fakes' commands list it.
type fakeJobState struct {
	id, name, state string // state: RUNNING, COMPLETED, FAILED, CANCELLED
	ws              int    // once it ended
}

// fakeJobs lists the jobs (array tasks, not arrays) of state directory
// dir, by id.
func fakeJobs(dir string) []fakeJobState {
	ents, _ := os.ReadDir(dir)
	var jobs []fakeJobState
	for _, e := range ents {
		arr, _, _ := strings.Cut(strings.ReplaceAll(e.Name(), "_", "."), ".")
		if _, err := strconv.Atoi(arr); err != nil {
			continue
		}
		jd := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(jd, "array")); err == nil {
			continue // an array's id: its tasks are its jobs
		}
		if _, err := os.Stat(filepath.Join(jd, "withdrawn")); err == nil {
			continue // deleted while it waited: gone
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

// fakeJobPid is the process group of running job id of state directory
// dir, or 0.
func fakeJobPid(dir, id string) int {
	jd := filepath.Join(dir, id)
	if _, err := os.Stat(filepath.Join(jd, "status")); err == nil {
		return 0 // ended already
	}
	b, err := os.ReadFile(filepath.Join(jd, "pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(string(b))
	return max(pid, 0)
}

// fakeJobWaits reports whether job id of state directory dir waits in the
// queue.
func fakeJobWaits(dir, id string) bool {
	_, err := os.Stat(filepath.Join(dir, id, "pid"))
	return err != nil
}

// endFakeJobs kills what is left of a fake's jobs (a case that ended
// with a job running, as a killed faber's last session can), and the
// monitors of those still waiting.
func endFakeJobs(dir string) {
	for _, j := range fakeJobs(dir) {
		if j.state != "RUNNING" {
			continue
		}
		if pid := fakeJobPid(dir, j.id); pid > 0 {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		} else if fakeJobWaits(dir, j.id) {
			if b, err := os.ReadFile(filepath.Join(dir, j.id, "monitor")); err == nil {
				if pid, _ := strconv.Atoi(string(b)); pid > 0 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	}
}
