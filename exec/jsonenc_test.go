package exec

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The hand-written JSON of jsonenc.go must be encoding/json's, byte for
// byte, for every value: the store, the view and every reader take either.
// The values are filled by reflection (fill), every exported field of
// every nested type, so a field added to StepState, StepStatus or
// CacheHit and not written by hand makes these fail.

// jsonStrings are the strings fill picks from: what encoding/json writes
// as it is, and everything it escapes (HTML, controls, invalid UTF-8,
// U+2028).
var jsonStrings = []string{
	"", "s1", "t[42]", "main", "success", "run-20261128T200431-5715",
	"a \"quoted\" \\ word", "<b>&amp;</b>", "tab\there\nline\r", "\x00\x1f\x7f",
	"\xff\xfe broken utf-8", "line\u2028sep\u2029", "ünïcødé ✓ 🎉", "ʻokina",
}

// filler fills values with random contents from jsonStrings and extra.
type filler struct {
	r     *rand.Rand
	extra []string
}

func (f *filler) str() string {
	if n := len(f.extra); n > 0 && f.r.IntN(3) == 0 {
		return f.extra[f.r.IntN(n)]
	}
	return jsonStrings[f.r.IntN(len(jsonStrings))]
}

func (f *filler) int() int64 {
	return [...]int64{0, 0, 1, -1, 7, 137, 1 << 40, -1 << 63, 1<<63 - 1}[f.r.IntN(9)]
}

func (f *filler) time() time.Time {
	t := time.Unix(f.r.Int64N(4e9), f.r.Int64N(1e9))
	switch f.r.IntN(6) {
	case 0:
		return t.In(time.FixedZone("X", 5*3600+30*60))
	case 1:
		return t.In(time.FixedZone("Y", -8*3600))
	case 2:
		return t.Truncate(time.Second).UTC() // no fraction
	case 3:
		if f.r.IntN(4) == 0 {
			return time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) // encoding/json refuses it
		}
	}
	return t.UTC()
}

var timeType = reflect.TypeFor[time.Time]()

// fill sets v (settable) to random contents, down to depth levels of nesting.
func (f *filler) fill(v reflect.Value, depth int) {
	if v.Type() == timeType {
		v.Set(reflect.ValueOf(f.time()))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(f.str())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := f.int()
		if v.OverflowInt(n) {
			n = int64(f.r.IntN(100)) - 50
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(f.r.IntN(1000)))
	case reflect.Float32, reflect.Float64:
		v.SetFloat([...]float64{0, 0.5, 3, 1e21}[f.r.IntN(4)])
	case reflect.Bool:
		v.SetBool(f.r.IntN(2) == 0)
	case reflect.Pointer:
		if depth == 0 || f.r.IntN(3) == 0 {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		f.fill(p.Elem(), depth-1)
		v.Set(p)
	case reflect.Slice:
		switch n := f.r.IntN(4); {
		case depth == 0 || n == 0:
			v.SetZero()
		case n == 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0)) // empty, not nil
		default:
			s := reflect.MakeSlice(v.Type(), n-1, n-1)
			for i := range n - 1 {
				f.fill(s.Index(i), depth-1)
			}
			v.Set(s)
		}
	case reflect.Map:
		if depth == 0 || f.r.IntN(2) == 0 {
			v.SetZero()
			return
		}
		m := reflect.MakeMap(v.Type())
		for range f.r.IntN(3) {
			k := reflect.New(v.Type().Key()).Elem()
			e := reflect.New(v.Type().Elem()).Elem()
			f.fill(k, depth-1)
			f.fill(e, depth-1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i), depth)
			}
		}
	}
}

// sameJSON checks that got and err are json.Marshal(v)'s.
func sameJSON(t *testing.T, v any, got []byte, err error) {
	t.Helper()
	want, wantErr := json.Marshal(v)
	if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Fatalf("error %v, encoding/json's %v, for %#v", err, wantErr, v)
	}
	if err == nil && !bytes.Equal(got, want) {
		t.Fatalf("JSON differs from encoding/json's:\n got %s\nwant %s", got, want)
	}
}

// checkRecords fills one value of each type from f and compares.
func checkRecords(t *testing.T, f *filler) {
	t.Helper()
	var st StepState
	f.fill(reflect.ValueOf(&st).Elem(), 3)
	prefix := []byte("prefix,")
	got, err := AppendStepJSON(prefix, &st)
	if !bytes.HasPrefix(got, prefix) {
		t.Fatalf("AppendStepJSON dropped what it appends to: %q", got)
	}
	sameJSON(t, &st, got[len(prefix):], err)

	var d StepStatus
	f.fill(reflect.ValueOf(&d).Elem(), 3)
	got, err = d.appendJSON(nil)
	sameJSON(t, &d, got, err)

	var h CacheHit
	f.fill(reflect.ValueOf(&h).Elem(), 3)
	got, err = h.appendJSON(nil)
	sameJSON(t, &h, got, err)
}

func TestRecordJSONIsEncodingJSON(t *testing.T) {
	f := &filler{r: rand.New(rand.NewPCG(28, 1))}
	for range 20000 {
		checkRecords(t, f)
	}
	// nil, as json.Marshal writes a nil pointer.
	got, err := AppendStepJSON(nil, nil)
	sameJSON(t, (*StepState)(nil), got, err)
	got, err = (*StepStatus)(nil).appendJSON(nil)
	sameJSON(t, (*StepStatus)(nil), got, err)
	got, err = (*CacheHit)(nil).appendJSON(nil)
	sameJSON(t, (*CacheHit)(nil), got, err)
}

// The filler reaches every field: a StepState with all of them set writes
// each one's key (else a field the filler missed would pass unseen).
func TestRecordJSONFillsEveryField(t *testing.T) {
	for _, v := range []any{&StepState{}, &StepStatus{}, &CacheHit{}} {
		typ := reflect.TypeOf(v).Elem()
		seen := map[string]bool{}
		f := &filler{r: rand.New(rand.NewPCG(1, 28))}
		for range 200 {
			p := reflect.New(typ)
			f.fill(p.Elem(), 3)
			b, err := json.Marshal(p.Interface())
			if err != nil {
				continue
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			for k, raw := range m {
				if string(raw) != "null" {
					seen[k] = true
				}
			}
		}
		for i := range typ.NumField() {
			fld := typ.Field(i)
			name, _, _ := strings.Cut(fld.Tag.Get("json"), ",")
			if name == "-" || !fld.IsExported() {
				continue
			}
			if !seen[name] {
				t.Errorf("%s.%s: the filler never set it", typ.Name(), fld.Name)
			}
		}
	}
}

// The events that carry these payloads are encoding/json's too: the
// common fields as a struct of them marshals, then the payload's.
func TestEventPayloadJSON(t *testing.T) {
	type head struct {
		Seq      int64     `json:"seq"`
		Time     time.Time `json:"time"`
		Type     string    `json:"type"`
		RunID    string    `json:"run_id"`
		StepID   string    `json:"step_id,omitempty"`
		Attempt  int       `json:"attempt,omitempty"`
		Status   string    `json:"status,omitempty"`
		ExitCode *int      `json:"exit_code,omitempty"`
	}
	f := &filler{r: rand.New(rand.NewPCG(3, 4))}
	for range 3000 {
		var d StepStatus
		f.fill(reflect.ValueOf(&d).Elem(), 3)
		var h CacheHit
		f.fill(reflect.ValueOf(&h).Elem(), 3)
		var hd head
		f.fill(reflect.ValueOf(&hd).Elem(), 1)
		hd.Time = hd.Time.UTC()
		for _, p := range []Payload{&d, &h, nil} {
			got, err := Event{Data: p}.payloadFields()
			if p != nil {
				sameJSON(t, p, got, err)
			}
			e := Event{Seq: hd.Seq, Time: hd.Time, Type: hd.Type, RunID: hd.RunID, StepID: hd.StepID,
				Attempt: hd.Attempt, Status: hd.Status, ExitCode: hd.ExitCode, Data: p}
			got, ok, err := e.marshal()
			hj, herr := json.Marshal(hd)
			pj, perr := json.Marshal(p)
			if p == nil {
				pj = []byte("{}")
			}
			if perr != nil {
				if err == nil {
					t.Fatalf("marshaled a payload encoding/json refuses (%v): %s", perr, got)
				}
				continue
			}
			if herr != nil {
				continue // a time past 9999: the event's own format writes it
			}
			want := append(hj[:len(hj)-1:len(hj)-1], ',')
			want = append(want, pj[1:]...)
			if len(pj) == 2 {
				want = append(hj[:len(hj)-1:len(hj)-1], '}')
			}
			if err != nil || !ok || !bytes.Equal(got, want) {
				t.Fatalf("event JSON (well formed %v, %v):\n got %s\nwant %s", ok, err, got, want)
			}
		}
	}
}

func FuzzRecordJSON(f *testing.F) {
	f.Add(uint64(1), "s1", "\u2028<&>")
	f.Add(uint64(2), "\xff", "\"\\")
	f.Add(uint64(3), "", "t[1]")
	f.Fuzz(func(t *testing.T, seed uint64, a, b string) {
		checkRecords(t, &filler{r: rand.New(rand.NewPCG(seed, seed>>7)), extra: []string{a, b}})
	})
}
