package importer

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestTorcUserDataMapping: every way a Torc job reads or writes user data,
// and what it becomes.
func TestTorcUserDataMapping(t *testing.T) {
	in := `name: n
user_data:
  - {name: cfg, is_ephemeral: true}
  - {name: res}
  - {name: init, data: {z: 1, a: "x<y"}}
  - {name: unused, data: 3}
  - {name: both, data: [1, 2.5, true, null]}
jobs:
  - name: make
    command: |
      torc-client -f json user-data update ${user_data.output.cfg} -d '{"k": 1}'
      echo "both=2" >> "$FABER_OUTPUTS"
    output_user_data_regexes: ["^bo"]
  - name: calc
    command: python calc.py --out ${user_data.output.res}
  - name: use
    command: |
      torc user-data get ${user_data.input.cfg} | jq .data
      run --init '${user_data.input.init}' --res "${user_data.input.res}" {x}
    input_user_data: [both]
  - name: waits
    command: "true"
    input_user_data_regexes: ["^c"]
`
	out, warns := mustConvert(t, FormatTorc, in)
	for _, want := range []string{
		"context:\n  init: '{\"a\":\"x<y\",\"z\":1}'\n",
		"faber_torc_user_data_update() {{",
		"      faber_torc_user_data_update cfg -d '{{\"k\": 1}}'\n",
		"      python calc.py --out res\n",
		"      printf '{{\"name\": \"cfg\", \"data\": %s}}\\n' {steps.make.outputs.cfg} | jq .data\n",
		"      run --init '{init}' --res \"{steps.calc.outputs.res}\" {{x}}\n",
		"  - id: use\n",
		"    needs: [make, calc]\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "faber_torc_user_data_update() {{") != 1 {
		t.Errorf("the function is defined in the step that calls it, only:\n%s", out)
	}
	if !strings.Contains(out, "  - id: waits\n    name: waits\n    run: |-\n      export TORC_OUTPUT_DIR=\"$FABER_OUTPUT_DIR\"\n      true\n    needs: [make]\n") {
		t.Errorf("waits needs make (input_user_data_regexes):\n%s", out)
	}
	got := strings.Join(warns, "\n")
	for _, want := range []string{
		`w.yaml:3:17: user_data: cfg: is_ephemeral: dropped`,
		`w.yaml:6:26: user_data: unused: data: dropped: no job reads it`,
		`w.yaml:7:24: user_data: both: data: dropped: job "make" writes it`,
		`w.yaml:15:14: job "calc": command: ${user_data.output.res} becomes the name res: faber has no user data store`,
		`w.yaml:20:23: job "use": reads user data "both", but its command does not name ${user_data.input.both}`,
		`w.yaml:23:31: job "waits": reads user data "cfg", but its command does not name`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, `job "make": writes user data`) {
		t.Errorf("make publishes both itself (FABER_OUTPUTS both=): no warning wanted:\n%s", got)
	}
}

func TestTorcUserDataErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"name: n\nuser_data: [{name: a-b}]\njobs:\n  - {name: p, command: x, output_user_data: [a-b]}\n",
			`w.yaml:4:46: job "p": writes user data "a-b": the name of a value a step publishes must match [A-Za-z_][A-Za-z0-9_]*`},
		{"name: n\nuser_data: [{name: Cfg, data: 1}]\njobs:\n  - {name: p, command: 'x ${user_data.input.Cfg}'}\n",
			`w.yaml:2:20: user_data: Cfg: its data becomes the context variable Cfg, and a context variable's name must match [a-z_][a-z0-9_]*`},
		{"name: n\nuser_data: [{name: x}]\njobs:\n  - {name: p, command: 'x ${user_data.input.x} ${user_data.output.x}'}\n",
			`w.yaml:4:24: job "p": reads user data "x", which it writes`},
		{"name: n\nuser_data: [{name: x, size: 2}]\njobs:\n  - {name: p, command: x}\n",
			`w.yaml:2:23: user_data: x: unknown Torc user data field "size"`},
		{"name: n\nuser_data: [{name: x}]\njobs:\n  - {name: p, command: x, input_user_data_regexes: ['(']}\n",
			`w.yaml:4:53: job "p": input_user_data_regexes: bad regexp "("`},
		{"name: n\nuser_data: [{name: x}]\njobs:\n  - {name: p, command: x, output_user_data: [y]}\n",
			`w.yaml:4:46: job "p": output_user_data: no user_data entry named "y"`},
		{"name: n\nuser_data: [{name: x}]\njobs:\n  - {name: p.q, command: x, output_user_data: [x]}\n",
			`job "p.q": writes user data "x": its step id "p.q" has a '.'`},
		{"name: n\nuser_data: [{name: x}]\njobs:\n  - {name: p, command: 'x ${user_data.x}'}\n",
			`job "p": command: "${user_data.x}": not a user data reference faber converts`},
	}
	for _, tt := range tests {
		wantConvertError(t, FormatTorc, tt.in, tt.want)
	}
}

func TestNodeJSON(t *testing.T) {
	for in, want := range map[string]string{
		`{b: [1, "2", 2.5, true, null], a: "<&>"}`: `{"a":"<&>","b":[1,"2",2.5,true,null]}`,
		`"text"`: `"text"`,
		`7`:      `7`,
	} {
		n := parseNode(t, in)
		got, err := nodeJSON(n)
		if err != nil || got != want {
			t.Errorf("nodeJSON(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := nodeJSON(parseNode(t, `{[1]: x}`)); err == nil {
		t.Errorf("a mapping with a non-string key: no error")
	}
}

func parseNode(t *testing.T, s string) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(s), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Content[0]
}

// FuzzTorcUserData converts arbitrary bytes as a Torc workflow, from seeds
// that pass user data every way.
func FuzzTorcUserData(f *testing.F) {
	for _, s := range []string{
		"name: n\nuser_data: [{name: c}, {name: s, data: {a: [1, x]}}]\njobs:\n  - {name: p, command: 'torc user-data update ${user_data.output.c} --data \"$v\"'}\n  - {name: q, command: 'torc user-data get ${user_data.input.c} ${user_data.input.s} {i}', parameters: {i: '1:2'}}\n",
		"name: n\nuser_data: [{name: c, is_ephemeral: true}]\njobs:\n  - {name: p, command: 'x ${user_data.output.c} ${user_data.', output_user_data_regexes: ['^c', '(']}\n  - {name: q, command: y, input_user_data: [c, d]}\n",
		`{"name": "n", "user_data": [{"name": "c", "data": {"k": [1, 2.5, null]}}], "jobs": [{"name": "a", "command": "echo '${user_data.input.c}'"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzConvert(t, FormatTorc, "workflow.yaml", data)
	})
}
