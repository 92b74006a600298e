package spec

import (
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	"github.com/faber-run/faber/spec/subst"
)

// Kinds of resolved commands, as returned by ResolveCommand.
const (
	KindCommands = "commands" // the plan's commands: map
	KindFile     = "file"     // an executable under .faber/commands next to the plan
	KindAgent    = "agent"    // the plan's agent: with the slash line as last argument
	KindProgram  = "program"  // the first word is an existing absolute file path
)

var commandName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]*$`)

// IsCommand reports whether a run: or on_failure string is a /command line:
// its first word starts with '/'. A first word that is an existing absolute
// file path is a program, not a /command (SPEC §10), so a run: script such
// as `/opt/tools/build.sh && echo done` stays a shell script.
func IsCommand(s string) bool {
	first := firstWord(s)
	return strings.HasPrefix(first, "/") && !isAbsFile(first)
}

// isProgramLine reports whether the first word of s is an existing absolute
// file path.
func isProgramLine(s string) bool {
	return isAbsFile(firstWord(s))
}

// firstWord returns s up to its first blank, after leading blanks.
func firstWord(s string) string {
	s = strings.TrimLeft(s, " \t\r\n")
	if i := strings.IndexAny(s, " \t\r\n"); i >= 0 {
		return s[:i]
	}
	return s
}

func isAbsFile(path string) bool {
	if !filepath.IsAbs(path) {
		return false
	}
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// ShellFor returns the shell that runs s's run: script: the step's, else the
// plan's, else sh (cmd when the plan was loaded for Windows).
func (p *Plan) ShellFor(s *Step) string {
	switch {
	case s != nil && s.Shell != "":
		return s.Shell
	case p.Shell != "":
		return p.Shell
	}
	goos := p.goos
	if goos == "" {
		goos = runtime.GOOS
	}
	if goos == "windows" {
		return "cmd"
	}
	return "sh"
}

// lookup resolves the first word of a /command line (SPEC §4.1) without
// substituting anything. It returns the kind and, for KindCommands the
// registry key, for KindFile and KindProgram the file path.
func (p *Plan) lookup(first string) (kind, target string, err error) {
	if isAbsFile(first) {
		return KindProgram, first, nil
	}
	if !strings.HasPrefix(first, "/") {
		return "", "", fmt.Errorf("%q is not a /command", first)
	}
	name := first[1:]
	if !commandName.MatchString(name) {
		return "", "", fmt.Errorf("%s is not a valid /command name (/[A-Za-z0-9][A-Za-z0-9._:/-]*)", first)
	}
	if _, ok := p.Commands[first]; ok {
		return KindCommands, first, nil
	}
	rel := ".faber/commands/" + strings.ReplaceAll(name, ":", "/")
	fileNote := "no executable " + rel
	if safeRel(rel) {
		path := filepath.Join(p.Dir, filepath.FromSlash(rel))
		if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
			if executable(fi.Mode()) {
				return KindFile, path, nil
			}
			fileNote = rel + " is not executable"
		}
	}
	if len(p.Agent) > 0 {
		return KindAgent, "", nil
	}
	return "", "", fmt.Errorf("%s resolves nowhere: not in commands:, %s, and no agent: set", first, fileNote)
}

// safeRel reports whether a slash path stays below its starting directory.
func safeRel(rel string) bool {
	for _, part := range strings.Split(rel, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	return true
}

func executable(m os.FileMode) bool {
	return runtime.GOOS == "windows" || m&0o111 != 0
}

// ResolveCommand resolves a /command line (a step's run: that IsCommand, an
// on_failure command, or a structured handler's command) into the argv to
// execute without a shell, substituting vars (SPEC §4.1). The line is split
// into words first and each word substituted second, so no value can become
// more than one argument. args are a structured handler's arguments (nil
// otherwise), appended as --key value (--key alone for a flag).
//
// Resolution, first match wins: an existing absolute file path is a program
// (kind "program"); the plan's commands: map (its command line, then the
// arguments; a relative program path resolves against the plan directory;
// kind "commands"); an executable .faber/commands/NAME next to the plan, with
// ':' read as '/' (kind "file"); the plan's agent: argv with the whole
// substituted slash line appended as one argument, its words joined with
// POSIX shell quoting (kind "agent"); otherwise an error.
func (p *Plan) ResolveCommand(line string, args []Arg, vars map[string]string) (argv []string, kind string, err error) {
	words, err := subst.Words(line)
	if err != nil {
		return nil, "", fmt.Errorf("command %q: %w", line, err)
	}
	if len(words) == 0 {
		return nil, "", fmt.Errorf("command is empty")
	}
	kind, target, err := p.lookup(words[0])
	if err != nil {
		return nil, "", err
	}
	// Argv substitutes the parsed words, so quote removal can neither make
	// nor hide a {reference} (Words then Expand would read '{'v} as {v}).
	subbed, err := subst.Argv(line, vars)
	if err != nil {
		return nil, "", fmt.Errorf("command %s: %w", words[0], err)
	}
	rest := make([]string, 0, len(subbed)-1+2*len(args))
	rest = append(rest, subbed[1:]...)
	for _, a := range args {
		switch {
		case a.Omit:
		case a.Flag:
			rest = append(rest, "--"+a.Key)
		default:
			v, err := subst.Expand(a.Value, vars)
			if err != nil {
				return nil, "", fmt.Errorf("command %s: args: %s: %w", words[0], a.Key, err)
			}
			rest = append(rest, "--"+a.Key, v)
		}
	}
	switch kind {
	case KindProgram, KindFile:
		return append([]string{target}, rest...), kind, nil
	case KindCommands:
		base, err := subst.Argv(p.Commands[target], vars)
		if err != nil {
			return nil, "", fmt.Errorf("commands: %s: %w", target, err)
		}
		if len(base) == 0 {
			return nil, "", fmt.Errorf("commands: %s: the command line is empty", target)
		}
		base[0] = p.programPath(base[0])
		return append(base, rest...), kind, nil
	default: // KindAgent
		argv = append([]string(nil), p.Agent...)
		argv[0] = p.programPath(argv[0])
		slash := subst.Join(append([]string{words[0]}, rest...))
		return append(argv, slash), kind, nil
	}
}

// programPath resolves a relative program path that names a directory
// (./x, scripts/x) against the plan directory; bare names are left for a
// PATH lookup.
func (p *Plan) programPath(prog string) string {
	if filepath.IsAbs(prog) || !strings.ContainsAny(prog, `/`+string(filepath.Separator)) || p.Dir == "" {
		return prog
	}
	return filepath.Join(p.Dir, filepath.FromSlash(prog))
}

// checkProgram says why a command's program cannot run, or "": a path (one
// with a slash, relative to the plan's directory) must be an executable
// file; a bare name must be found in PATH. A handler the plan names is
// always run, or the plan is rejected before anything starts (SPEC).
func (p *Plan) checkProgram(prog string) string {
	if !strings.ContainsAny(prog, `/`+string(filepath.Separator)) {
		if _, err := osexec.LookPath(prog); err != nil {
			return fmt.Sprintf("program %s is not found in PATH", prog)
		}
		return ""
	}
	path := p.programPath(prog)
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Sprintf("%s does not exist (resolved to %s)", prog, path)
	case !fi.Mode().IsRegular():
		return fmt.Sprintf("%s is not a file (resolved to %s)", prog, path)
	case !executable(fi.Mode()):
		return fmt.Sprintf("%s is not executable (resolved to %s; chmod +x it)", prog, path)
	}
	return ""
}
