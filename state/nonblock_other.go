//go:build !unix

package state

const oNonblock = 0
