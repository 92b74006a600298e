package subst

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// hostileValues are values that would run, split, glob or break quoting if a shell
// ever parsed them. Every one that could run something would create the file X.
var hostileValues = []string{
	"plain",
	"",
	" ",
	"two words",
	"  lead and trail  ",
	"'; touch X; : > X; echo '",
	`"; touch X; : > X; echo "`,
	"$(touch X)$(: > X)",
	"`touch X``: >X`",
	"${IFS}$HOME$1$@$*$#$?$$",
	"$((1+1))",
	"a[$(: > X)]",
	"\n",
	"line1\nline2\n",
	"\n\ntrailing newlines\n\n",
	"EOF",
	"x\nEOF\n: > X\n",
	";|&*?[]<>(){}!#~=%^",
	"*",
	"-n",
	"-e",
	"--",
	"\xff\xfe",
	"\"",
	"\\",
	"'",
	`\'`,
	`'\''`,
	"\\\n",
	"a\\",
	"{v}",
	"{{x}}",
	"${FABER_SUB_v}",
	`"${FABER_SUB_v}"`,
	"'\"${FABER_SUB_v}\"'",
	"\t\r\x01\x7f",
	"crlf\r\n",
	"é日本\u202e",
	"nul\x00byte",
	"%s%n%d",
	"\\n\\t\\0101",
}

func TestScriptRender(t *testing.T) {
	vars := map[string]string{"v": "V", "w": "W", "evil": "$(touch X)"}
	tests := []struct {
		tmpl, want string
		env        []string
	}{
		{`printf '%s\n' {v}`, `printf '%s\n' "${FABER_SUB_v}"`, []string{"FABER_SUB_v=V"}},
		{`echo "{v}"`, `echo "${FABER_SUB_v}"`, nil},
		{`echo '{v}'`, `echo ''"${FABER_SUB_v}"''`, nil},
		{`echo "pre-{v}-post"`, `echo "pre-${FABER_SUB_v}-post"`, nil},
		{`echo 'a{v}b'`, `echo 'a'"${FABER_SUB_v}"'b'`, nil},
		{`echo $'a{v}b'`, `echo $'a'"${FABER_SUB_v}"$'b'`, nil},
		{`x={v}; echo "$x"`, `x="${FABER_SUB_v}"; echo "$x"`, nil},
		{`echo $(echo {v})`, `echo $(echo "${FABER_SUB_v}")`, nil},
		{`echo "$(printf %s {v})"`, `echo "$(printf %s "${FABER_SUB_v}")"`, nil},
		{`echo ${unset:-{v}}`, `echo ${unset:-"${FABER_SUB_v}"}`, nil},
		{`echo "${unset:-{v}}"`, `echo "${unset:-"${FABER_SUB_v}"}"`, nil},
		{`echo "${x#{v}}" ${x/{v}/{w}}`, `echo "${x#"${FABER_SUB_v}"}" ${x/"${FABER_SUB_v}"/"${FABER_SUB_w}"}`, nil},
		{"cat <<EOF\n{v} \"{v}\" '{v}' ${u:-{v}}\nEOF\n", "cat <<EOF\n${FABER_SUB_v} \"${FABER_SUB_v}\" '${FABER_SUB_v}' ${u:-${FABER_SUB_v}}\nEOF\n", nil},
		{`case {v} in {w}|x) ;; esac`, `case "${FABER_SUB_v}" in "${FABER_SUB_w}"|x) ;; esac`, []string{"FABER_SUB_v=V", "FABER_SUB_w=W"}},
		{`echo {v} # {w}`, `echo "${FABER_SUB_v}" # "${FABER_SUB_w}"`, nil},
		{`echo \\{v}`, `echo \\"${FABER_SUB_v}"`, nil},
		{`echo {{v}} {{ }} ${HOME} {v}{v}`, `echo {v} { } ${HOME} "${FABER_SUB_v}""${FABER_SUB_v}"`, []string{"FABER_SUB_v=V"}},
		{`[[ {v} == {w}* ]]`, `[[ "${FABER_SUB_v}" == "${FABER_SUB_w}"* ]]`, nil},
		{`x={v}; eval 'echo "$x"'; echo eval {v}`, `x="${FABER_SUB_v}"; eval 'echo "$x"'; echo eval "${FABER_SUB_v}"`, nil},
		{`printf -- {v} -v; [ "{v}" = -v ]; read x <<EOF` + "\n{v}\nEOF", `printf -- "${FABER_SUB_v}" -v; [ "${FABER_SUB_v}" = -v ]; read x <<EOF` + "\n${FABER_SUB_v}\nEOF", nil},
		{`local x={v}; a=({v})`, `local x="${FABER_SUB_v}"; a=("${FABER_SUB_v}")`, nil},
		{`echo ${x:?{v}} ${x^^{v}}`, `echo ${x:?"${FABER_SUB_v}"} ${x^^"${FABER_SUB_v}"}`, nil},
		{`echo {evil}`, `echo "${FABER_SUB_evil}"`, []string{"FABER_SUB_evil=$(touch X)"}},
		// Without references a script is returned as written, even when it does not parse.
		{`echo "${HOME}" {{x}} $((1+2))`, `echo "${HOME}" {x} $((1+2))`, []string{}},
		{`echo "unterminated {{`, `echo "unterminated {`, []string{}},
		{`if then fi {{`, `if then fi {`, []string{}},
		{"echo '\r\n{v}'\r{v}", "echo '\r\n'\"${FABER_SUB_v}\"''\r\"${FABER_SUB_v}\"", nil},
	}
	for _, tt := range tests {
		got, env, err := Script(tt.tmpl, vars)
		if err != nil || got != tt.want {
			t.Errorf("Script(%q) = %q, %v\n want %q", tt.tmpl, got, err, tt.want)
			continue
		}
		if tt.env != nil && !(len(tt.env) == 0 && len(env) == 0) && !reflect.DeepEqual(env, tt.env) {
			t.Errorf("Script(%q) env = %q, want %q", tt.tmpl, env, tt.env)
		}
	}
}

func TestScriptErrors(t *testing.T) {
	vars := map[string]string{"v": "V"}
	tests := []struct{ tmpl, err string }{
		{`echo {nope}`, "unknown variable {nope}"},
		{`# {nope}`, "unknown variable {nope}"},
		{`echo "{v}`, "cannot parse the script: 1:6: reached EOF without closing quote"},
		{`echo $(( {v} + 1 ))`, "cannot substitute {v} inside an arithmetic expression"},
		{`(( x = {v} ))`, "inside an arithmetic expression"},
		{`let x={v}`, "inside an arithmetic expression"},
		{`for (( i={v}; i<2; i++ )); do :; done`, "inside an arithmetic expression"},
		{`echo $(( $(echo {v}) ))`, "inside an arithmetic expression"},
		{`echo ${a[{v}]}`, "inside an array index"},
		{`a[{v}]=1`, "inside an array index"},
		{`a=([{v}]=1)`, "inside an array index"},
		{`echo ${x:{v}}`, "inside a ${var:offset:length} expansion"},
		{`echo $x{v}`, "inside a parameter name"},
		{`echo ${x{v}}`, "inside a parameter name"},
		{`echo ${x@{v}}`, "invalid @ expansion operator `{…}`"},
		{`{v}=1`, "inside a variable name"},
		{`export {v}`, "inside a variable name"},
		{`declare "{v}"`, "as a bare argument of declare"},
		{`f{v}() { :; }`, "inside a function name"},
		{`for {v} in a; do :; done`, "inside a loop variable name"},
		{`[[ {v} -eq 1 ]]`, "inside an arithmetic comparison (-eq)"},
		{`[[ -v {v} ]]`, "as the variable name of -v"},
		{`echo @({v})`, "inside an extended glob pattern"},
		{"echo `echo {v}`", "inside backquotes"},
		{`echo $"{v}"`, `inside $"..."`},
		{"cat <<'EOF'\n{v}\nEOF", "inside a quoted here-document (<<'EOF' expands nothing; use <<EOF) (line 2 of the script)"},
		{"cat <<\\EOF\n{v}\nEOF", "inside a quoted here-document"},
		{"cat <<{v}\nx\n{v}", "inside a here-document delimiter"},
		{"cat <<EOF\n${x#{v}}\nEOF", "inside a ${...} pattern or replacement in a here-document"},
		{"cat <<EOF\n${x:-'{v}'}\nEOF", "inside single quotes that are literal here"},
		{`echo "${x:-'{v}'}"`, "inside single quotes that are literal here"},
		{`echo \{v}`, "right after a backslash"},
		{`eval "echo {v}"`, "into code that eval runs"},
		{`eval "$(printf %s {v})"`, "into code that eval runs"},
		{`trap 'echo {v}' EXIT`, "into code that trap runs"},
		{`alias x='echo {v}'`, "into code that alias runs"},
		{`read -r {v}`, "as an argument of read, which takes variable names"},
		{`unset "{v}"`, "as an argument of unset"},
		{`printf -v {v} %s x`, "as the variable name of printf -v"},
		{`[ -v "{v}" ]`, "as the variable name of [ -v"},
		{`declare -n r={v}`, "into a name reference (declare -n)"},
		{`local -rn r="{v}"`, "into a name reference (local -rn)"},
		{"echo {v} \x00", "contains a NUL byte"},
		{"echo \r#{v} '", "cannot parse the script: 1:12: reached EOF without closing quote"}, // \r# is no comment
		{`echo "\{v}"`, "right after a backslash"},
		{`echo $'\{v}'`, "right after a backslash"},
		{"cat <<EOF\n\\{v}\nEOF", "right after a backslash"},
	}
	for _, tt := range tests {
		got, env, err := Script(tt.tmpl, vars)
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("Script(%q) = %q, %q, %v; want error containing %q", tt.tmpl, got, env, err, tt.err)
			continue
		}
		if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "FaberSubstToken") {
			t.Errorf("Script(%q) error = %q: want one line without internal tokens", tt.tmpl, err)
		}
	}
	// A single quote before a backslash is no escape: '\{v}' is fine.
	if got, _, err := Script(`echo '\{v}'`, vars); err != nil || got != `echo '\'"${FABER_SUB_v}"''` {
		t.Errorf(`Script('\{v}') = %q, %v`, got, err)
	}
}

// scriptCase is a template run by a real shell. The script calls the recording
// program "$REC"; want returns the invocations it must record for a value c
// (already cleaned).
type scriptCase struct {
	name     string
	tmpl     string
	stdin    bool // the recorder also records its stdin
	bashOnly bool
	want     func(c string) [][]string
}

func one(args ...string) [][]string { return [][]string{args} }

func trimNL(s string) string { return strings.TrimRight(s, "\n") }

var scriptCases = []scriptCase{
	{name: "bare", tmpl: `"$REC" {v}`, want: func(c string) [][]string { return one(c) }},
	{name: "printf", tmpl: `printf '%s\n' {v} >/dev/null; "$REC" {v}`, want: func(c string) [][]string { return one(c) }},
	{name: "double", tmpl: `"$REC" "{v}"`, want: func(c string) [][]string { return one(c) }},
	{name: "single", tmpl: `"$REC" '{v}'`, want: func(c string) [][]string { return one(c) }},
	{name: "double-affix", tmpl: `"$REC" "pre-{v}-post"`, want: func(c string) [][]string { return one("pre-" + c + "-post") }},
	{name: "single-affix", tmpl: `"$REC" 'a{v}b'`, want: func(c string) [][]string { return one("a" + c + "b") }},
	{name: "mixed", tmpl: `"$REC" {v}{v} '{v}'"{v}"{v} '{v}''{v}'`, want: func(c string) [][]string { return one(c+c, c+c+c, c+c) }},
	{name: "assign", tmpl: `x={v}; "$REC" "$x"`, want: func(c string) [][]string { return one(c) }},
	{name: "export", tmpl: `export Y={v}; "$REC" "$Y"`, want: func(c string) [][]string { return one(c) }},
	{name: "local", tmpl: `f() { local z={v}; "$REC" "$z"; }; f`, want: func(c string) [][]string { return one(c) }},
	{name: "cmdsubst", tmpl: `$("$REC" {v})`, want: func(c string) [][]string { return one(c) }},
	{name: "cmdsubst-in-double", tmpl: `"$REC" "$(printf %s {v})" "$(printf '%s' '{v}')"`, want: func(c string) [][]string { return one(trimNL(c), trimNL(c)) }},
	{name: "cmdsubst-assign", tmpl: `"$REC" "$(x="{v}"; printf %s "$x")"`, want: func(c string) [][]string { return one(trimNL(c)) }},
	{name: "default", tmpl: `"$REC" ${unset:-{v}} "${unset:-{v}}" "${unset-"{v}"}" ${unset:-'{v}'}`, want: func(c string) [][]string { return one(c, c, c, c) }},
	{name: "pattern", tmpl: `foo=ab{v}cd; "$REC" "${foo#ab{v}}" "${foo%{v}cd}" ${foo##ab{v}} "${foo%%"{v}"cd}"`, want: func(c string) [][]string { return one("cd", "ab", "cd", "ab") }},
	{name: "case", tmpl: `case x{v}y in x{v}y) "$REC" match;; *) "$REC" nomatch;; esac`, want: func(c string) [][]string { return one("match") }},
	{name: "case-literal", tmpl: `case zz in {v}) "$REC" match;; *) "$REC" nomatch;; esac`, want: func(c string) [][]string {
		if c == "zz" {
			return one("match")
		}
		return one("nomatch")
	}},
	{name: "test", tmpl: `if [ "{v}" = '{v}' ] && [ -n "x{v}" ]; then "$REC" ok; fi`, want: func(c string) [][]string { return one("ok") }},
	{name: "function-args", tmpl: `f() { "$REC" "$@"; }; f {v} "{v}"`, want: func(c string) [][]string { return one(c, c) }},
	{name: "for", tmpl: `for a in {v} "{v}"; do "$REC" "$a"; done`, want: func(c string) [][]string { return [][]string{{c}, {c}} }},
	{name: "subshell", tmpl: `( "$REC" {v} )`, want: func(c string) [][]string { return one(c) }},
	{name: "comment", tmpl: "\"$REC\" {v} # {v} $(touch X)\n# {v}", want: func(c string) [][]string { return one(c) }},
	{name: "heredoc", stdin: true, tmpl: "\"$REC\" <<EOF\nbefore {v} after\n\"{v}\" '{v}'\n${unset:-{v}}\nEOF",
		want: func(c string) [][]string {
			return one("before " + c + " after\n\"" + c + "\" '" + c + "'\n" + c + "\n")
		}},
	{name: "heredoc-dash", stdin: true, tmpl: "\"$REC\" <<-EOF\n\t{v}\n\tEOF", want: func(c string) [][]string { return one(c + "\n") }},
	{name: "carriage-return", tmpl: "\"$REC\" x\r{v} '\r\n{v}'\r", want: func(c string) [][]string { return one("x\r"+c, "\r\n"+c+"\r") }},
	{name: "dollar-single", bashOnly: true, tmpl: `"$REC" $'a\t{v}b'`, want: func(c string) [][]string { return one("a\t" + c + "b") }},
	{name: "double-bracket", bashOnly: true, tmpl: `[[ x{v} == x{v} && {v} == "{v}" && ! {v}x == '{v}' ]] && "$REC" eq`, want: func(c string) [][]string { return one("eq") }},
	{name: "regex", bashOnly: true, tmpl: `[[ "{v}" =~ ^{v}$ ]] && "$REC" eq`, want: func(c string) [][]string { return one("eq") }},
	{name: "array", bashOnly: true, tmpl: `a=({v} "{v}"); "$REC" "${a[@]}"`, want: func(c string) [][]string { return one(c, c) }},
	{name: "replace", bashOnly: true, tmpl: `foo=a{v}b; "$REC" "${foo/{v}/[{v}]}" ${foo//{v}}`, want: func(c string) [][]string {
		if c == "" {
			return one("ab", "ab") // an empty pattern replaces nothing
		}
		return one("a["+c+"]b", "ab")
	}},
}

// TestScriptExec runs every template with every hostile value under sh and bash:
// the program gets each value byte for byte where the template put it, and nothing
// in a value runs.
func TestScriptExec(t *testing.T) {
	rec := recorder(t)
	for _, shell := range testShells(t) {
		isBash := filepath.Base(shell) == "bash"
		for _, sc := range scriptCases {
			if sc.bashOnly && !isBash {
				continue
			}
			t.Run(filepath.Base(shell)+"/"+sc.name, func(t *testing.T) {
				t.Parallel()
				// One shell run for all values keeps the test fast; only on a
				// mismatch is each value run alone, to name the one that failed.
				var parts []string
				vars := map[string]string{}
				var want [][]string
				for i, v := range hostileValues {
					name := "v" + strconv.Itoa(i)
					parts = append(parts, renameRef(sc.tmpl, "v", name))
					vars[name] = v
					want = append(want, sc.want(CleanValue(v))...)
				}
				script, env, err := Script(strings.Join(parts, "\n"), vars)
				if err != nil {
					t.Fatalf("Script: %v", err)
				}
				if got := runRecorded(t, rec, shell, script, env, sc.stdin); reflect.DeepEqual(got, want) {
					return
				}
				for _, v := range hostileValues {
					script, env, err := Script(sc.tmpl, map[string]string{"v": v})
					if err != nil {
						t.Fatalf("Script(%q): %v", sc.tmpl, err)
					}
					got := runRecorded(t, rec, shell, script, env, sc.stdin)
					if want := sc.want(CleanValue(v)); !reflect.DeepEqual(got, want) {
						t.Errorf("value %q:\nscript %q\ngot  %q\nwant %q", v, script, got, want)
					}
				}
			})
		}
	}
}

// renameRef returns tmpl with each reference {from} written as {to}.
func renameRef(tmpl, from, to string) string {
	var b strings.Builder
	for _, s := range scan(tmpl) {
		if s.kind == segRef && s.name == from {
			b.WriteString("{" + to + "}")
			continue
		}
		b.WriteString(s.text)
	}
	return b.String()
}

// runRecorded runs script with shell -c in a fresh directory and returns what the
// recorder saw; it fails the test if the script fails or leaves any other file.
func runRecorded(t *testing.T, rec, shell, script string, env []string, stdin bool) [][]string {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "rec")
	cmd := exec.Command(shell, "-c", script)
	cmd.Dir = dir
	cmd.Env = append(recorderEnv(out), "REC="+rec)
	if stdin {
		cmd.Env = append(cmd.Env, stdinEnv+"=1")
	}
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s -c %q: %v: %s", filepath.Base(shell), script, err, stderr.String())
	}
	onlyFiles(t, dir, "rec")
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("%s -c %q recorded nothing: %v", filepath.Base(shell), script, err)
	}
	return parseRecords(t, data)
}
