package main

import (
	"bytes"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestNoTerminalQueries: plain commands in a terminal write no terminal
// queries (OSC 11 for the background colour, DSR for the cursor), whose
// answers would land at the user's prompt ("1R"). faber runs under script(1),
// which gives it a pseudo-terminal, as a user's shell would.
func TestNoTerminalQueries(t *testing.T) {
	script, err := osexec.LookPath("script")
	if err != nil || runtime.GOOS != "linux" {
		t.Skip("needs util-linux script(1) on Linux for a pseudo-terminal")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "faber")
	if out, err := osexec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte("name: q\nsteps:\n  - id: a\n    run: echo hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{"version", "run plan.yaml --ui plain", "list", "status --last", "events --last", "logs --last a"} {
		cmd := osexec.Command(script, "-q", "-e", "-c", bin+" "+args, "/dev/null")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TERM=xterm-256color", "FABER_STATE_DIR="+filepath.Join(dir, ".faber"), "CI=", "NO_COLOR=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("faber %s: %v\n%q", args, err, out)
		}
		for _, q := range []string{"\x1b]11;?", "\x1b[6n"} {
			if bytes.Contains(out, []byte(q)) {
				t.Errorf("faber %s wrote the terminal query %q:\n%q", args, q, out)
			}
		}
	}
}
