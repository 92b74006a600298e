//go:build linux

package exec

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// groupRecordDelay: an attempt's process group is recorded once the attempt
// has run this long. Resume finds younger leftovers by FABER_RUN_ID here.
const groupRecordDelay = 20 * time.Millisecond

// killRunProcesses terminates every process whose environment says it
// belongs to run runID (FABER_RUN_ID), and its process group: the leftovers
// of a faber that died. Step attempts, handlers and recovery scripts all
// carry FABER_RUN_ID, and children inherit it, so this finds processes whose
// group was never recorded too. A process whose environment holds one of
// spare ("SLURM_JOB_ID=12": a batch job that resume re-attaches to, which a
// single-node cluster runs here) is left alone. It returns how many
// processes it signalled.
func killRunProcesses(runID string, spare []string) int {
	marker := []byte("FABER_RUN_ID=" + runID + "\x00")
	spared := func(env []byte) bool {
		for _, s := range spare {
			m := []byte(s + "\x00")
			if bytes.HasPrefix(env, m) || bytes.Contains(env, append([]byte{0}, m...)) {
				return true
			}
		}
		return false
	}
	// Never this process or its ancestors: an agent started by `faber
	// recover` carries the run id and may itself call faber.
	skip := map[int]bool{}
	for pid := os.Getpid(); pid > 1 && !skip[pid]; pid = parentOf(pid) {
		skip[pid] = true
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || skip[pid] {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		if (bytes.HasPrefix(env, marker) || bytes.Contains(env, append([]byte{0}, marker...))) && !spared(env) {
			pids = append(pids, pid)
		}
	}
	if len(pids) == 0 {
		return 0
	}
	for _, pid := range pids {
		if pg, err := syscall.Getpgid(pid); err == nil && pg != syscall.Getpgrp() {
			_ = syscall.Kill(-pg, syscall.SIGTERM)
		}
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		alive := false
		for _, pid := range pids {
			if syscall.Kill(pid, 0) == nil && !zombie(pid) {
				alive = true
			}
		}
		if !alive {
			return len(pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, pid := range pids {
		if pg, err := syscall.Getpgid(pid); err == nil && pg != syscall.Getpgrp() {
			_ = syscall.Kill(-pg, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(pids)
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}

// parentOf returns the parent pid of pid, or 0.
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(string(f[1]))
	return ppid
}
