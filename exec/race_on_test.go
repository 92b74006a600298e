//go:build race

package exec

// raceEnabled: the race detector makes sync.Pool drop what is put back at
// random, so tests of pooled buffers cannot count allocations under it.
const raceEnabled = true
