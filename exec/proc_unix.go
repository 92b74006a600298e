//go:build unix

package exec

import (
	"errors"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"syscall"
)

// setGroup makes the command the leader of a new process group, so that a
// timeout or cancel reaches every process the step started, not just its shell.
func setGroup(cmd *osexec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// procGroup is a started command's process group.
type procGroup struct{ id int }

// newGroup returns the group of a started command (its leader's pid).
func newGroup(cmd *osexec.Cmd) procGroup { return procGroup{id: cmd.Process.Pid} }

// signal sends SIGTERM (SIGKILL when kill) to every process of the group.
func (g procGroup) signal(kill bool) error { return signalGroup(g.id, kill) }

func (g procGroup) release() {}

// signalGroup sends sig to every process of the group; "no such process" is not an error.
func signalGroup(pgid int, kill bool) error {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// groupAlive reports whether any process of the group still exists.
func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// exitStatus maps a finished process state to faber's exit code: the exit
// status, or 128+N for death by signal N.
func exitStatus(ps *os.ProcessState) (code int, signal int) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), int(ws.Signal())
	}
	return ps.ExitCode(), 0
}

// signalName names a signal number for error messages.
func signalName(n int) string {
	s := syscall.Signal(n).String()
	if s == "" || strings.HasPrefix(s, "signal ") {
		return strconv.Itoa(n)
	}
	return strconv.Itoa(n) + " (" + s + ")"
}

// ProcStart returns a token identifying when process pid started (Linux: the
// starttime field of /proc/pid/stat), or "" when unknown. A pid whose token
// changed is another process, so a leftover group is only killed when the
// token still matches.
func ProcStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// killLeftoverGroup terminates process group pgid left behind by a dead faber,
// if its leader is still the process that started at pstart (or, when the
// leader is gone, if any member remains: members of a group whose leader died
// keep the pgid, and a new group cannot reuse it while they live).
func killLeftoverGroup(pgid int, pstart string) {
	if pgid <= 0 {
		return
	}
	if cur := ProcStart(pgid); cur != "" && pstart != "" && cur != pstart {
		return // the pid now belongs to an unrelated process
	}
	if !groupAlive(pgid) {
		return
	}
	_ = signalGroup(pgid, false)
	for i := 0; i < 50 && groupAlive(pgid); i++ {
		sleepMs(20)
	}
	_ = signalGroup(pgid, true)
}

// privateResult makes the result file f (opened at path, fi its Stat) 0600:
// only when path itself is that file, with no other name, so that a step
// that put a symlink or a hard link there never has faber change another
// file's mode.
func privateResult(f *os.File, fi os.FileInfo, path string) {
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Nlink != 1 {
		return
	}
	if lfi, err := os.Lstat(path); err != nil || !os.SameFile(fi, lfi) || lfi.Mode()&os.ModeSymlink != 0 {
		return
	}
	_ = f.Chmod(0o600)
}

// atFileLimit turns Go's fork error at the open-file limit into the
// limit's own: when a descriptor the child gets (its stdin, stdout or
// stderr) is the last the limit allows, Go's child moves its error pipe
// above it first and fails with EBADF, a closed file faber never closed.
// It is the limit, so it says "too many open files" and is scarce
// (README, "Scarce resources"); any other err is returned as it is.
func atFileLimit(err error, files ...*os.File) error {
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Err != syscall.EBADF {
		return err
	}
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) != nil {
		return err
	}
	for _, f := range files {
		if f != nil && uint64(f.Fd())+1 >= l.Cur {
			return &os.PathError{Op: pe.Op, Path: pe.Path, Err: syscall.EMFILE}
		}
	}
	return err
}
