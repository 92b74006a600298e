package spec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
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
		{"sge", reflect.TypeFor[rawSge]()},
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

// TestSchemaDescribesEveryField: every key the parser accepts, in every raw
// structure, is in the schema with a description and a schema of its own
// (not {}, which says nothing: foreach and matrix once were), and so is
// every property of the nested forms (foreach: {range: ...}, matrix's
// exclude).
func TestSchemaDescribesEveryField(t *testing.T) {
	data, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	defs, _ := s["$defs"].(map[string]any)

	// The raw structures, found by walking the types from the plan's;
	// steps are decoded one at a time (stepList holds nodes), so rawStep
	// is a root of its own.
	type hasMeta interface{ meta() *rawMeta }
	metaType, rawMetaType := reflect.TypeFor[hasMeta](), reflect.TypeFor[rawMeta]()
	seen := map[reflect.Type]bool{}
	var raws []reflect.Type
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			walk(t.Elem())
			return
		case reflect.Struct:
		default:
			return
		}
		if seen[t] {
			return
		}
		seen[t] = true
		if t != rawMetaType && reflect.PointerTo(t).Implements(metaType) {
			raws = append(raws, t)
		}
		for i := 0; i < t.NumField(); i++ {
			walk(t.Field(i).Type)
		}
	}
	walk(reflect.TypeFor[rawPlan]())
	walk(reflect.TypeFor[rawStep]())

	// Every definition is a raw structure found here, so none escapes the
	// checks below.
	found := map[string]bool{}
	for _, rt := range raws {
		found[defName(rt)] = true
	}
	for name := range defs {
		if !found[name] {
			t.Errorf("schema definition %q is no raw structure reached from rawPlan or rawStep; add its root to this test", name)
		}
	}

	for _, rt := range raws {
		var obj any = s
		where := "plan"
		if rt != reflect.TypeFor[rawPlan]() {
			obj, where = defs[defName(rt)], defName(rt)
		}
		m, _ := obj.(map[string]any)
		props, _ := m["properties"].(map[string]any)
		if props == nil {
			t.Errorf("%s (%s): not in the schema", where, rt.Name())
			continue
		}
		for _, key := range tableOf(rt).keys() {
			if _, ok := props[key]; !ok {
				t.Errorf("%s: accepted field %q missing from the schema", where, key)
			}
		}
	}

	// Every property anywhere, and every schema anywhere, says something.
	var check func(path string, v any)
	check = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if len(v) == 0 {
				t.Errorf("%s: empty schema {}", path)
			}
			for k, c := range v {
				if k == "properties" {
					props, _ := c.(map[string]any)
					for key, ps := range props {
						p, _ := ps.(map[string]any)
						if d, _ := p["description"].(string); strings.TrimSpace(d) == "" {
							t.Errorf("%s.%s: no description", path, key)
						}
						n := len(p)
						if _, ok := p["description"]; ok {
							n--
						}
						if n == 0 {
							t.Errorf("%s.%s: no schema but a description (any value)", path, key)
						}
					}
				}
				check(path+"."+k, c)
			}
		case []any:
			for i, c := range v {
				check(fmt.Sprintf("%s[%d]", path, i), c)
			}
		}
	}
	check("schema", s)
}
