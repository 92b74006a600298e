package exec

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/faber-run/faber/spec"
)

// submitTogether submits the attempts of submit (by item key) at once, as
// one scheduling pass starts them, and returns their job ids by key.
func submitTogether(t *testing.T, submit map[string]func() (string, error)) map[string]string {
	t.Helper()
	type res struct {
		key, id string
		err     error
	}
	out := make(chan res, len(submit))
	for key, f := range submit {
		go func() {
			id, err := f()
			out <- res{key, id, err}
		}()
	}
	ids := map[string]string{}
	for range submit {
		r := <-out
		if r.err != nil {
			t.Fatalf("%s: %v", r.key, r.err)
		}
		ids[r.key] = r.id
	}
	return ids
}

// TestReattachWaitsForRecord: resume looks a job that left the listing up
// again, for recordWait, until its record comes (Grid Engine writes qacct's
// a flush time after the job ended); a job never recorded is given up.
func TestReattachWaitsForRecord(t *testing.T) {
	prior := &Prior{Steps: map[string]*StepState{
		"late":  {ID: "late", Status: StatusInProgress, Job: "eng:7"},
		"never": {ID: "never", Status: StatusInProgress, Job: "eng:8"},
		"live":  {ID: "live", Status: StatusInProgress, Job: "eng:9"},
	}}
	calls := 0
	e := batchEngine{
		name: "eng", title: "Eng", lister: "englist",
		list: func() (map[string]jobState, error) { return map[string]jobState{"9": {state: "R"}}, nil },
		recorded: func(ids []string) (known []string) {
			calls++
			if calls >= 2 {
				for _, id := range ids {
					if id == "7" {
						known = append(known, id)
					}
				}
			}
			return known
		},
		mark:       func(id string, _ jobState) string { return "ENG_JOB=" + id },
		recordWait: 3 * time.Second,
	}
	steps, spare, err := reattachJobs(prior, e)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(steps, []string{"late", "live"}) || !slices.Equal(spare, []string{"ENG_JOB=7", "ENG_JOB=9"}) {
		t.Errorf("re-attached %v (%v), want late and live", steps, spare)
	}
	if calls < 3 {
		t.Errorf("the record was asked %d times: the never recorded job was not looked for again", calls)
	}
	calls = 0
	e.recordWait = 0
	if steps, _, _ := reattachJobs(prior, e); !slices.Equal(steps, []string{"live"}) || calls != 1 {
		t.Errorf("without a wait: re-attached %v after %d record calls, want live after 1", steps, calls)
	}
}

// TestShQuote: what shQuote quotes, sh reads back byte for byte.
func TestShQuote(t *testing.T) {
	for _, s := range []string{"", "plain", "a'b", "''", "\n", "$x `y` \\z", "\xff", "'\n'"} {
		out, err := osexec.Command("/bin/sh", "-c", "printf '%s' "+shQuote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("shQuote(%q) read back as %q (%v)", s, out, err)
		}
	}
}

// fakeClient puts first in PATH a fake scheduler command name that
// appends its arguments to a file, one call a line, and then runs answer
// with $n the number of calls so far (to print a job id). It returns the
// file.
func fakeClient(t *testing.T, name, answer string) (calls string) {
	t.Helper()
	bin := t.TempDir()
	calls = filepath.Join(bin, "calls")
	fake := "#!/bin/sh\necho \"$*\" >> " + shQuote(calls) + "\nn=$(wc -l < " + shQuote(calls) + ")\n" + answer + "\n"
	if err := os.WriteFile(filepath.Join(bin, name), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return calls
}

// fanItem is item key of fan-out "fan" running script, its attempt 1's
// logs in their own directory under logs.
func fanItem(logs, key, script string) (*spec.Step, procSpec) {
	s := &spec.Step{ID: "fan[" + key + "]", FanOutOf: "fan", StepBody: &spec.StepBody{Run: "true"}}
	d := filepath.Join(logs, key)
	_ = os.MkdirAll(d, 0o700)
	return s, procSpec{argv: []string{"/bin/sh", "-c", script}, env: []string{"FABER_STEP_ID=" + s.ID},
		stdoutPath: filepath.Join(d, "attempt-1.out"), stderrPath: filepath.Join(d, "attempt-1.err")}
}
