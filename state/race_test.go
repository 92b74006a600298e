//go:build race

package state

// The race detector slows Badger down about tenfold, so fewer kill rounds.
const crashRounds = 3
