//go:build windows

package exec

import (
	"os"
	osexec "os/exec"
	"strconv"
)

// setGroup is a no-op on Windows for now: faber kills the direct child only.
// TODO: Job Objects (SPEC §10) so that grandchildren die with the step.
func setGroup(cmd *osexec.Cmd) {}

func groupOf(cmd *osexec.Cmd) int { return cmd.Process.Pid }

func signalGroup(pgid int, kill bool) error {
	p, err := os.FindProcess(pgid)
	if err != nil {
		return nil
	}
	_ = p.Kill()
	return nil
}

func groupAlive(pgid int) bool { return false }

func exitStatus(ps *os.ProcessState) (int, int) { return ps.ExitCode(), 0 }

func signalName(n int) string { return strconv.Itoa(n) }

// ProcStart is unknown on Windows.
func ProcStart(pid int) string { return "" }

// KillLeftoverGroup kills process pgid if it still runs.
func KillLeftoverGroup(pgid int, pstart string) {
	if pgid > 0 {
		_ = signalGroup(pgid, true)
	}
}
