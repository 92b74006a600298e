//go:build !linux

package exec

// groupRecordDelay is 0: without a scan of processes by environment, the
// recorded process group is resume's only way to the leftovers, so it is
// recorded as soon as the attempt starts.
const groupRecordDelay = 0

// killRunProcesses finds leftover processes by environment on Linux only;
// elsewhere the recorded process groups (killLeftoverGroup) are used.
func killRunProcesses(runID string, spare []string) int { return 0 }
