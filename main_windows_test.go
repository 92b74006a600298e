package main

import "os"

// processAlive reports whether pid runs. On Windows, FindProcess opens the
// process, which fails once it has ended.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}

// killProcess ends pid.
func killProcess(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
