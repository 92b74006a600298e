package run

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/faber-run/faber/exec"
)

// TestDecodeEntry: decodeEntry's result is json.Unmarshal's, for the
// entries faber writes and for what it does not write (escapes, other
// spellings of a key, null, numbers that are not plain integers, the
// mask, repeated keys, damage).
func TestDecodeEntry(t *testing.T) {
	full := &exec.CacheEntry{
		Attempt: 2, DefHash: "5f78466bcfc02b07624ccfef", Inputs: map[string]string{"in/1.txt": "08c5", "x (no match)": "-"},
		Key: "0c03", KeyOut: "ab", Mode: "content", Needs: map[string]string{"a": "def:12"}, Outputs: map[string]string{},
		Plan: "p", RunID: "p-20261127T110240-5c2c", Seq: 13150, Step: "t[1]", Time: "2026-11-27T11:02:59.984272056Z",
	}
	written, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	masked := *full
	masked.Mask = [][]byte{[]byte("s3cret")}
	withMask, _ := json.Marshal(&masked)
	escaped := *full
	escaped.Inputs = map[string]string{"dir with \"quote\"/é\t.txt": "1", "<a&b>": "2"}
	withEscapes, _ := json.Marshal(&escaped)
	cases := []string{
		string(written), string(withMask), string(withEscapes),
		`{}`, ` { "attempt" : 1 , "inputs" : { } } `, "{\n\"seq\":-3}\n",
		`{"Attempt":1}`, `{"ATTEMPT":1,"attempt":2}`, `{"inputs":null}`, `{"plan":null}`,
		`{"attempt":1.0}`, `{"attempt":1e2}`, `{"attempt":01}`, `{"attempt":-}`, `{"attempt":99999999999999999999}`,
		`{"attempt":"1"}`, `{"plan":1}`, `{"inputs":{"a":1}}`, `{"inputs":{"a":"1","a":"2"}}`,
		`{"inputs":{"a":"1"},"inputs":{"b":"2"}}`, `{"plan":"a","plan":"b"}`, `{"extra":[1,{"x":null}],"plan":"a"}`,
		`{"plan":"a\u0062"}`, `{"plan":"é"}`, "{\"plan\":\"a\x7f\"}", "{\"plan\":\"\xff\"}",
		`{"plan":"a"`, `{"plan":"a",}`, `{"plan":"a"} x`, `{"plan" "a"}`, `[]`, `null`, ``, `{"inputs":{"a":"1",}}`,
		`{"inputs":{"a"}}`, `{"seq":1,}`, string(written[:len(written)/2]),
	}
	for _, c := range cases {
		var want exec.CacheEntry
		wantErr := json.Unmarshal([]byte(c), &want)
		got, err := decodeEntry([]byte(c))
		if (err != nil) != (wantErr != nil) {
			t.Errorf("%s: error %v, json.Unmarshal's %v", c, err, wantErr)
			continue
		}
		if err == nil && !reflect.DeepEqual(*got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c, *got, want)
		}
	}
	if e, ok := fastEntry(written); !ok || !reflect.DeepEqual(e, full) {
		t.Errorf("an entry faber writes is not read directly: %v %+v", ok, e)
	}
}
