//go:build unix

package main

import (
	"os"
	osexec "os/exec"
	"testing"
)

// TestOwnerExitInterrupted: an owner that Ctrl-C ended before it had its
// signal handlers ends the foreground with 130 and no message, as an
// in-process faber would; one killed otherwise is a state problem naming
// resume.
func TestOwnerExitInterrupted(t *testing.T) {
	for _, c := range []struct {
		sig  os.Signal
		code int
		msg  bool
	}{{os.Interrupt, exitInterrupted, false}, {os.Kill, exitState, true}} {
		cmd := osexec.Command("sleep", "10")
		if err := cmd.Start(); err != nil {
			t.Skip(err)
		}
		_ = cmd.Process.Signal(c.sig)
		_ = cmd.Wait()
		err := ownerExit(cmd, "plan-20261128T000000-abcd")
		if got := exitCode(err); got != c.code {
			t.Errorf("%v: exit %d, want %d", c.sig, got, c.code)
		}
		if msg := err.Error(); (msg != "") != c.msg {
			t.Errorf("%v: message %q", c.sig, msg)
		}
	}
}
