package importer

import (
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TorcChain writes a Torc workflow of n jobs: a chain by depends_on (job i
// needs job i-1), a files-based dependency (job i reads the file job i-2
// writes, through ${files.input...} in its command, and the file of job
// i-3 through input_files), and nine jobs with a depends_on_regexes (a
// fixed number of patterns: each is tried against every job's names).
func TorcChain(n int) []byte {
	var b strings.Builder
	b.WriteString("name: big\nfiles:\n")
	for i := 0; i < n; i++ {
		b.WriteString("  - {name: f" + strconv.Itoa(i) + ", path: o/" + strconv.Itoa(i) + "}\n")
	}
	b.WriteString("jobs:\n")
	for i := 0; i < n; i++ {
		id := strconv.Itoa(i)
		b.WriteString("  - name: j" + id + "\n    command: w ${files.output.f" + id + "}")
		if i >= 2 {
			b.WriteString(" ${files.input.f" + strconv.Itoa(i-2) + "}")
		}
		b.WriteString("\n")
		if i >= 1 {
			b.WriteString("    depends_on: [j" + strconv.Itoa(i-1) + "]\n")
		}
		if i >= 3 {
			b.WriteString("    input_files: [f" + strconv.Itoa(i-3) + "]\n")
		}
		if step := max(n/10, 1); i > 0 && i%step == 0 && i/step < 10 {
			b.WriteString("    depends_on_regexes: ['^j" + strconv.Itoa(i/2) + "$']\n")
		}
	}
	return []byte(b.String())
}

// TestTorcDepsLinear: resolving the dependencies of n Torc jobs takes steps
// linear in n (counted, not timed). Listing a job's needs in job order used
// to scan every job for every job: n² steps.
func TestTorcDepsLinear(t *testing.T) {
	ops := func(n int) int {
		var doc yaml.Node
		if err := yaml.Unmarshal(TorcChain(n), &doc); err != nil {
			t.Fatal(err)
		}
		c := &conv{file: "w.yaml"}
		c.torc(rootMap(&doc))
		if len(c.errs) > 0 {
			t.Fatalf("%d jobs: %v", n, c.errs[0].Message)
		}
		return c.ops
	}
	small, big := ops(1000), ops(8000)
	// Linear: 8×; quadratic: 64×. 12× leaves room for the n log n sorts.
	if big > 12*small {
		t.Errorf("dependency steps: %d for 1000 jobs, %d for 8000 (%.1f×; linear is 8×)", small, big, float64(big)/float64(small))
	}
	t.Logf("dependency steps: %d for 1000 jobs, %d for 8000 (%.1f×)", small, big, float64(big)/float64(small))
}

// TestFaberItemsBounded: every item gets every field, so items with
// distinct fields would make a plan the square of the file: more than
// maxItemCells values is an error naming items.
func TestFaberItemsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"id": "p", "workflow": {"phases": {"build": {"steps": [{"id": "a", "prompt": "do {work_id}"}]}}}, "items": [`)
	for i := 0; i < 1100; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`{"work_id": "` + strconv.Itoa(i) + `", "f` + strconv.Itoa(i) + `": "x"}`)
	}
	b.WriteString("]}")
	_, _, err := Convert(FormatFaber, "plan.json", []byte(b.String()), Options{})
	if err == nil || !strings.Contains(err.Error(), "items: 1100 items with 1101 distinct fields make 1211100 values, more than 1048576") {
		t.Fatalf("err = %v", err)
	}
}

// TestFaberItemsPerStepBounded: each step of a plan with several items
// writes every item, so the bound is on the values of all steps: 2,000
// steps over 2,000 items (a 150 KB file) would be 4 million.
func TestFaberItemsPerStepBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"id": "p", "workflow": {"phases": {"build": {"steps": [`)
	for i := 0; i < 2000; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`{"id": "s` + strconv.Itoa(i) + `", "prompt": "x"}`)
	}
	b.WriteString(`]}}}, "items": [`)
	for i := 0; i < 2000; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`{"work_id": "` + strconv.Itoa(i) + `"}`)
	}
	b.WriteString("]}")
	_, _, err := Convert(FormatFaber, "plan.json", []byte(b.String()), Options{})
	if err == nil || !strings.Contains(err.Error(), "items: 2000 items with 1 fields, written for each step, make more than 1048576 values") {
		t.Fatalf("err = %v", err)
	}
	if e := err.(*Errors); len(e.Diags) != 1 {
		t.Errorf("%d errors, want 1: %v", len(e.Diags), e.Diags)
	}
}

// TestTorcInstancesBounded: a workflow parameter of 100,000 values used by
// twelve jobs would be 1.2 million instances from a few lines: past
// maxNames, an error, once (here 100 values, a bound of 1,000).
func TestTorcInstancesBounded(t *testing.T) {
	defer func(n int) { maxNames = n }(maxNames)
	maxNames = 1000 // the rule at a thousandth of its size
	var b strings.Builder
	b.WriteString("name: many\nparameters: {i: '1:100'}\njobs:\n")
	for k := 0; k < 12; k++ {
		b.WriteString("  - {name: 'j" + strconv.Itoa(k) + "_{i}', command: 'w {i}', use_parameters: [i]}\n")
	}
	_, _, err := Convert(FormatTorc, "w.yaml", []byte(b.String()), Options{})
	e, ok := err.(*Errors)
	if !ok || len(e.Diags) != 1 || !strings.Contains(e.Diags[0].Message, `job "j10_{i}": the jobs' parameters make more than 1000 instances in all`) {
		t.Fatalf("err = %v", err)
	}
}

// TestTorcFileNamesBounded: the same bound for parameterized files.
func TestTorcFileNamesBounded(t *testing.T) {
	defer func(n int) { maxNames = n }(maxNames)
	maxNames = 1000
	var b strings.Builder
	b.WriteString("name: many\nfiles:\n")
	for k := 0; k < 12; k++ {
		b.WriteString("  - {name: 'f" + strconv.Itoa(k) + "_{i}', path: 'p/{i}', parameters: {i: '1:100'}}\n")
	}
	b.WriteString("jobs:\n  - {name: a, command: x}\n")
	_, _, err := Convert(FormatTorc, "w.yaml", []byte(b.String()), Options{})
	e, ok := err.(*Errors)
	if !ok || len(e.Diags) != 1 || !strings.Contains(e.Diags[0].Message, `the files' parameters make more than 1000 names in all`) {
		t.Fatalf("err = %v", err)
	}
}
