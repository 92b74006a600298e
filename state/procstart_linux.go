//go:build linux

package state

import (
	"bytes"
	"os"
	"strconv"
)

// procStartTime returns the start time of process pid as recorded by the kernel
// (field 22 of /proc/<pid>/stat, clock ticks since boot), or "" if it cannot be
// read. A pid can be reused after its process dies; pid plus start time cannot,
// so an owner record naming a live pid is only trusted when both match.
func procStartTime(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) is in parentheses and may itself contain spaces
	// and parentheses, so count fields from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ""
	}
	fields := bytes.Fields(b[i+1:])
	// After ')' come field 3 (state) onwards, so field 22 is at index 19.
	if len(fields) < 20 {
		return ""
	}
	return string(fields[19])
}
