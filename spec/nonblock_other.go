//go:build !unix

package spec

const oNonblock = 0
