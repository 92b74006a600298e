package state

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Child processes: the tests re-run this test binary with childEnv set to make
// a second process that owns a run, the way a second faber would.
const (
	childEnv    = "FABER_STATE_TEST_CHILD"
	childDirEnv = "FABER_STATE_TEST_DIR"
	childRunEnv = "FABER_STATE_TEST_RUN"
)

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		os.Exit(m.Run())
	case "hold":
		os.Exit(childHold())
	case "commits":
		os.Exit(childCommits())
	case "abandon":
		os.Exit(childAbandon())
	default:
		fmt.Fprintln(os.Stderr, "unknown child mode")
		os.Exit(2)
	}
}

// childHold owns the run until its stdin closes.
func childHold() int {
	s, err := Open(os.Getenv(childDirEnv), os.Getenv(childRunEnv), Options{Sync: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// bigSteps is how many step records a "big" commit of childCommits writes.
// With their padding they are too big for one transaction (a test checks).
const bigSteps = 3000

// childChange is commit seq of childCommits: event seq and step "s" =
// {"seq":N}; every 20th commit is "big" and also rewrites bigSteps records
// "b/<i>" = {"seq":N,"pad":...}, which takes the staged path.
func childChange(seq int64) Change {
	rec := []byte(`{"seq":` + strconv.FormatInt(seq, 10) + `}`)
	c := Change{Steps: map[string][]byte{"s": rec}}
	typ := "tick"
	if seq%20 == 0 {
		typ = "big"
		big := []byte(`{"seq":` + strconv.FormatInt(seq, 10) + `,"pad":"` + strings.Repeat("x", 500) + `"}`)
		for i := range bigSteps {
			c.Steps["b/"+strconv.Itoa(i)] = big
		}
	}
	ev, _ := json.Marshal(map[string]any{"seq": seq, "type": typ})
	c.Events = []Event{{Seq: seq, JSON: ev}}
	return c
}

// childCommits commits childChange(N) for N = last+1, ... until it is killed.
// It says "ready" after its first commit.
func childCommits() int {
	s, err := Open(os.Getenv(childDirEnv), os.Getenv(childRunEnv), Options{Sync: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	snap, err := s.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out := bufio.NewWriter(os.Stdout)
	for seq := snap.LastSeq + 1; ; seq++ {
		if err := s.Commit(childChange(seq)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if seq == snap.LastSeq+1 {
			fmt.Fprintln(out, "ready")
			out.Flush()
		}
	}
}

// startChild starts this test binary as a child in mode, owning run runID of
// stateDir, and waits for it to say "ready". The child is killed at cleanup.
func startChild(t *testing.T, mode, stateDir, runID string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+mode, childDirEnv+"="+stateDir, childRunEnv+"="+runID)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("child %s: got %q, %v; want ready", mode, line, err)
	}
	return cmd, stdin
}
