package run

import "github.com/faber-run/faber/state"

// NewestRunsRead is how many runs List reads for filter f (with f.Limit):
// the test checks that --limit reads few of them.
func NewestRunsRead(stateDir string, f ListFilter) int {
	ids, err := state.RunIDs(stateDir)
	if err != nil {
		panic(err)
	}
	dir := state.OpenRuns(stateDir)
	defer dir.Close()
	return len(newestRuns(stateDir, dir, ids, f))
}
