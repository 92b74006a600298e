package run

import (
	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/spec"
)

// PeakText is a step's last attempt's peak memory for `faber status`:
// "48.2MiB", "64MiB/64MiB oom" with its limit and cause, or "-".
func PeakText(st *exec.StepState) string {
	if len(st.Attempts) == 0 {
		return "-"
	}
	a := st.Attempts[len(st.Attempts)-1]
	if a.Resources == nil {
		return "-"
	}
	t := spec.FormatSize(a.Resources.PeakRSSBytes)
	if a.Resources.MemoryLimitBytes > 0 {
		t += "/" + spec.FormatSize(a.Resources.MemoryLimitBytes)
	}
	if a.Cause != "" {
		t += " " + a.Cause
	}
	return t
}
