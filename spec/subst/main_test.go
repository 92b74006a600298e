package subst

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The test binary doubles as the program that scripts call, so the tests see the
// exact argv a program receives without assuming any tool beyond sh.
const (
	recordEnv = "FABER_SUBST_TEST_RECORD" // file to append the invocation to
	stdinEnv  = "FABER_SUBST_TEST_STDIN"  // also record stdin, as a last argument
)

func TestMain(m *testing.M) {
	if path := os.Getenv(recordEnv); path != "" {
		os.Exit(record(path))
	}
	os.Exit(m.Run())
}

// record appends one invocation to path: the argument count, then each argument,
// each followed by a NUL (which no argument can contain).
func record(path string) int {
	args := os.Args[1:]
	if os.Getenv(stdinEnv) != "" {
		in, err := io.ReadAll(os.Stdin)
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			return 3
		}
		args = append(args, string(in))
	}
	var b []byte
	b = append(b, strconv.Itoa(len(args))...)
	b = append(b, 0)
	for _, a := range args {
		b = append(b, a...)
		b = append(b, 0)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 3
	}
	return 0
}

// parseRecords reads what record wrote: one []string per invocation.
func parseRecords(t *testing.T, data []byte) [][]string {
	t.Helper()
	var out [][]string
	fields := bytes.Split(data, []byte{0})
	if len(fields) == 0 || len(fields[len(fields)-1]) != 0 {
		t.Fatalf("record file does not end with NUL: %q", data)
	}
	fields = fields[:len(fields)-1]
	for len(fields) > 0 {
		n, err := strconv.Atoi(string(fields[0]))
		if err != nil || n < 0 || n > len(fields)-1 {
			t.Fatalf("bad record file: %q", data)
		}
		inv := make([]string, n)
		for i := range n {
			inv[i] = string(fields[1+i])
		}
		out = append(out, inv)
		fields = fields[1+n:]
	}
	return out
}

// recorderEnv returns the environment for running the recorder that writes to out.
// Under -race the race runtime sleeps a second before every exit unless told not to.
func recorderEnv(out string) []string {
	return append(os.Environ(),
		recordEnv+"="+out,
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
}

// recorder returns the path of the test binary, which records when recordEnv is set.
func recorder(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// lookShells returns the shells to run scripts with: sh, and bash if present.
func lookShells() []string {
	var shells []string
	for _, name := range []string{"sh", "bash"} {
		if path, err := exec.LookPath(name); err == nil {
			shells = append(shells, path)
		}
	}
	return shells
}

// testShells is lookShells for a test, which it skips without a shell.
func testShells(t *testing.T) []string {
	t.Helper()
	shells := lookShells()
	if len(shells) == 0 {
		t.Skip("no sh in PATH")
	}
	return shells
}

// onlyFiles fails the test if dir holds anything but the named files: a value that
// got executed would have left something behind (every hostile value writes X).
func onlyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{}
	for _, n := range names {
		allowed[n] = true
	}
	for _, e := range ents {
		if !allowed[e.Name()] {
			t.Errorf("unexpected file %s in %s: a value was executed", e.Name(), filepath.Base(dir))
		}
	}
}
