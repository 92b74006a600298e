//go:build unix

package exec

import (
	"bytes"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
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

// TestShQuote: what shQuote quotes, sh reads back byte for byte.
func TestShQuote(t *testing.T) {
	for _, s := range []string{"", "plain", "a'b", "''", "\n", "$x `y` \\z", "\xff", "'\n'"} {
		out, err := osexec.Command("/bin/sh", "-c", "printf '%s' "+shQuote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("shQuote(%q) read back as %q (%v)", s, out, err)
		}
	}
}
