//go:build windows

package exec

import (
	"os"
	osexec "os/exec"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// setGroup starts the step in a new process group, so that console signals
// meant for faber do not reach it directly; the Job Object made in newGroup
// is what ends the step and every process it started (SPEC §10).
func setGroup(cmd *osexec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
}

// procGroup is a started command's Job Object: terminating the job ends the
// process and all its descendants.
type procGroup struct {
	id  int
	job windows.Handle
}

// newGroup puts a started command in a new Job Object that kills its
// processes when the last handle closes. Processes the command started
// before the assignment escape it; such a race needs a suspended start,
// which os/exec does not offer.
func newGroup(cmd *osexec.Cmd) procGroup {
	g := procGroup{id: cmd.Process.Pid}
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return g
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	_, _ = windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)))
	ph, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(g.id))
	if err == nil {
		err = windows.AssignProcessToJobObject(job, ph)
		windows.CloseHandle(ph)
	}
	if err != nil {
		windows.CloseHandle(job)
		return g
	}
	g.job = job
	return g
}

// signal ends the group: Windows has no SIGTERM for console programs, so
// both a stop and a kill terminate the job (exit code 137, as a SIGKILL).
func (g procGroup) signal(kill bool) error {
	if g.job != 0 {
		return windows.TerminateJobObject(g.job, 137)
	}
	return signalGroup(g.id, kill)
}

func (g procGroup) release() {
	if g.job != 0 {
		windows.CloseHandle(g.job)
	}
}

func signalGroup(pid int, kill bool) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	_ = p.Kill()
	return nil
}

func exitStatus(ps *os.ProcessState) (int, int) { return ps.ExitCode(), 0 }

func signalName(n int) string { return strconv.Itoa(n) }

// ProcStart is unknown on Windows.
func ProcStart(pid int) string { return "" }

// killLeftoverGroup kills process pid if it still runs (its Job Object died
// with the faber that held it, which killed its processes already).
func killLeftoverGroup(pgid int, pstart string) {
	if pgid > 0 {
		_ = signalGroup(pgid, true)
	}
}

// privateResult does nothing: no Unix modes on Windows.
func privateResult(f *os.File, fi os.FileInfo, path string) {}

// atFileLimit is err: Windows has no open-file limit of this kind.
func atFileLimit(err error, files ...*os.File) error { return err }
