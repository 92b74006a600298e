package state

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestMetaKeepsBytes: --set values and secrets that are not UTF-8 come back
// from meta.json byte for byte; UTF-8 ones stay readable JSON.
func TestMetaKeepsBytes(t *testing.T) {
	m := Meta{RunID: "r", Sets: map[string]string{"raw": "a\xff\xfeb\xc3", "text": "héllo", "nul": "x\x00y"}, Secrets: []string{"s\xff3cret", "plain-secret"}}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var got Meta
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Sets, m.Sets) {
		t.Errorf("sets: %q, want %q", got.Sets, m.Sets)
	}
	if len(got.Secrets) != 2 || !(got.Secrets[0] == "plain-secret" || got.Secrets[1] == "plain-secret") {
		t.Errorf("secrets: %q", got.Secrets)
	}
	var raw map[string]any
	json.Unmarshal(b, &raw)
	if raw["sets"].(map[string]any)["text"] != "héllo" {
		t.Errorf("a UTF-8 value is not kept as text: %s", b)
	}
	// meta.json of a run written before: no base64 fields.
	if err := json.Unmarshal([]byte(`{"run_id":"r","sets":{"a":"b"}}`), &got); err != nil || got.Sets["a"] != "b" {
		t.Errorf("old meta.json: %v %+v", err, got)
	}
}
