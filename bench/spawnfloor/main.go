//go:build unix

// Command spawnfloor is the floor under goal 3's chains (bench/goals28.sh):
// a Go program that starts `true` N times, one after the other, the way
// faber starts a step that needs no shell (os/exec, the program looked up
// in PATH once, standard input /dev/null opened once, output appended to a
// file, a process group of its own), and does nothing else: no plan, no
// state, no commit, no log directory. Its time against the shell loop says
// how much of a chain's time any Go orchestrator pays before it records
// anything.
//
//	spawnfloor N OUTFILE
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "spawnfloor:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("usage: spawnfloor N OUTFILE")
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 1 {
		return fmt.Errorf("N %q: want a count of 1 or more", args[0])
	}
	prog, err := exec.LookPath("true")
	if err != nil {
		return err
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer null.Close()
	out, err := os.OpenFile(args[1], os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	for range n {
		cmd := exec.Command(prog)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = null, out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Run(); err != nil {
			return err
		}
	}
	return nil
}
