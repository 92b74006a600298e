//go:build !darwin

package exec

import "os"

// physicalMemory is MemTotal of /proc/meminfo in bytes, or 0 where there is
// none (not Linux, or unreadable): no memory limit.
func physicalMemory() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	return memTotal(data)
}
