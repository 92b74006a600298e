package main

import (
	"bytes"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestExamplesValidate keeps the README's example plans valid, and each
// one shown by run --dry-run (text and JSON) and graph.
func TestExamplesValidate(t *testing.T) {
	plans, err := filepath.Glob("examples/*.yaml")
	jsonPlans, _ := filepath.Glob("examples/*.json") // Torc and FABER plans, run as they are
	plans = append(plans, jsonPlans...)
	if err != nil || len(plans) < 2 {
		t.Fatalf("examples: %v %v", plans, err)
	}
	for _, p := range plans {
		var out, errb bytes.Buffer
		if code := Main([]string{"validate", p}, nil, &out, &errb); code != 0 {
			t.Errorf("faber validate %s: exit %d: %s", p, code, errb.String())
		}
		for _, args := range [][]string{
			{"run", "--dry-run", p, "--state-dir", t.TempDir()},
			{"run", "--dry-run", "--ui", "json", p, "--state-dir", t.TempDir()},
			{"graph", p},
			{"graph", "--format", "dot", p},
		} {
			out.Reset()
			errb.Reset()
			if code := Main(args, nil, &out, &errb); code != 0 {
				t.Errorf("faber %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
			}
		}
	}
}

// readmeRun matches a README line that runs an example plan, as a user
// would copy it: "go run . run examples/x.yaml ..." or "faber run ...".
var readmeRun = regexp.MustCompile(`^(?:go run \.|faber) run (examples/\S+\.(?:ya?ml|json))([^#]*)`)

// TestExamplesRunAsREADME runs every examples/ plan the way a new user
// does: from the repository root (a copy of it), with the default, relative
// state dir, every command line exactly as the README prints it, and every
// plan in examples/ at least once. Each must end success (exit 0); the
// README's --set table=broken demo ends success through its handler.
func TestExamplesRunAsREADME(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var runs [][]string
	seen := map[string]bool{}
	for _, line := range strings.Split(string(readme), "\n") {
		m := readmeRun.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		runs = append(runs, append([]string{"run", m[1]}, strings.Fields(m[2])...))
		seen[m[1]] = true
	}
	plans, _ := filepath.Glob("examples/*.y*ml")
	jsonPlans, _ := filepath.Glob("examples/*.json")
	for _, p := range append(plans, jsonPlans...) {
		if !seen[filepath.ToSlash(p)] {
			runs = append(runs, []string{"run", filepath.ToSlash(p)})
		}
	}
	if len(runs) < 3 {
		t.Fatalf("found only %d example runs in README.md and examples/", len(runs))
	}
	root := t.TempDir()
	if err := osexec.Command("cp", "-r", "examples", root).Run(); err != nil {
		t.Fatalf("copying examples: %v", err)
	}
	self, _ := os.Executable()
	env := []string{"FABER_TEST_AS_FABER=1", "CI=1", "NO_COLOR=1"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FABER_") && !strings.HasPrefix(kv, "CI=") {
			env = append(env, kv)
		}
	}
	for _, args := range runs {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cmd := osexec.Command(self, args...)
			cmd.Dir, cmd.Env = root, env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("faber %s from the repository root: %v\n%s", strings.Join(args, " "), err, out)
			}
			if strings.Contains(strings.Join(args, " "), "table=broken") &&
				!bytes.Contains(out, []byte("on_failure")) {
				t.Errorf("the broken-table demo succeeded without its handler:\n%s", out)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(root, ".faber", "runs")); err != nil {
		t.Errorf("the runs are not in the default state dir: %v", err)
	}
}
