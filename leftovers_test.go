//go:build linux

package main

import (
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/state"
)

// TestLeftoversAfterKill kills faber with SIGKILL at several moments — as
// its run starts, while a step with a memory limit runs (its cgroup, the
// control file and the run's lock in use), while its resume runs that
// step again — and checks that the next
// resume of the run, or the next run in the state dir, leaves nothing of
// the dead faber: no cgroup of its attempts, no control file, no
// temporary file (the ones a kill in the middle of a write leaves are
// planted beside), no process, no lock held. Cgroup checks are skipped,
// with a message, where faber cannot make a cgroup.
func TestLeftoversAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("kills faber: not in -short mode")
	}
	cgroups := exec.CgroupProbe() == nil
	if !cgroups {
		t.Logf("cgroup checks skipped: no writable cgroup here (%v)", exec.CgroupProbe())
	}
	dir := t.TempDir()
	// Step a runs long only in an attempt that starts before the test's
	// kill (it then stays, an orphan in its cgroup); later ones end at once.
	plan := "name: left\nsteps:\n" +
		"  - id: a\n    memory: 64MiB\n    run: if [ ! -e killed ]; then touch started; sleep 300; fi\n" +
		"  - id: b\n    run: echo b\n"
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "other.yaml"), []byte("name: other\nsteps:\n  - id: x\n    run: echo x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	stateDir := filepath.Join(dir, ".faber")
	faber := func(args ...string) *osexec.Cmd {
		cmd := faberCmd(self, dir, stateDir, args...)
		return cmd
	}
	// waitFor polls cond, failing the test after a generous bound.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	seen := map[string]bool{} // the runs made so far
	t.Cleanup(func() {
		for id := range seen {
			killRunProcesses(id) // a failed check may leave an orphan
		}
	})
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
	newest := func() string {
		ids, _ := state.RunIDs(stateDir)
		for _, id := range ids {
			if exists(filepath.Join(state.RunDir(stateDir, id), "meta.json")) && !seen[id] {
				return id
			}
		}
		return ""
	}
	// startAndKill starts faber with args, waits for when(runID) (the
	// run's id: given, else the new run's), and kills it.
	startAndKill := func(args []string, id string, when func(id string) bool) string {
		t.Helper()
		os.Remove(filepath.Join(dir, "killed"))
		os.Remove(filepath.Join(dir, "started"))
		cmd := faber(args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		given := id
		waitFor("the run to start", func() bool {
			if given == "" {
				id = newest()
			}
			return id != "" && when(id)
		})
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		seen[id] = true
		if err := os.WriteFile(filepath.Join(dir, "killed"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		return id
	}
	runAndKill := func(planFile string, when func(id string) bool) string {
		t.Helper()
		return startAndKill([]string{"run", planFile, "--ui", "plain"}, "", when)
	}
	deadPID := func() int {
		c := osexec.Command("true")
		if err := c.Run(); err != nil {
			t.Fatal(err)
		}
		return c.Process.Pid
	}
	// plant leaves what a kill in the middle of a write leaves: a run
	// file's temporary, the control file's, a cache entry's.
	plant := func(id string) {
		rd := state.RunDir(stateDir, id)
		for _, p := range []string{filepath.Join(rd, ".owner.json.12345.tmp"), filepath.Join(rd, "control.json.tmp"),
			filepath.Join(state.CacheDir(stateDir), ".tmp", ".entry-"+strconv.Itoa(deadPID())+"-777")} {
			os.MkdirAll(filepath.Dir(p), 0o700)
			if err := os.WriteFile(p, []byte("half"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(id, after string) {
		t.Helper()
		rd := state.RunDir(stateDir, id)
		ents, _ := os.ReadDir(rd)
		for _, e := range ents {
			if e.Name() == "control.json" || strings.HasSuffix(e.Name(), ".tmp") {
				t.Errorf("after %s: run %s still has %s", after, id, e.Name())
			}
		}
		for _, d := range []string{state.CacheDir(stateDir), filepath.Join(state.CacheDir(stateDir), ".tmp")} {
			ents, _ = os.ReadDir(d)
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), ".entry-") {
					t.Errorf("after %s: the cache still has %s in %s", after, e.Name(), d)
				}
			}
		}
		if cgroups {
			for _, cg := range runCgroups(id) {
				t.Errorf("after %s: cgroup %s is left", after, cg)
			}
		}
		if n := countRunProcesses(id); n > 0 {
			t.Errorf("after %s: %d processes of run %s are alive", after, n, id)
		}
		if o, err := state.OwnerOf(stateDir, id); err != nil || o.Alive {
			t.Errorf("after %s: run %s: owner alive %v (%v)", after, id, o.Alive, err)
		}
	}
	resume := func(id string) {
		t.Helper()
		if out, err := faber("resume", id, "--ui", "plain").CombinedOutput(); err != nil {
			t.Fatalf("resume %s: %v\n%s", id, err, out)
		}
	}

	// 1. Killed as the run starts.
	id := runAndKill("plan.yaml", func(string) bool { return true })
	plant(id)
	resume(id)
	check(id, "a kill at the start and a resume")

	// 2. Killed while step a runs in its cgroup; its process stays.
	id = runAndKill("plan.yaml", func(string) bool { return exists(filepath.Join(dir, "started")) })
	if !exists(filepath.Join(state.RunDir(stateDir, id), "control.json")) {
		t.Errorf("the killed run left no control.json: the test proves nothing about it")
	}
	if cgroups && len(runCgroups(id)) == 0 {
		t.Errorf("the killed run left no cgroup: the test proves nothing about it")
	}
	plant(id)
	resume(id)
	check(id, "a kill while a step ran and a resume")

	// 3. Killed while step a runs, then its resume killed while step a
	// runs again (attempt 2, in a cgroup of its own); resumed again.
	started := func(string) bool { return exists(filepath.Join(dir, "started")) }
	id = runAndKill("plan.yaml", started)
	startAndKill([]string{"resume", id, "--ui", "plain"}, id, started)
	if cgroups && len(runCgroups(id)) == 0 {
		t.Errorf("the killed resume left no cgroup: the test proves nothing about it")
	}
	plant(id)
	resume(id)
	check(id, "a kill while a step ran, a kill of its resume and a resume")

	// 4. Killed while step a runs; its process ends by itself; the next
	// run in the state dir (of another plan) cleans up.
	id = runAndKill("plan.yaml", func(string) bool { return exists(filepath.Join(dir, "started")) })
	if cgroups && len(runCgroups(id)) == 0 {
		t.Errorf("the killed run left no cgroup: the test proves nothing about it")
	}
	killRunProcesses(id)
	plant(id)
	if out, err := faber("run", "other.yaml", "--ui", "plain").CombinedOutput(); err != nil {
		t.Fatalf("run other.yaml: %v\n%s", err, out)
	}
	check(id, "a kill while a step ran and a run of another plan")
}

// runCgroups lists the cgroups named for attempts of a run anywhere in the
// first levels of the cgroup file systems.
func runCgroups(runID string) []string {
	var out []string
	root := "/sys/fs/cgroup"
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.Count(strings.TrimPrefix(p, root), "/") > 5 {
			return filepath.SkipDir
		}
		if strings.HasPrefix(d.Name(), "faber-"+runID+"-") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// killRunProcesses kills the processes carrying FABER_RUN_ID=runID and
// waits until they are gone.
func killRunProcesses(runID string) {
	marker := []byte("FABER_RUN_ID=" + runID + "\x00")
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && strings.Contains("\x00"+string(env), "\x00"+string(marker)) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); countRunProcesses(runID) > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
}
