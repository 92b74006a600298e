//go:build !race

package state

// crashRounds is how many times TestCrashRecovery kills an owner.
const crashRounds = 6
