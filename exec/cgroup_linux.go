//go:build linux

package exec

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroup is the cgroup of one attempt with limits (README "Resources"). It
// is made only for an attempt with memory: or cpus: set that runs on this
// machine: cgroup v2 where the memory controller is delegated to faber's
// own cgroup's children (the process starts inside it: clone3
// CLONE_INTO_CGROUP), else cgroup v1's memory hierarchy (the leader is
// moved in right after it starts, before its shell can fork). Anything else
// (no cgroup file system, no permission) gives no cgroup: the limit is then
// not enforced, only recorded.
type cgroup struct {
	dir string
	v2  bool
	fd  *os.File // v2: the directory, for CLONE_INTO_CGROUP
}

// cgroupRoots are where the cgroup file systems are looked for; tests
// cannot change them, and nothing else needs to.
const (
	cgroupV2Root = "/sys/fs/cgroup"
	cgroupV2Hyb  = "/sys/fs/cgroup/unified"
	cgroupV1Mem  = "/sys/fs/cgroup/memory"
)

// newCgroup makes the cgroup for an attempt named name (unique in this
// process) with lim, or returns nil with the reason it cannot.
func newCgroup(name string, lim limits) (*cgroup, error) {
	own := ownCgroups()
	var errs []error
	for _, root := range []string{cgroupV2Root, cgroupV2Hyb} {
		cg, err := newCgroupV2(root, own[""], name, lim)
		if cg != nil {
			return cg, nil
		}
		errs = append(errs, err)
	}
	cg, err := newCgroupV1(own["memory"], name, lim)
	if cg != nil {
		return cg, nil
	}
	return nil, errors.Join(append(errs, err)...)
}

// ownCgroups reads /proc/self/cgroup: controller list -> path ("" is v2's).
func ownCgroups() map[string]string {
	out := map[string]string{}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return out
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.SplitN(l, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			out[c] = f[2]
		}
	}
	return out
}

func newCgroupV2(root, own, name string, lim limits) (*cgroup, error) {
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err != nil {
		return nil, err
	}
	// A child of faber's own cgroup, else of the root (a container sees
	// its own cgroup as the root).
	var dir string
	for _, base := range []string{filepath.Join(root, own), root} {
		ctl, err := os.ReadFile(filepath.Join(base, "cgroup.subtree_control"))
		if err != nil || !hasWord(ctl, "memory") {
			continue
		}
		dir = filepath.Join(base, name)
		break
	}
	if dir == "" {
		return nil, errors.New(root + ": the memory controller is not delegated")
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	cg := &cgroup{dir: dir, v2: true}
	if err := cg.set(lim); err != nil {
		cg.remove()
		return nil, err
	}
	fd, err := os.Open(dir)
	if err != nil {
		cg.remove()
		return nil, err
	}
	cg.fd = fd
	return cg, nil
}

func newCgroupV1(own, name string, lim limits) (*cgroup, error) {
	if lim.memory <= 0 {
		return nil, errors.New("cgroup v1: only memory limits are supported")
	}
	var dir string
	for _, base := range []string{filepath.Join(cgroupV1Mem, own), cgroupV1Mem} {
		if _, err := os.Stat(filepath.Join(base, "memory.limit_in_bytes")); err == nil {
			dir = filepath.Join(base, name)
			break
		}
	}
	if dir == "" {
		return nil, errors.New("no cgroup v1 memory hierarchy")
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	cg := &cgroup{dir: dir}
	if err := cg.set(lim); err != nil {
		cg.remove()
		return nil, err
	}
	return cg, nil
}

// set writes the limits.
func (cg *cgroup) set(lim limits) error {
	w := func(file, v string) error { return os.WriteFile(filepath.Join(cg.dir, file), []byte(v), 0o644) }
	mem := strconv.FormatInt(lim.memory, 10)
	if cg.v2 {
		if lim.memory > 0 {
			if err := w("memory.max", mem); err != nil {
				return err
			}
			_ = w("memory.swap.max", "0") // an attempt over its limit is killed, not swapped
		}
		if lim.cpus > 0 {
			// cpu.max is there only when the cpu controller is delegated
			// too: without it the CPU limit is recorded, not enforced.
			_ = w("cpu.max", strconv.Itoa(lim.cpus*100000)+" 100000")
		}
		return nil
	}
	if err := w("memory.limit_in_bytes", mem); err != nil {
		return err
	}
	_ = w("memory.memsw.limit_in_bytes", mem)
	return nil
}

// prepare makes cmd start inside a v2 cgroup.
func (cg *cgroup) prepare(cmd *osexec.Cmd) {
	if cg == nil || !cg.v2 {
		return
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = int(cg.fd.Fd())
}

// wrap makes a v1 cgroup's process move itself in before it runs argv:
// moving a process from outside takes the kernel long enough (a v1
// migration waits for RCU) that a short shell would fork its children, or
// end, first. One exec of /bin/sh, no extra process; v2 needs none (the
// process starts inside).
func (cg *cgroup) wrap(argv []string) []string {
	if cg == nil || cg.v2 {
		return argv
	}
	procs := filepath.Join(cg.dir, "cgroup.procs")
	return append([]string{"/bin/sh", "-c", `echo $$ > "$0" 2>/dev/null; exec "$@"`, procs}, argv...)
}

// measure reads what the attempt used: peak memory, CPU time (v2) and
// whether the kernel killed a process of it for memory.
func (cg *cgroup) measure(u *usage) {
	if cg == nil {
		return
	}
	read := func(f string) []byte { b, _ := os.ReadFile(filepath.Join(cg.dir, f)); return b }
	if cg.v2 {
		// memory.peak is Linux 5.19 and later; older ones keep rusage's.
		if p, err := strconv.ParseInt(string(bytes.TrimSpace(read("memory.peak"))), 10, 64); err == nil {
			u.peakRSS = p
		}
		stat := keyed(read("cpu.stat"))
		if v, ok := stat["user_usec"]; ok {
			u.user = time.Duration(v) * time.Microsecond
			u.sys = time.Duration(stat["system_usec"]) * time.Microsecond
		}
		u.oomKilled = keyed(read("memory.events"))["oom_kill"] > 0
	} else {
		if p, err := strconv.ParseInt(string(bytes.TrimSpace(read("memory.max_usage_in_bytes"))), 10, 64); err == nil {
			u.peakRSS = p
		}
		u.oomKilled = keyed(read("memory.oom_control"))["oom_kill"] > 0
	}
	u.source = SourceCgroup
}

// remove deletes the cgroup once its processes are gone (after the group's
// SIGKILL they leave it within moments; a process that escaped the group
// may keep it, and then it is left behind).
func (cg *cgroup) remove() {
	if cg == nil {
		return
	}
	if cg.fd != nil {
		cg.fd.Close()
	}
	for i := 0; i < 100; i++ {
		err := os.Remove(cg.dir)
		if err == nil || errors.Is(err, os.ErrNotExist) || !errors.Is(err, syscall.EBUSY) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// keyed parses "key value" lines (cpu.stat, memory.events).
func keyed(b []byte) map[string]int64 {
	out := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out
}

func hasWord(b []byte, w string) bool {
	for _, f := range strings.Fields(string(b)) {
		if f == w {
			return true
		}
	}
	return false
}

// CgroupProbe reports whether faber can give an attempt a memory limit on
// this machine: it makes a probe cgroup with one, and removes it.
func CgroupProbe() error {
	cg, err := newCgroup("faber-probe-"+strconv.Itoa(os.Getpid()), limits{memory: 64 << 20})
	if err != nil {
		return err
	}
	cg.remove()
	return nil
}

// cgroupParents are the directories newCgroup makes attempt cgroups in:
// faber's own cgroup and the root, of each cgroup file system it uses.
func cgroupParents() []string {
	own := ownCgroups()
	var out []string
	add := func(d string) {
		for _, x := range out {
			if x == d {
				return
			}
		}
		out = append(out, d)
	}
	for _, root := range []string{cgroupV2Root, cgroupV2Hyb} {
		add(filepath.Join(root, own[""]))
		add(root)
	}
	add(filepath.Join(cgroupV1Mem, own["memory"]))
	add(cgroupV1Mem)
	return out
}

// leftoverCgroups lists the attempt cgroups (faber-<run-id>-<step>-a<N>)
// in the directories faber makes them in, by run id.
func leftoverCgroups() map[string][]string {
	out := map[string][]string{}
	for _, parent := range cgroupParents() {
		ents, err := os.ReadDir(parent)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), "faber-") {
				continue
			}
			if id := cgroupRunID(e.Name()); id != "" {
				out[id] = append(out[id], filepath.Join(parent, e.Name()))
			}
		}
	}
	return out
}

// removeRunCgroups removes the cgroups that attempts of run runID left
// behind when their faber died (README "Resources"): whatever still runs
// in one is killed first. Call it only as the run's owner, before any
// attempt starts. It returns the cgroups it could not remove.
func removeRunCgroups(runID string) []string {
	var left []string
	for _, dir := range leftoverCgroups()[runID] {
		killCgroup(dir)
		if !removeCgroupDir(dir, 2*time.Second) {
			left = append(left, dir)
		}
	}
	return left
}

// RemoveDeadCgroups removes the empty cgroups of attempts of the runs for
// which dead says their owner died (a new run's sweep of its state dir:
// processes still running in one are left for that run's resume).
func RemoveDeadCgroups(dead func(runID string) bool) {
	for id, dirs := range leftoverCgroups() {
		if !dead(id) {
			continue
		}
		for _, dir := range dirs {
			_ = os.Remove(dir) // EBUSY while a process is in it
		}
	}
}

// killCgroup kills every process in a cgroup: cgroup.kill where the
// kernel has it (v2, Linux 5.14), else each pid of cgroup.procs.
func killCgroup(dir string) {
	if os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0o644) == nil {
		return
	}
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 && pid != os.Getpid() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// removeCgroupDir removes a cgroup, waiting up to wait for the processes
// just killed to leave it.
func removeCgroupDir(dir string, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return true
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}
