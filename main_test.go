package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"faber":     func() { os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
		"fabertest": func() { os.Exit(fabertest(os.Args[1:])) },
	})
}

// TestScripts runs testdata/script/*.txtar: one CLI behaviour per script.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("FABER_STATE_DIR", filepath.Join(env.WorkDir, ".faber"))
			env.Setenv("NO_COLOR", "1")
			env.Setenv("TERM", "dumb")
			env.Setenv("CI", "")
			return nil
		},
		RequireExplicitExec: true,
	})
}

// fabertest is a helper program for scripts and plans, so that they do not
// lean on /bin tools:
//
//	exit N                      exit with status N
//	sleep D                     sleep for duration D
//	echo ARGS...                print ARGS joined by spaces
//	echoerr ARGS...             the same on stderr
//	argv-to FILE ARGS...        write each argument to FILE, one per line, quoted (%q)
//	waitfile FILE [D]           wait until FILE exists (default 10s), exit 1 on timeout
//	fail-until FILE N CODE      count runs in FILE; exit CODE while the count is below N, else 0
//	ticker N D                  print N numbered lines, D apart
//	alive PIDFILE               exit 0 if the process in PIDFILE is alive, else 1
//	result STATUS MESSAGE       write {"status","message"} to $FABER_RESULT
func fabertest(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "fabertest: missing command")
		return 2
	}
	switch args[0] {
	case "exit":
		n, _ := strconv.Atoi(args[1])
		return n
	case "sleep":
		d, err := time.ParseDuration(args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		time.Sleep(d)
		return 0
	case "echo":
		fmt.Println(strings.Join(args[1:], " "))
		return 0
	case "echoerr":
		fmt.Fprintln(os.Stderr, strings.Join(args[1:], " "))
		return 0
	case "argv-to":
		var b strings.Builder
		for _, a := range args[2:] {
			fmt.Fprintf(&b, "%q\n", a)
		}
		if err := os.WriteFile(args[1], []byte(b.String()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		return 0
	case "waitfile":
		d := 10 * time.Second
		if len(args) > 2 {
			d, _ = time.ParseDuration(args[2])
		}
		deadline := time.Now().Add(d)
		for time.Now().Before(deadline) {
			if _, err := os.Stat(args[1]); err == nil {
				return 0
			}
			time.Sleep(20 * time.Millisecond)
		}
		fmt.Fprintf(os.Stderr, "fabertest: %s did not appear within %s\n", args[1], d)
		return 1
	case "fail-until":
		b, _ := os.ReadFile(args[1])
		n := strings.Count(string(b), "\n") + 1
		os.WriteFile(args[1], append(b, '\n'), 0o644)
		want, _ := strconv.Atoi(args[2])
		code, _ := strconv.Atoi(args[3])
		if n < want {
			fmt.Fprintf(os.Stderr, "run %d failed\n", n)
			return code
		}
		fmt.Printf("run %d ok\n", n)
		return 0
	case "ticker":
		n, _ := strconv.Atoi(args[1])
		d, _ := time.ParseDuration(args[2])
		for i := 1; i <= n; i++ {
			fmt.Printf("tick %d\n", i)
			time.Sleep(d)
		}
		return 0
	case "alive":
		b, err := os.ReadFile(args[1])
		if err != nil {
			return 1
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return 1
		}
		if syscall.Kill(pid, 0) == nil {
			// a zombie is not alive
			if st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && strings.Contains(string(st), ") Z ") {
				return 1
			}
			return 0
		}
		return 1
	case "result":
		msg := fmt.Sprintf(`{"status":%q,"message":%q}`, args[1], strings.Join(args[2:], " "))
		if err := os.WriteFile(os.Getenv("FABER_RESULT"), []byte(msg), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "fabertest: unknown command %q\n", args[0])
	return 2
}
