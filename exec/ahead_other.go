//go:build !linux

package exec

import "errors"

// aheadFiles: without a rename that never replaces (see ahead_linux.go),
// only log directories are made ahead.
const aheadFiles = false

func renameNoReplace(from, to string) error { return errors.ErrUnsupported }
