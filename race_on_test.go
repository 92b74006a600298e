//go:build race

package main

// raceEnabled: the test binary (and so fabertest, which it also is) runs
// under the race detector, which multiplies its memory.
const raceEnabled = true
