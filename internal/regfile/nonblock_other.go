//go:build !unix

package regfile

const oNonblock = 0
