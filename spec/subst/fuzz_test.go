package subst

import (
	"bytes"
	"flag"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// maxFuzzValue caps fuzzed values: {error} is at most 1000 bytes, and long inputs
// only make the fuzzer's minimization crawl.
const maxFuzzValue = 1024

// fuzzScriptTmpl puts {v} in every context Script supports. r is a shell function
// that prints its argument count and arguments, each NUL-terminated, so one cheap
// shell process checks them all without starting any other program.
const fuzzScriptTmpl = `r() { printf '%s\000' "$#"; for a do printf '%s\000' "$a"; done; }
r {v}; r "{v}"; r '{v}'; r "p-{v}-q" 'a{v}b' {v}{v}
x={v}; r "$x" "${unset:-{v}}" ${unset:-{v}} ${unset:-'{v}'}
r "$(printf %s {v})"
foo=ab{v}cd; r "${foo#ab{v}}" "${foo%{v}cd}"
case ab{v}cd in ab{v}cd) r yes;; *) r no;; esac
r {v} # {v}
while IFS= read -r line; do r "$line"; done <<EOF
<{v}>
EOF
`

// fuzzScriptWant is what fuzzScriptTmpl prints for the cleaned value c, followed by
// the line that checks Quote.
func fuzzScriptWant(c string) [][]string {
	want := [][]string{
		{c}, {c}, {c}, {"p-" + c + "-q", "a" + c + "b", c + c},
		{c, c, c, c},
		{strings.TrimRight(c, "\n")},
		{"cd", "ab"},
		{"yes"},
		{c},
	}
	for _, line := range strings.Split("<"+c+">", "\n") {
		want = append(want, []string{line})
	}
	return append(want, []string{c})
}

// isFuzzing reports whether go test runs with -fuzz, when each input should cost
// one process rather than one per shell.
func isFuzzing() bool {
	f := flag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
}

// FuzzScript checks the safety property of SPEC §4.1 for run: scripts: whatever the
// value's bytes, the shell delivers exactly the value (NUL read as U+FFFD) where the
// template put it, and nothing in it runs.
func FuzzScript(f *testing.F) {
	for _, v := range hostileValues {
		f.Add([]byte(v))
	}
	shells := lookShells()
	if len(shells) == 0 {
		f.Skip("no sh in PATH")
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		value = value[:min(len(value), maxFuzzValue)]
		v := string(value)
		script, env, err := Script(fuzzScriptTmpl, map[string]string{"v": v})
		if err != nil {
			t.Fatalf("Script: %v", err)
		}
		c := CleanValue(v)
		script += "r " + Quote(c) + "\n"
		run := shells
		if isFuzzing() {
			i := len(value) % len(shells)
			run = shells[i : i+1]
		}
		for _, shell := range run {
			dir := t.TempDir()
			cmd := exec.Command(shell, "-c", script)
			cmd.Dir = dir
			// No PATH: the script must need nothing but shell builtins, and a value
			// that ran a command would fail loudly as well as leave a file.
			cmd.Env = append([]string{"PATH=/nonexistent", "LC_ALL=C"}, env...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil || stderr.Len() > 0 {
				t.Fatalf("%s: %v: %s\nscript: %q", filepath.Base(shell), err, stderr.String(), script)
			}
			if got, want := parseRecords(t, out), fuzzScriptWant(c); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: value %q\ngot  %q\nwant %q", filepath.Base(shell), v, got, want)
			}
			onlyFiles(t, dir)
		}
	})
}

// fuzzArgvShapes are handler templates; each gives its argv for a cleaned value.
var fuzzArgvShapes = []struct {
	tmpl string
	want func(c string) []string
}{
	{`/cmd --problem "{v}"`, func(c string) []string { return []string{"/cmd", "--problem", c} }},
	{`/cmd --problem {v}`, func(c string) []string { return []string{"/cmd", "--problem", c} }},
	{`/cmd --problem '{v}'`, func(c string) []string { return []string{"/cmd", "--problem", c} }},
	{`/cmd a{v}b "x {v} y" 'z{v}w' {v}{v} \{v}`, func(c string) []string {
		return []string{"/cmd", "a" + c + "b", "x " + c + " y", "z" + c + "w", c + c, c}
	}},
}

// FuzzArgv checks the safety property for handler commands: split first,
// substituted second, so any value is exactly one argument, byte for byte; and the
// shell-quoted line recorded for it (Join) splits back into the same words.
func FuzzArgv(f *testing.F) {
	for i, v := range hostileValues {
		f.Add([]byte(v), uint8(i))
	}
	f.Fuzz(func(t *testing.T, value []byte, shape uint8) {
		value = value[:min(len(value), maxFuzzValue)]
		v := string(value)
		s := fuzzArgvShapes[int(shape)%len(fuzzArgvShapes)]
		got, err := Argv(s.tmpl, map[string]string{"v": v})
		if err != nil {
			t.Fatalf("Argv(%q): %v", s.tmpl, err)
		}
		c := CleanValue(v)
		if want := s.want(c); !reflect.DeepEqual(got, want) {
			t.Fatalf("Argv(%q) with %q = %q, want %q", s.tmpl, v, got, want)
		}
		if !utf8.ValidString(c) {
			return // the shell parser reads UTF-8 only; templates come from UTF-8 plans
		}
		back, err := Words(Join(got))
		if err != nil || !reflect.DeepEqual(back, got) {
			t.Fatalf("Words(Join(%q)) = %q, %v", got, back, err)
		}
	})
}

// FuzzTemplate feeds arbitrary templates to every function: none may panic, and
// their answers must agree with each other.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{
		"", "{v}", "{{v}}", "${v}", `/x --e "{error}" '{a}' {b}`, "a; b {v}", "echo $(( {v} ))",
		"cat <<EOF\n{v}\nEOF", "cat <<'E'\n{v}\nE", `echo "${x:-'{v}'}"`, `echo \{v}`, "`{v}`",
		`case {v} in {w}) ;; esac`, "{v}=1", `$'{v}'`, "a'{'v}", "\xff{v}", "{v}\\", "{a}{b}{c}",
		fuzzScriptTmpl,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tmpl string) {
		tmpl = tmpl[:min(len(tmpl), 4*maxFuzzValue)]
		refs := Names(tmpl)
		vars := map[string]string{}
		for _, r := range refs {
			if !strings.HasPrefix(tmpl[r.Offset:], "{"+r.Name+"}") {
				t.Fatalf("Names(%q): %v does not point at the reference", tmpl, r)
			}
			vars[r.Name] = "<" + r.Name + ">"
		}
		if _, err := Expand(tmpl, vars); err != nil {
			t.Fatalf("Expand(%q): %v", tmpl, err)
		}

		words, werr := Words(tmpl)
		argv, aerr := Argv(tmpl, vars)
		if (werr == nil) != (aerr == nil) || len(words) != len(argv) {
			t.Fatalf("Words(%q) = %q, %v but Argv = %q, %v", tmpl, words, werr, argv, aerr)
		}
		for _, e := range []error{werr, aerr} {
			if e != nil && strings.Contains(e.Error(), "\n") {
				t.Fatalf("error on more than one line: %q", e)
			}
		}

		script, env, err := Script(tmpl, vars)
		if err != nil {
			if len(refs) == 0 {
				t.Fatalf("Script(%q) without references failed: %v", tmpl, err)
			}
			if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "FaberSubstToken") {
				t.Fatalf("Script(%q) error %q", tmpl, err)
			}
			return
		}
		if len(refs) == 0 {
			if want, _ := Expand(tmpl, nil); script != want || env != nil {
				t.Fatalf("Script(%q) without references = %q, %q", tmpl, script, env)
			}
			return
		}
		if len(env) != len(vars) {
			t.Fatalf("Script(%q) env = %q, want one entry per name in %v", tmpl, env, vars)
		}
		if strings.Contains(script, "FaberSubstToken") && !strings.Contains(tmpl, "FaberSubstToken") {
			t.Fatalf("Script(%q) = %q: a token was left", tmpl, script)
		}
		// What we produce must be a script the shell can read (which, like sh, takes
		// a carriage return as an ordinary character).
		if si, ok := pickStandIns(script); ok {
			script = strings.ReplaceAll(script, "\r", si.cr)
		}
		if _, err := parseShell(script); err != nil {
			t.Fatalf("Script(%q) = %q, which does not parse: %v", tmpl, script, err)
		}
	})
}
