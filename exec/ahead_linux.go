package exec

import "golang.org/x/sys/unix"

// aheadFiles: log files are made ahead (makeLogsAhead) where they can be
// moved into place without replacing what is there (renameNoReplace).
const aheadFiles = true

// renameNoReplace renames from to to, failing (EEXIST) if to exists.
func renameNoReplace(from, to string) error {
	return unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
}
