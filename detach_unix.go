//go:build unix

package main

import (
	"os"
	"syscall"
)

// detachSupported: faber run in a terminal runs its run in a background
// owner (detach.go).
const detachSupported = true

// ownerAttr puts the background owner in a session of its own: no
// controlling terminal, so closing the terminal (SIGHUP) or Ctrl-C at it
// does not reach it.
func ownerAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// closeOnExec keeps fd from the steps the owner starts.
func closeOnExec(fd int) { syscall.CloseOnExec(fd) }

// interruptSignal reports whether the process ended of SIGINT.
func interruptSignal(ps *os.ProcessState) bool {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGINT
}
