//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/state"
)

// TestChaosKillResume kills faber with SIGKILL at random moments during a
// 40-step parallel run and resumes it until it ends: the run must end
// success with every step's side effect done, step_orphaned events recorded,
// no step process left over, and seq contiguous across all resumes.
func TestChaosKillResume(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test: not in -short mode")
	}
	dir := t.TempDir()
	var plan strings.Builder
	plan.WriteString("name: chaos\njobs: 8\nphases:\n  - name: all\n    parallel: true\n    steps:\n")
	for i := 0; i < 40; i++ {
		// Each step takes a while (so kills land while steps run) and leaves
		// a side effect; it is idempotent, as steps that may re-run must be.
		fmt.Fprintf(&plan, "      - id: s%02d\n        run: sleep 0.%d; mkdir -p marks; echo done > marks/{step_id}\n", i, 2+i%5)
	}
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(plan.String()), 0o644); err != nil {
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
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	kills := 0
	args := []string{"run", "plan.yaml", "--ui", "json"}
	var runID string
	for round := 0; round < 40; round++ {
		cmd := faber(args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var werr error
		if kills < 6 {
			select {
			case werr = <-done:
			case <-time.After(time.Duration(150+rng.Intn(500)) * time.Millisecond):
				_ = cmd.Process.Signal(syscall.SIGKILL)
				<-done
				kills++
				werr = fmt.Errorf("killed")
			}
		} else {
			select {
			case werr = <-done:
			case <-time.After(60 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("faber did not finish:\n%s", out.String())
			}
		}
		if runID == "" {
			metas, _ := state.List(stateDir)
			if len(metas) > 0 {
				runID = metas[0].RunID
			}
		}
		if runID != "" {
			args = []string{"resume", runID, "--ui", "json"}
		}
		if werr == nil {
			break
		}
		if ee, ok := werr.(*osexec.ExitError); ok && ee.ExitCode() != 1 && ee.ExitCode() != -1 {
			t.Fatalf("round %d: faber exited %d:\n%s", round, ee.ExitCode(), out.String())
		}
	}
	if runID == "" {
		t.Fatal("no run was created")
	}
	if kills == 0 {
		t.Fatal("faber was never killed: the test proved nothing")
	}

	st := faber("status", runID, "--json")
	b, err := st.Output()
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	var status struct {
		Status string            `json:"status"`
		Steps  []*exec.StepState `json:"steps"`
	}
	if err := json.Unmarshal(b, &status); err != nil {
		t.Fatal(err)
	}
	if status.Status != "success" || len(status.Steps) != 40 {
		t.Fatalf("run status %q with %d steps, want success with 40:\n%s", status.Status, len(status.Steps), b)
	}
	for _, s := range status.Steps {
		if s.Status != exec.StatusSuccess {
			t.Errorf("step %s is %s", s.ID, s.Status)
		}
		if _, err := os.Stat(filepath.Join(dir, "marks", s.ID)); err != nil {
			t.Errorf("step %s: side effect missing", s.ID)
		}
	}
	evs, err := state.ReadEvents(stateDir, runID, 0)
	if err != nil {
		t.Fatal(err)
	}
	orphaned := 0
	for i, l := range evs {
		var e exec.Event
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatal(err)
		}
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: the log is not contiguous", i+1, e.Seq)
		}
		if e.Type == exec.EvStepOrphaned {
			orphaned++
		}
	}
	if orphaned == 0 {
		t.Errorf("no step_orphaned event after %d kills", kills)
	}
	if n := countRunProcesses(runID); n > 0 {
		t.Errorf("%d processes of the run are still alive", n)
	}
	t.Logf("%d kills, %d orphaned steps, %d events", kills, orphaned, len(evs))
}

// countRunProcesses counts live processes carrying FABER_RUN_ID=runID.
func countRunProcesses(runID string) int {
	marker := []byte("FABER_RUN_ID=" + runID + "\x00")
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		if bytes.HasPrefix(env, marker) || bytes.Contains(env, append([]byte{0}, marker...)) {
			if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && bytes.Contains(st, []byte(") Z ")) {
				continue
			}
			n++
		}
	}
	return n
}
