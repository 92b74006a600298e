package run

import (
	"bytes"
	"encoding/json"
	"testing"
)

var indentCases = []string{
	`{}`, `[]`, `null`, `1`, `"s"`, `{"a":[]}`, `{"a":{},"b":[{}],"c":[[],[1,2]]}`,
	`{"id":"x","error":"a \"quoted\" {not: [json]}, \\ \u003c\u2028","n":-1.5e3,"t":true,"f":false,"z":null}`,
	`[{"id":"s1","needs":[],"remediation":null,"attempts":[{"attempt":1,"resources":{"peak_rss_bytes":1}}]}]`,
	`{"k\\\"":"\\\\"}`, `["\\", "x"]`,
}

// IndentJSON writes what json.Indent does (json.MarshalIndent is Marshal
// then Indent), byte for byte.
func TestIndentJSON(t *testing.T) {
	for _, c := range indentCases {
		checkIndent(t, []byte(c))
	}
}

func FuzzIndentJSON(f *testing.F) {
	for _, c := range indentCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v any
		if json.Unmarshal(b, &v) != nil {
			return
		}
		m, err := json.Marshal(v)
		if err != nil {
			return
		}
		checkIndent(t, m)
	})
}

func checkIndent(t *testing.T, compact []byte) {
	t.Helper()
	var want bytes.Buffer
	if err := json.Indent(&want, compact, "", "  "); err != nil {
		t.Fatalf("%s: %v", compact, err)
	}
	if got := IndentJSON(nil, compact); !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("IndentJSON(%s) =\n%s\nwant\n%s", compact, got, want.Bytes())
	}
}
