package subst

import "strings"

// Quote quotes s for a POSIX shell. Words made only of [A-Za-z0-9_@%+=:,./-] are
// returned unchanged, because they mean the same to every shell; anything else is
// put in single quotes, the one quoting in which nothing is special, with each
// single quote of s written as a closed quote, an escaped quote and a new quote:
//
//	it's       ->  'it'\''s'
//	(empty)    ->  ''
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for i := 0; i < len(s) && safe; i++ {
		safe = isSafeByte(s[i])
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func isSafeByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("_@%+=:,./-", c) >= 0
}

// Join joins words with spaces, each Quoted, into a line a POSIX shell splits back
// into exactly those words. It is how an argv is shown and recorded
// (handler_command) and how a slash-command line is handed to an agent.
func Join(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = Quote(w)
	}
	return strings.Join(q, " ")
}

// isPOSIXShellName reports whether base names a shell whose -c accepts Script's
// output: POSIX sh and the shells that extend it.
func isPOSIXShellName(base string) bool {
	switch base {
	case "sh", "bash", "dash", "ash", "ksh", "ksh93", "mksh", "lksh", "pdksh", "oksh",
		"loksh", "zsh", "yash", "posh", "bosh":
		return true
	}
	return false
}

// IsPOSIXShell reports whether shell, a name or a path such as "bash" or "/bin/sh",
// is a POSIX shell, where Script's output is valid. Other shells (fish, csh, cmd,
// PowerShell, ...) quote differently, so a caller must not hand them a script with
// substituted values.
func IsPOSIXShell(shell string) bool {
	// Accept Windows-style paths and executable names too: "C:\msys\bin\bash.exe".
	base := shell
	if i := strings.LastIndexAny(base, `/\`); i >= 0 {
		base = base[i+1:]
	}
	base = strings.TrimSuffix(strings.ToLower(base), ".exe")
	if isPOSIXShellName(base) {
		return true
	}
	// Versioned names such as bash5 or bash-5.2.
	trimmed := strings.TrimRight(base, "0123456789.")
	trimmed = strings.TrimSuffix(trimmed, "-")
	return trimmed != base && isPOSIXShellName(trimmed)
}
