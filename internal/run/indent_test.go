package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
	var w pieces
	if err := WriteIndentedJSON(&w, compact); err != nil {
		t.Fatal(err)
	}
	if got := w.Bytes(); !bytes.Equal(got, append(want.Bytes(), '\n')) {
		t.Fatalf("WriteIndentedJSON(%.200s) =\n%.200s\nwant\n%.200s", compact, got, want.Bytes())
	}
}

// pieces is a bytes.Buffer that counts the writes it takes.
type pieces struct {
	bytes.Buffer
	n int
}

func (p *pieces) Write(b []byte) (int, error) {
	p.n++
	return p.Buffer.Write(b)
}

// A big document goes out in pieces of about indentPiece bytes, strings
// cut anywhere across them, and the same bytes as IndentJSON's; the first
// error of the writer is the result, and nothing is written after it.
func TestWriteIndentedJSONInPieces(t *testing.T) {
	type step struct {
		ID     string         `json:"id"`
		Error  string         `json:"error"`
		Needs  []string       `json:"needs"`
		Extra  map[string]any `json:"extra"`
		Escape string         `json:"escape"`
	}
	var steps []step
	for i := range 5000 {
		steps = append(steps, step{
			ID:     fmt.Sprintf("s%d", i),
			Error:  strings.Repeat("x", i%97) + `"quoted" \ {[,:]}`,
			Needs:  []string{},
			Extra:  map[string]any{"n": i, "a": []any{i, "b", map[string]any{}}},
			Escape: strings.Repeat(`\"`, i%7),
		})
	}
	compact, err := json.Marshal(map[string]any{"run": "r", "steps": steps})
	if err != nil {
		t.Fatal(err)
	}
	if len(compact) < 8*indentPiece {
		t.Fatalf("the document is %d bytes: too small to need pieces", len(compact))
	}
	checkIndent(t, compact)
	var w pieces
	if err := WriteIndentedJSON(&w, compact); err != nil {
		t.Fatal(err)
	}
	if least := w.Len() / (indentPiece + 4096); w.n < least {
		t.Fatalf("%d bytes in %d writes: want at least %d", w.Len(), w.n, least)
	}
	boom := errors.New("boom")
	f := &failing{after: 2, err: boom}
	if err := WriteIndentedJSON(f, compact); err != boom || f.writes != 3 {
		t.Fatalf("WriteIndentedJSON to a writer failing at its 3rd write: %v after %d writes", err, f.writes)
	}
}

type failing struct {
	after, writes int
	err           error
}

func (f *failing) Write(b []byte) (int, error) {
	f.writes++
	if f.writes > f.after {
		return 0, f.err
	}
	return len(b), nil
}
