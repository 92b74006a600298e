//go:build !unix

package exec

const oNonblock = 0
