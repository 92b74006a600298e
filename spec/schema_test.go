package spec

import (
	"encoding/json"
	"reflect"
	"sort"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestSchema(t *testing.T) {
	data, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	if s["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %v", s["$schema"])
	}
	defs, _ := s["$defs"].(map[string]any)
	props := func(obj any) []string {
		m, _ := obj.(map[string]any)
		p, _ := m["properties"].(map[string]any)
		var keys []string
		for k := range p {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return keys
	}
	// Every key the decoder accepts, per object, is in the schema.
	for _, tc := range []struct {
		def string
		typ reflect.Type
	}{
		{"", reflect.TypeFor[rawPlan]()},
		{"step", reflect.TypeFor[rawStep]()},
		{"end", reflect.TypeFor[rawEnd]()},
		{"phase", reflect.TypeFor[rawPhase]()},
		{"handler", reflect.TypeFor[rawHandler]()},
		{"rule", reflect.TypeFor[rawRule]()},
		{"resultHandling", reflect.TypeFor[rawResultHandling]()},
		{"structured", reflect.TypeFor[rawStructured]()},
		{"slurm", reflect.TypeFor[rawSlurm]()},
	} {
		var obj any = s
		if tc.def != "" {
			obj = defs[tc.def]
		}
		want := tableOf(tc.typ).keys()
		sort.Strings(want)
		if got := props(obj); !reflect.DeepEqual(got, want) {
			t.Errorf("schema %q properties = %v, want %v", tc.def, got, want)
		}
	}
	// Independently of the structs: every key used in the kitchen-sink plan
	// (which the parser accepts) appears in the schema at the same place.
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(kitchenSink), &doc); err != nil {
		t.Fatal(err)
	}
	has := func(obj any, key string) bool {
		for _, k := range props(obj) {
			if k == key {
				return true
			}
		}
		return false
	}
	root := doc.Content[0]
	for i := 0; i < len(root.Content); i += 2 {
		if !has(s, root.Content[i].Value) {
			t.Errorf("plan key %q missing from schema", root.Content[i].Value)
		}
	}
	var steps []*yaml.Node
	for i := 0; i < len(root.Content); i += 2 {
		if root.Content[i].Value == "phases" {
			for _, ph := range root.Content[i+1].Content {
				for j := 0; j < len(ph.Content); j += 2 {
					if ph.Content[j].Value == "steps" {
						steps = append(steps, ph.Content[j+1].Content...)
					}
				}
			}
		}
	}
	for _, st := range steps {
		for j := 0; j < len(st.Content); j += 2 {
			if !has(defs["step"], st.Content[j].Value) {
				t.Errorf("step key %q missing from schema", st.Content[j].Value)
			}
		}
	}
	// Specific fields the SPEC names.
	for _, k := range []string{"name", "description", "context", "jobs", "shell", "env", "use_pending_failed", "stop_mode", "agent", "commands", "failure_handlers", "handler_timeout", "kill_grace", "executor", "slurm", "phases", "steps", "end"} {
		if !has(s, k) {
			t.Errorf("plan field %q missing", k)
		}
	}
	for _, k := range []string{"id", "name", "description", "run", "prompt", "timeout", "needs", "env", "dir", "shell", "failure_handler", "result_handling", "handler_timeout", "kill_grace", "executor", "slurm", "plan", "context"} {
		if !has(defs["step"], k) {
			t.Errorf("step field %q missing", k)
		}
	}
	for _, k := range []string{"id", "needs", "plan"} {
		if has(defs["end"], k) {
			t.Errorf("end step must not accept %q", k)
		}
	}
}
