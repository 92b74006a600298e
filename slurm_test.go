package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// slurmShapePlan exercises the paths a run records: a success, a retry by
// an exit-code rule, a failure let through by on_failure: continue, its
// dependent, and a timeout.
const slurmShapePlan = `
name: shape
executor: %s
failure_handlers:
  - name: again
    rules:
      - exit_codes: [10]
        max_retries: 1
steps:
  - id: ok
    run: echo "job=${SLURM_JOB_NAME:-none}"; echo "a note" >&2
  - id: flaky
    failure_handler: again
    run: |
      if [ -e flaky-ran ]; then echo second; exit 0; fi
      touch flaky-ran
      echo "first try fails" >&2
      exit 10
  - id: broken
    needs: [ok]
    run: echo "it broke" >&2; exit 3
    result_handling:
      on_failure: continue
  - id: after
    needs: [broken]
    run: echo after
  - id: slow
    timeout: 4s
    kill_grace: 1s
    run: sleep 30
`

// TestSlurmStatusLikeLocal: the same plan run locally and with executor:
// slurm gives `faber status --json` of the same shape, with the same
// statuses, attempts, exit codes and errors; only times and ids differ.
func TestSlurmStatusLikeLocal(t *testing.T) {
	if os.Getenv("FABER_SLURM") != "1" {
		t.Skip("needs a Slurm cluster: run scripts/slurm-cluster.sh start and set FABER_SLURM=1")
	}
	if out, err := osexec.Command("sinfo").CombinedOutput(); err != nil {
		t.Fatalf("FABER_SLURM=1 but sinfo fails: %v\n%s", err, out)
	}
	local := runForStatus(t, "local")
	if err := waitSlurmIdle(); err != nil {
		t.Log(err)
	}
	slurm := runForStatus(t, "slurm")
	if !reflect.DeepEqual(local, slurm) {
		l, _ := json.MarshalIndent(local, "", "  ")
		s, _ := json.MarshalIndent(slurm, "", "  ")
		t.Fatalf("status --json differs\nlocal: %s\nslurm: %s", l, s)
	}
}

// runForStatus runs slurmShapePlan with the executor in a fresh directory
// and returns its `status --json` with the values that vary from run to
// run (ids, times, durations) replaced by their JSON type.
func runForStatus(t *testing.T, executor string) any {
	t.Helper()
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte(fmt.Sprintf(slurmShapePlan, executor)), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, ".faber")
	faber := func(args ...string) []byte {
		var out, errb bytes.Buffer
		code := Main(append(args, "--state-dir", state), nil, &out, &errb)
		if code != 0 && args[0] != "run" {
			t.Fatalf("faber %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
		}
		return out.Bytes()
	}
	faber("run", plan, "--ui", "plain")
	var runs []struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal(faber("list", "--json"), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("list --json: %v %+v", err, runs)
	}
	// The steps ran where the executor says.
	want := "job=none\n"
	if executor == "slurm" {
		want = "job=faber-" + runs[0].RunID + "-ok-a1\n"
	}
	if b, _ := os.ReadFile(filepath.Join(state, "runs", runs[0].RunID, "logs", "ok", "attempt-1.out")); string(b) != want {
		t.Fatalf("executor %s: step ok printed %q, want %q", executor, b, want)
	}
	var status any
	if err := json.Unmarshal(faber("status", runs[0].RunID, "--json"), &status); err != nil {
		t.Fatal(err)
	}
	return normalizeStatus(status)
}

// normalizeStatus replaces varying values by their JSON type name, keeping the
// shape and every other value.
func normalizeStatus(v any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			switch k {
			case "run_id", "started_at", "finished_at", "duration_ms", "handler_invoked_at", "resources":
				// resources: what each attempt used differs from run to run
				// (and srun's own usage is not the step's).
				x[k] = fmt.Sprintf("<%T>", x[k])
			default:
				x[k] = normalizeStatus(x[k])
			}
		}
		return x
	case []any:
		for i := range x {
			x[i] = normalizeStatus(x[i])
		}
	}
	return v
}

// waitSlurmIdle waits (at most slurmIdleWait) until this user has no job
// in the test cluster, in any state: a job still completing (for up to
// KillWait seconds after a cancel or time limit) keeps every new job of the
// single node waiting, longer than the timeouts the Slurm tests use.
func waitSlurmIdle() error {
	const slurmIdleWait = 90 * time.Second
	deadline := time.Now().Add(slurmIdleWait)
	for {
		out, err := osexec.Command("squeue", "--noheader", "--format=%i %j %T", "--user="+strconv.Itoa(os.Getuid())).Output()
		if err != nil {
			return fmt.Errorf("squeue: %v", err)
		}
		jobs := strings.TrimSpace(string(out))
		if jobs == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the Slurm cluster is still busy after %s:\n%s", slurmIdleWait, jobs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
