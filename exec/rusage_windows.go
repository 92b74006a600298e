//go:build windows

package exec

import (
	"os"
)

// rusage reads the CPU time of a finished process; Windows reports no peak
// memory through os.ProcessState.
func rusage(ps *os.ProcessState, u *usage) {
	if ps == nil {
		return
	}
	u.user, u.sys = ps.UserTime(), ps.SystemTime()
	u.source = SourceRusage
}
