package main

import (
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestStateDirPrivate: everything faber creates under the state dir is
// private to the user: directories 0700, files 0600 (logs, --set values,
// outputs and the store often hold secrets), whatever the umask; a result
// file the step wrote itself too.
func TestStateDirPrivate(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix permissions on Windows")
	}
	dir := t.TempDir()
	plan := `name: p
commands: {/fix: sh -c "echo fixing"}
steps:
  - id: a
    run: umask 022; echo out; echo err >&2; echo data > "$FABER_OUTPUT_DIR/x.txt"; echo '{"status":"success"}' > "$FABER_RESULT"
  - id: b
    run: exit 3
    result_handling: {on_failure: {command: /fix, retry_on_success: false}}
`
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := fabercmd(t, dir, "run", "plan.yaml", "--set", "token=s3cret")
	cmd.Run() // fails (b), which is the point: handler logs too
	state := filepath.Join(dir, ".faber")
	n := 0
	err := filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n++
		if filepath.Base(filepath.Dir(path)) == "outputs" {
			return nil // the steps' own files, in a 0700 directory
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil || n < 15 {
		t.Fatalf("walked %d entries: %v", n, err)
	}
}

// TestReportModeFromUmask: faber report writes outside the state dir, so
// its file gets the mode the user's umask gives a new file, as a shell's >
// would (a report holds the run's errors and stderr tails: umask 077 keeps
// it private), and a report written over keeps the mode it had.
func TestReportModeFromUmask(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix permissions on Windows")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte("name: p\nsteps:\n  - id: a\n    run: echo hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := fabercmd(t, dir, "run", "plan.yaml", "--ui", "plain").CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	report := func(umask, file string) fs.FileMode {
		t.Helper()
		cmd := fabercmd(t, dir, "report", "--last", "-o", file)
		cmd.Args = append([]string{"sh", "-c", "umask " + umask + " && exec \"$@\"", "sh", cmd.Path}, cmd.Args[1:]...)
		sh, err := osexec.LookPath("sh")
		if err != nil {
			t.Fatal(err)
		}
		cmd.Path = sh
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("report: %v\n%s", err, out)
		}
		fi, err := os.Stat(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	if m := report("077", "private.html"); m != 0o600 {
		t.Errorf("report under umask 077: mode %v, want 0600", m)
	}
	if m := report("022", "shared.html"); m != 0o644 {
		t.Errorf("report under umask 022: mode %v, want 0644", m)
	}
	if m := report("022", "private.html"); m != 0o600 {
		t.Errorf("report written over a 0600 one: mode %v, want 0600 kept", m)
	}
}
