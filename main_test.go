package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	osexec "os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/internal/termquiet"
	"github.com/faber-run/faber/state"
)

func TestMain(m *testing.M) {
	termquiet.Restore()
	// Tests must not register their temporary state dirs in the real
	// registry (~/.local/state/faber): it is off unless a test turns it on
	// (TestScripts does: their HOME does not exist, which keeps it off
	// unless a script sets XDG_STATE_HOME).
	if _, set := os.LookupEnv("FABER_REGISTRY"); !set {
		os.Setenv("FABER_REGISTRY", "off")
	}
	fakeSlurmMain() // the contract test's fake sbatch, squeue, scancel
	fakeSgeMain()   // and its fake qsub, qstat, qdel, qacct
	// The chaos test runs this test binary as faber, so that it can kill -9
	// a real faber process.
	if os.Getenv("FABER_TEST_AS_FABER") == "1" {
		os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	testscript.Main(m, map[string]func(){
		"faber":     func() { os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
		"fabertest": func() { os.Exit(fabertest(os.Args[1:])) },
	})
}

// faberCmd is a command that runs prog (this test binary, or a shell that
// execs it) as faber, in dir, with stateDir as its state dir and no colour
// or terminal (see TestMain).
func faberCmd(prog, dir, stateDir string, args ...string) *osexec.Cmd {
	cmd := osexec.Command(prog, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FABER_TEST_AS_FABER=1", "FABER_STATE_DIR="+stateDir, "NO_COLOR=1", "CI=1")
	return cmd
}

// TestScripts runs testdata/script/*.txtar: one CLI behaviour per script.
func TestScripts(t *testing.T) {
	// The Slurm scripts share one single-node cluster: they run one at a
	// time, each on an idle cluster (a job still completing holds every new
	// job back for seconds, longer than the timeouts some scripts test).
	// The Grid Engine scripts likewise share one single-host cluster.
	var slurmMu, sgeMu sync.Mutex
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			if strings.HasPrefix(filepath.Base(env.WorkDir), "script-slurm_") && os.Getenv("FABER_SLURM") == "1" {
				slurmMu.Lock()
				env.Defer(slurmMu.Unlock)
				if err := waitSlurmIdle(); err != nil {
					env.T().Log(err)
				}
			}
			if strings.HasPrefix(filepath.Base(env.WorkDir), "script-sge_") && os.Getenv("FABER_SGE") == "1" {
				sgeMu.Lock()
				env.Defer(sgeMu.Unlock)
				if err := waitSGEIdle(); err != nil {
					env.T().Log(err)
				}
			}
			env.Setenv("FABER_STATE_DIR", filepath.Join(env.WorkDir, ".faber"))
			// At the end, every run left with a view shows from it what a
			// replay of its log shows (checkViews).
			env.Defer(func() {
				if _, problems := checkViews(filepath.Join(env.WorkDir, ".faber")); len(problems) > 0 {
					env.T().Fatal(strings.Join(problems, "\n"))
				}
			})
			env.Setenv("FABER_REGISTRY", "on")
			env.Setenv("NO_COLOR", "1")
			env.Setenv("TERM", "dumb")
			env.Setenv("CI", "")
			// Slurm's client commands find the cluster through SLURM_CONF
			// (scripts/slurm-cluster.sh prints it).
			if v := os.Getenv("SLURM_CONF"); v != "" {
				env.Setenv("SLURM_CONF", v)
			}
			// Grid Engine's find theirs through these (scripts/sge-cluster.sh
			// prints them).
			for _, k := range []string{"SGE_ROOT", "SGE_CELL", "SGE_QMASTER_PORT", "SGE_EXECD_PORT"} {
				if v := os.Getenv(k); v != "" {
					env.Setenv(k, v)
				}
			}
			return nil
		},
		RequireExplicitExec: true,
		Condition:           scriptCondition,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"lastrun":  cmdLastRun,
			"jsonpath": cmdJSONPath,
			"gaps":     cmdGaps,
			"code":     cmdCode,
			"seqcheck": cmdSeqCheck,
			"normjson": cmdNormJSON,
			"corrupt":  cmdCorrupt,
			"backdate": cmdBackdate,
			"padplan":  cmdPadPlan,
			"browser":  cmdBrowser,
		},
	})
}

// cmdLastRun sets $RUN to the newest top-level run id in the state dir; with
// -plan, to the newest run of plan NAME, child runs included.
//
//	lastrun [-plan NAME] [VAR]
func cmdLastRun(ts *testscript.TestScript, neg bool, args []string) {
	plan := ""
	if len(args) > 1 && args[0] == "-plan" {
		plan, args = args[1], args[2:]
	}
	name := "RUN"
	if len(args) > 0 {
		name = args[0]
	}
	dir := ts.Getenv("FABER_STATE_DIR")
	if dir == "" {
		dir = ts.MkAbs(".faber") // faber's default, in the script's current directory
	}
	metas, err := state.List(dir)
	if err != nil || len(metas) == 0 {
		if neg {
			return
		}
		ts.Fatalf("lastrun: no run found (%v)", err)
	}
	// Child runs of sub-plan steps are not what a script means by "the run".
	top := metas[:0]
	for _, m := range metas {
		if plan == "" && m.ParentRunID == "" || plan != "" && m.Plan == plan {
			top = append(top, m)
		}
	}
	if len(top) == 0 {
		if neg {
			return
		}
		ts.Fatalf("lastrun: no run of plan %q found", plan)
	}
	if neg {
		ts.Fatalf("lastrun: unexpected run %s", top[0].RunID)
	}
	ts.Setenv(name, top[0].RunID)
}

// cmdBackdate moves a run's start time back by AGE (7d, 36h, as prune's
// --older-than reads it) in its meta.json: what faber would have written had
// the run started AGE earlier. list and prune take a run's start from there.
//
//	backdate RUN AGE
func cmdBackdate(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: backdate RUN AGE")
	}
	d, err := run.ParseAge(args[1])
	if err != nil {
		ts.Fatalf("backdate: %v", err)
	}
	dir := ts.Getenv("FABER_STATE_DIR")
	m, err := state.ReadMeta(dir, args[0])
	if err != nil {
		ts.Fatalf("backdate: %v", err)
	}
	m.StartedAt = m.StartedAt.Add(-d)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		ts.Fatalf("backdate: %v", err)
	}
	ts.Check(os.WriteFile(filepath.Join(state.RunDir(dir, args[0]), "meta.json"), b, 0o644))
}

// cmdPadPlan pads a plan file with a YAML comment until it is SIZE bytes
// long: a plan file of any size, without a fixture of that size.
//
//	padplan FILE SIZE
func cmdPadPlan(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: padplan FILE SIZE")
	}
	size, err := strconv.Atoi(args[1])
	if err != nil {
		ts.Fatalf("padplan: %v", err)
	}
	path := ts.MkAbs(args[0])
	b, err := os.ReadFile(path)
	ts.Check(err)
	if len(b)+3 > size {
		ts.Fatalf("padplan: %s is %d bytes already", args[0], len(b))
	}
	pad := append([]byte("\n# "), bytes.Repeat([]byte("x"), size-len(b)-3)...)
	ts.Check(os.WriteFile(path, append(b, pad...), 0o644))
}

// cmdJSONPath prints the value at a path in a JSON file (or of every line of
// a JSON-lines file with -lines). A path is dot-separated: names, [N] indexes,
// and [key=value] selectors that pick the first array element whose key
// equals value. Strings print raw; other values as JSON.
//
//	jsonpath [-lines] FILE PATH
func cmdJSONPath(ts *testscript.TestScript, neg bool, args []string) {
	lines := false
	if len(args) > 0 && args[0] == "-lines" {
		lines, args = true, args[1:]
	}
	if len(args) != 2 {
		ts.Fatalf("usage: jsonpath [-lines] FILE PATH")
	}
	data := ts.ReadFile(args[0])
	docs := []string{data}
	if lines {
		docs = strings.Split(strings.TrimSpace(data), "\n")
	}
	for _, d := range docs {
		var v any
		if err := json.Unmarshal([]byte(d), &v); err != nil {
			ts.Fatalf("jsonpath: %s: %v", args[0], err)
		}
		got, err := jsonPath(v, args[1])
		if err != nil {
			if lines {
				continue
			}
			ts.Fatalf("jsonpath: %v", err)
		}
		if s, ok := got.(string); ok {
			fmt.Fprintln(ts.Stdout(), s)
		} else {
			b, _ := json.Marshal(got)
			fmt.Fprintln(ts.Stdout(), string(b))
		}
	}
}

func jsonPath(v any, path string) (any, error) {
	path = strings.ReplaceAll(path, "[", ".[")
	for _, part := range strings.Split(path, ".") {
		if part == "" {
			continue
		}
		if strings.HasPrefix(part, "[") && strings.HasSuffix(part, "]") {
			sel := part[1 : len(part)-1]
			arr, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("%s: not an array", part)
			}
			if k, want, ok := strings.Cut(sel, "="); ok {
				found := false
				for _, el := range arr {
					if m, ok := el.(map[string]any); ok && fmt.Sprint(m[k]) == want {
						v, found = el, true
						break
					}
				}
				if !found {
					return nil, fmt.Errorf("%s: no element", part)
				}
				continue
			}
			i, err := strconv.Atoi(sel)
			if err != nil || i < 0 || i >= len(arr) {
				return nil, fmt.Errorf("%s: bad index", part)
			}
			v = arr[i]
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: not an object", part)
		}
		if v, ok = m[part]; !ok {
			return nil, fmt.Errorf("%s: no such key", part)
		}
	}
	return v, nil
}

// cmdGaps checks that consecutive RFC 3339 timestamps (one per line) in FILE
// are at least D apart: a lower bound, which a busy machine cannot break.
//
//	gaps FILE D
func cmdGaps(ts *testscript.TestScript, neg bool, args []string) {
	min, err := time.ParseDuration(args[1])
	if err != nil {
		ts.Fatalf("gaps: %v", err)
	}
	var prev time.Time
	for i, l := range strings.Fields(ts.ReadFile(args[0])) {
		t, err := time.Parse(time.RFC3339Nano, l)
		if err != nil {
			ts.Fatalf("gaps: line %d: %v", i+1, err)
		}
		if i > 0 && t.Sub(prev) < min {
			ts.Fatalf("gaps: line %d is only %s after the previous one", i+1, t.Sub(prev))
		}
		prev = t
	}
}

// cmdCorrupt damages files the way a failing disk or a stray hand would:
// scribble overwrites each whole file with random bytes (a fixed seed, so a
// failure can be replayed), empty truncates it to 0 bytes, remove deletes it
// (a directory with what it holds). Each GLOB must match something.
//
//	corrupt scribble|empty|remove GLOB...
func cmdCorrupt(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: corrupt scribble|empty|remove GLOB...")
	}
	rng := rand.New(rand.NewPCG(13, 3))
	for _, glob := range args[1:] {
		paths, _ := filepath.Glob(ts.MkAbs(glob))
		if len(paths) == 0 {
			ts.Fatalf("corrupt: nothing matches %s", glob)
		}
		for _, p := range paths {
			var err error
			switch args[0] {
			case "scribble":
				var b []byte
				if b, err = os.ReadFile(p); err == nil {
					for i := range b {
						b[i] = byte(rng.Uint32())
					}
					err = os.WriteFile(p, b, 0o644)
				}
			case "empty":
				err = os.Truncate(p, 0)
			case "remove":
				err = os.RemoveAll(p)
			default:
				ts.Fatalf("corrupt: unknown mode %q", args[0])
			}
			ts.Check(err)
		}
	}
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
//	kill PIDFILE                SIGKILL the process in PIDFILE
//	result STATUS MESSAGE       write {"status","message"} to $FABER_RESULT
//	stamp FILE                  append the current time (RFC 3339) to FILE
//	onterm FILE D [READY]       sleep D, but on SIGTERM create FILE and exit 3; create
//	                            READY as soon as SIGTERM would be caught
//	exitcode FILE PROG ARGS...  run PROG, passing on SIGINT/SIGTERM, and write its
//	                            exact exit code to FILE (for background commands)
//	gone PIDFILE D              wait until the process in PIDFILE has ended, at most D
//	abspaths FILE VAR...        write "VAR=value: absolute|RELATIVE|MISSING" per
//	                            variable, a path's kind as this process sees it
func fabertest(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "fabertest: missing command")
		return 2
	}
	// Arguments each command needs at least: a script that passes fewer
	// gets a usage error, not a Go panic in the middle of a step's output.
	need := map[string]int{"exit": 1, "sleep": 1, "argv-to": 1, "waitfile": 1, "alloc": 1, "fail-until": 3,
		"ticker": 2, "alive": 1, "kill": 1, "stamp": 1, "onterm": 2, "exitcode": 2, "gone": 2, "sparse": 2, "abspaths": 1, "result": 1, "samearray": 2}
	if n := need[args[0]]; len(args)-1 < n {
		fmt.Fprintf(os.Stderr, "fabertest %s: needs %d argument(s), got %d\n", args[0], n, len(args)-1)
		return 2
	}
	switch args[0] {
	case "exit":
		n, _ := strconv.Atoi(args[1])
		return n
	case "samearray":
		// samearray FILE...: each file says array=<the same non-empty id>.
		re := regexp.MustCompile(`array=(\S*)`)
		first := ""
		for _, f := range args[1:] {
			b, err := os.ReadFile(f)
			m := re.FindSubmatch(b)
			if err != nil || m == nil || len(m[1]) == 0 {
				fmt.Fprintf(os.Stderr, "fabertest samearray: %s names no array (%v)\n", f, err)
				return 1
			}
			if first == "" {
				first = string(m[1])
			} else if string(m[1]) != first {
				fmt.Fprintf(os.Stderr, "fabertest samearray: %s ran in array %s, not %s\n", f, m[1], first)
				return 1
			}
		}
		return 0
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
	case "alloc":
		// alloc MiB: touch that much memory, a page at a time, then exit 0.
		n, _ := strconv.Atoi(args[1])
		keep := make([][]byte, 0, n)
		for i := 0; i < n; i++ {
			b := make([]byte, 1<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = 1
			}
			keep = append(keep, b)
		}
		fmt.Printf("allocated %d MiB\n", len(keep))
		return 0
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
		pid, err := readPIDFile(args[1])
		if err != nil {
			return 1
		}
		if processAlive(pid) {
			return 0
		}
		return 1
	case "kill":
		pid, err := readPIDFile(args[1])
		if err != nil || killProcess(pid) != nil {
			return 1
		}
		return 0
	case "stamp":
		f, err := os.OpenFile(args[1], os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Fprintln(f, time.Now().Format(time.RFC3339Nano))
		f.Close()
		return 0
	case "onterm":
		// A step's own SIGTERM handling, without a shell between it and
		// the signal: under Slurm a shell can see its child die and exit
		// before its own SIGTERM (and so its trap) arrives.
		d, err := time.ParseDuration(args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		if len(args) > 3 {
			if err := os.WriteFile(args[3], nil, 0o644); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
		}
		select {
		case <-term:
			if err := os.WriteFile(args[1], nil, 0o644); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			return 3
		case <-time.After(d):
			return 0
		}
	case "exitcode":
		cmd := osexec.Command(args[2], args[3:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		sigs := make(chan os.Signal, 2)
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		go func() {
			for sig := range sigs {
				cmd.Process.Signal(sig)
			}
		}()
		cmd.Wait()
		code := cmd.ProcessState.ExitCode()
		if err := os.WriteFile(args[1], []byte(strconv.Itoa(code)+"\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		return code
	case "gone":
		d, _ := time.ParseDuration(args[2])
		for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if fabertest([]string{"alive", args[1]}) != 0 {
				return 0
			}
		}
		fmt.Fprintf(os.Stderr, "fabertest: the process in %s is still running after %s\n", args[1], d)
		return 1
	case "abspaths":
		var b strings.Builder
		for _, v := range args[2:] {
			val, ok := os.LookupEnv(v)
			kind := "absolute"
			switch {
			case !ok || val == "":
				kind = "MISSING"
			case !filepath.IsAbs(val):
				kind = "RELATIVE"
			}
			fmt.Fprintf(&b, "%s=%s: %s\n", v, val, kind)
		}
		if err := os.WriteFile(args[1], []byte(b.String()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		return 0
	case "sparse":
		// sparse FILE GiB: a file that reads as that many zero bytes and
		// takes no room (hashing it takes a long while).
		n, err := strconv.ParseInt(args[2], 10, 64)
		if err == nil {
			err = os.WriteFile(args[1], nil, 0o644)
		}
		if err == nil {
			err = os.Truncate(args[1], n<<30)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		return 0
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

// cmdCode runs a program and checks its exact exit code; its stdout and
// stderr are available to the stdout/stderr commands afterwards.
//
//	code N PROG [ARGS...]
func cmdCode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: code N PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("code: %v", err)
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if err != nil {
		var ee *osexec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("code: %v", err)
		}
		got = ee.ExitCode()
	}
	if (got == want) == neg {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// Volatile parts of event JSON: times, durations, run-id suffixes, process
// ids, and the script's work dir.
var (
	normTime  = regexp.MustCompile(`"(time|[a-z_]*_at)":"[^"]*"`)
	normDur   = regexp.MustCompile(`"(duration_ms|pid|pgid|wall_ms|user_ms|sys_ms|peak_rss_bytes)":\d+`)
	normRunID = regexp.MustCompile(`-\d{8}T\d{6}-[0-9a-f]{4}\b`)
)

// cmdNormJSON writes a JSON-lines file with its volatile parts replaced by
// fixed text, the rest byte for byte, for golden comparisons.
//
//	normjson IN OUT
func cmdNormJSON(ts *testscript.TestScript, neg bool, args []string) {
	s := ts.ReadFile(args[0])
	s = strings.ReplaceAll(s, ts.Getenv("WORK"), "$WORK")
	s = normTime.ReplaceAllString(s, `"$1":"TIME"`)
	s = normDur.ReplaceAllString(s, `"$1":0`)
	s = normRunID.ReplaceAllString(s, "-RUNID")
	if err := os.WriteFile(ts.MkAbs(args[1]), []byte(s), 0o644); err != nil {
		ts.Fatalf("normjson: %v", err)
	}
}

// cmdSeqCheck checks that the events of a JSON-lines file have seq 1, 2, 3…
// with no gap and no repeat.
//
//	seqcheck FILE
func cmdSeqCheck(ts *testscript.TestScript, neg bool, args []string) {
	for i, l := range strings.Split(strings.TrimSpace(ts.ReadFile(args[0])), "\n") {
		var e struct {
			Seq int `json:"seq"`
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			ts.Fatalf("seqcheck: line %d: %v", i+1, err)
		}
		if e.Seq != i+1 {
			ts.Fatalf("seqcheck: line %d has seq %d", i+1, e.Seq)
		}
	}
}

// scriptCondition knows [slurm]: a Slurm cluster is up for the Slurm
// scripts (FABER_SLURM=1 and sinfo answers; see scripts/slurm-cluster.sh),
// and [sge]: a Grid Engine cluster is up for the Grid Engine scripts
// (FABER_SGE=1 and qstat answers; see scripts/sge-cluster.sh).
func scriptCondition(cond string) (bool, error) {
	switch cond {
	case "race":
		// fabertest is this test binary: under the race detector its memory
		// is several times larger, so memory limits sized for it do not fit.
		return raceEnabled, nil
	case "cgroup":
		// An attempt can get a memory limit here (a cgroup faber makes).
		return exec.CgroupProbe() == nil, nil
	case "slurm":
		if os.Getenv("FABER_SLURM") != "1" {
			return false, nil
		}
		// Asked for but not answering fails the script instead of
		// skipping it, so that CI cannot pass without running them.
		if out, err := osexec.Command("sinfo", "-h").CombinedOutput(); err != nil {
			return false, fmt.Errorf("FABER_SLURM=1 but sinfo fails (%v: %s); start a cluster with scripts/slurm-cluster.sh start and export SLURM_CONF", err, bytes.TrimSpace(out))
		}
		return true, nil
	case "browser":
		return browserCondition()
	case "sge":
		if os.Getenv("FABER_SGE") != "1" {
			return false, nil
		}
		// As for [slurm]: asked for but not answering fails the script.
		if out, err := osexec.Command("qstat").CombinedOutput(); err != nil {
			return false, fmt.Errorf("FABER_SGE=1 but qstat fails (%v: %s); start a cluster with eval \"$(scripts/sge-cluster.sh start)\" (it exports SGE_ROOT, SGE_CELL and the ports)", err, bytes.TrimSpace(out))
		}
		return true, nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

// readPIDFile reads the process id a file holds (as `echo $! > f` writes it).
func readPIDFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}
