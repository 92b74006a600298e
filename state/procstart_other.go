//go:build !linux

package state

// procStartTime is best effort: without /proc there is no cheap portable source,
// so it returns "" and callers fall back to a plain "does the pid exist" check.
func procStartTime(pid int) string { return "" }
