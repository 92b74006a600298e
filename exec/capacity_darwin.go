package exec

import "golang.org/x/sys/unix"

// physicalMemory is the hw.memsize sysctl in bytes, or 0 when it cannot be
// read.
func physicalMemory() int64 {
	n, err := unix.SysctlUint64("hw.memsize")
	if err != nil || n == 0 || n > 1<<62 {
		return 0
	}
	return int64(n)
}
