//go:build unix

package exec

import (
	"bytes"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTaskScriptExact: an array task's script runs its item's argv in its
// directory with exactly the environment faber built for it — hostile
// bytes included — whatever the array's first item's (sbatch's) was, and
// keeps what Slurm adds (SLURM_*).
func TestTaskScriptExact(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "it's a dir $HOME")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	hostile := []string{"a'b", "c\"d", "$HOME `id` $(id)", "back\\slash", "new\nline", "\xff\xfe", "", " lead", "-n", "--"}
	base := []string{"PATH=" + os.Getenv("PATH"), "ONLY_BASE=gone", "SAME=1", "CHANGED=old", "SLURM_JOB_ID=7"}
	own := []string{"PATH=" + os.Getenv("PATH"), "SAME=1", "CHANGED=new'\n$x", "ADDED=" + strings.Join(hostile, "|"), "EMPTY="}
	argv := append([]string{"/bin/sh", "-c", `printf '%s\0' "$@" > args; env > env.txt; pwd > pwd.txt`, "sh"}, hostile...)
	ps := procSpec{argv: argv, env: own, stdoutPath: filepath.Join(dir, "o.out"), stderrPath: filepath.Join(dir, "o.err")}
	text, err := taskScript(work, base, ps)
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "task.sh")
	if err := os.WriteFile(script, []byte(text), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := osexec.Command("/bin/sh", script)
	cmd.Env = base
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s\n%s", err, out, text)
	}
	got, _ := os.ReadFile(filepath.Join(work, "args"))
	if want := strings.Join(hostile, "\x00") + "\x00"; string(got) != want {
		t.Errorf("argv %q, want %q", got, want)
	}
	pwd, _ := os.ReadFile(filepath.Join(work, "pwd.txt"))
	if strings.TrimSpace(string(pwd)) != work {
		t.Errorf("ran in %q, want %q", pwd, work)
	}
	envOut, _ := os.ReadFile(filepath.Join(work, "env.txt"))
	for _, e := range own {
		if !bytes.Contains(envOut, []byte(e+"\n")) {
			t.Errorf("environment lacks %q:\n%s", e, envOut)
		}
	}
	if bytes.Contains(envOut, []byte("ONLY_BASE=")) || bytes.Contains(envOut, []byte("CHANGED=old")) {
		t.Errorf("environment keeps what the item's lacks:\n%s", envOut)
	}
	if !bytes.Contains(envOut, []byte("SLURM_JOB_ID=7\n")) {
		t.Errorf("environment lost Slurm's own variables:\n%s", envOut)
	}
}

// TestArrayBatcherGroups: the items of a fan-out submitted together are
// one sbatch --array, each getting its task's id; an item of the same
// fan-out whose limits differ (a retry whose memory grew) is a job of its
// own, and so is an item that starts alone.
func TestArrayBatcherGroups(t *testing.T) {
	calls := fakeClient(t, "sbatch", "echo $((n + 40))")
	logs := t.TempDir()
	k := &slurmKind{}
	k.arrays().window = 3 * time.Second // all four start well within it, however busy the machine
	item := func(key string, mem int64) (*slurmBatch, procSpec) {
		s, ps := fanItem(logs, key, "true")
		return k.batch("r-1", "faber-r-1-"+s.ID+"-a1", s, logs, limits{memory: mem}), ps
	}
	submit := map[string]func() (string, error){}
	for _, key := range []string{"a", "b", "c"} {
		submit[key] = func() (string, error) { a, ps := item(key, 0); return a.submit(ps) }
	}
	submit["d"] = func() (string, error) { a, ps := item("d", 2<<30); return a.submit(ps) } // grown limits: its own submission
	ids := submitTogether(t, submit)
	b, _ := os.ReadFile(calls)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d sbatch calls, want 2 (one array, one job):\n%s", len(lines), b)
	}
	var arrayID, jobID string
	for _, l := range lines {
		if strings.HasPrefix(l, "--array=0-2 ") {
			arrayID = "array"
			if !strings.Contains(l, "--job-name=faber-r-1-fan-a0") {
				t.Errorf("array call %q: not named after the fan-out", l)
			}
		} else if strings.Contains(l, "--mem=2048M") {
			jobID = "job"
		}
	}
	if arrayID == "" || jobID == "" {
		t.Fatalf("calls:\n%s", b)
	}
	tasks := map[string]bool{}
	for _, key := range []string{"a", "b", "c"} {
		arr, task, ok := strings.Cut(ids[key], "_")
		if !ok || (arr != "41" && arr != "42") {
			t.Fatalf("item %s got id %q, not an array task", key, ids[key])
		}
		tasks[task] = true
		if _, err := os.Stat(filepath.Join(logs, key, "attempt-1.task.sh")); err != nil {
			t.Errorf("item %s has no task script: %v", key, err)
		}
	}
	if len(tasks) != 3 {
		t.Errorf("tasks %v, want three different ones", tasks)
	}
	if strings.Contains(ids["d"], "_") {
		t.Errorf("the item with grown limits got %q, an array task", ids["d"])
	}
}
