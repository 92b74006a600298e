//go:build !windows

package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// processAlive reports whether pid runs (a zombie does not).
func processAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err != nil || !strings.Contains(string(st), ") Z ")
}

// killProcess sends pid SIGKILL.
func killProcess(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
