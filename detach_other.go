//go:build !unix

package main

import (
	"os"
	"syscall"
)

// detachSupported: on Windows faber run's live view runs the run in its own
// process, as before; q leaves the view and the run goes on in that
// terminal (README "The live view").
const detachSupported = false

func ownerAttr() *syscall.SysProcAttr { return nil }

func closeOnExec(int) {}

func interruptSignal(*os.ProcessState) bool { return false }
