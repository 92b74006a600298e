package exec

import (
	osexec "os/exec"
	"slices"
	"testing"
	"time"
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
