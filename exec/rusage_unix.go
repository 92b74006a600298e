//go:build unix

package exec

import (
	"os"
	"runtime"
	"syscall"
	"time"
)

// rusage reads wait4's accounting of a finished leader: its own and its
// waited-for descendants' CPU time, and the largest RSS any one of them had.
func rusage(ps *os.ProcessState, u *usage) {
	if ps == nil {
		return
	}
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return
	}
	u.user = time.Duration(ru.Utime.Nano())
	u.sys = time.Duration(ru.Stime.Nano())
	u.peakRSS = int64(ru.Maxrss)
	if runtime.GOOS != "darwin" {
		u.peakRSS *= 1024 // KiB on Linux and the BSDs, bytes on macOS
	}
	u.source = SourceRusage
}
