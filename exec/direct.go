package exec

import (
	"strings"

	"github.com/faber-run/faber/spec"
)

// Steps that need no shell (README, "Processes"): a run: script that is
// only plain words — no quoting, expansion, redirection, operator, variable
// or {var}, one line, run by the default shell — whose first word is a
// program (not a shell builtin or keyword) found in PATH, runs that program
// with those words, without `sh -c`: what the shell would have done, less
// one exec. The shell stays whenever the outcome could differ: another
// shell:, a plan or step env that sets PATH, a builtin, a program not found.

// plainByte reports whether c may stand in a plain word.
func plainByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("_./:=,+@%-", c) >= 0
}

// shellWords are the builtins and keywords of sh, dash and bash whose
// behaviour a program of the same name need not share (true and false do).
var shellWords = map[string]bool{
	".": true, ":": true, "[": true, "alias": true, "bg": true, "break": true, "case": true, "cd": true,
	"command": true, "continue": true, "declare": true, "do": true, "done": true, "echo": true, "elif": true,
	"else": true, "esac": true, "eval": true, "exec": true, "exit": true, "export": true, "fc": true, "fg": true,
	"fi": true, "for": true, "function": true, "getopts": true, "hash": true, "if": true, "in": true, "jobs": true,
	"kill": true, "let": true, "local": true, "newgrp": true, "printf": true, "pwd": true, "read": true,
	"readonly": true, "return": true, "select": true, "set": true, "shift": true, "source": true, "test": true,
	"then": true, "time": true, "times": true, "trap": true, "type": true, "typeset": true, "ulimit": true,
	"umask": true, "unalias": true, "unset": true, "until": true, "wait": true, "while": true,
}

// DirectWords returns the words of step s's run: script when it may run
// without a shell (see above, but for the PATH lookup), else nil.
func DirectWords(p *spec.Plan, s *spec.Step, script string) []string {
	if s.Shell != "" || p.Shell != "" || p.ShellFor(s) != "sh" {
		return nil
	}
	if _, ok := s.Env["PATH"]; ok {
		return nil
	}
	if _, ok := p.Env["PATH"]; ok {
		return nil
	}
	for i := 0; i < len(script); i++ {
		if c := script[i]; c != ' ' && c != '\t' && !plainByte(c) {
			return nil
		}
	}
	words := strings.Fields(script)
	if len(words) == 0 || shellWords[words[0]] || strings.Contains(words[0], "=") || strings.HasPrefix(words[0], "-") {
		return nil
	}
	return words
}
