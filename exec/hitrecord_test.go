package exec

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// A hit record and its two events must rebuild the very record the full
// JSON one reads back as (DecodeHitRecord), for every step a runner can
// settle as cached; a step that carries anything more must keep its full
// record (AppendHitRecord refuses it).

// plainHit makes a step settled as cached, as cacheProbed settles one,
// with the two events a runner commits with it (statusEvent), stamped
// and marshalled as the runner marshals them.
func plainHitOf(f *filler, seq int64) (*StepState, *Event, *Event) {
	id := f.str()
	if id == "" {
		id = "t[1]"
	}
	now := time.Unix(f.r.Int64N(4e9), f.r.Int64N(1e9)).Local()
	st := &StepState{ID: id, Name: id, Phase: f.str(), Status: StatusCached, Attempt: f.r.IntN(3),
		StartedAt: timep(now), FinishedAt: timep(now), FanOut: f.str(), Hash: f.str(), CacheKey: f.str(),
		CachedFrom: &CachedFrom{Attempt: f.r.IntN(5), RunID: f.str(), Seq: f.int()}}
	if f.r.IntN(3) == 0 {
		st.Name = f.str()
	}
	if f.r.IntN(4) == 0 {
		st.FinishedAt = timep(now.Add(time.Duration(f.r.Int64N(1e12))))
		st.DurationMs = f.r.Int64N(1e6)
	}
	switch f.r.IntN(3) {
	case 0:
		st.Needs = []string{}
	case 1:
		for range f.r.IntN(4) + 1 {
			st.Needs = append(st.Needs, f.str())
		}
	}
	hit, status := hitEvents(st, seq)
	return st, hit, status
}

// hitEvents are the events of st's hit, the status event at seq.
func hitEvents(st *StepState, seq int64) (*Event, *Event) {
	hit := &Event{Seq: seq - 1, Type: EvStepCacheHit, StepID: st.ID, Attempt: st.Attempt, Data: &CacheHit{
		CachedAttempt: st.CachedFrom.Attempt, CachedRunID: st.CachedFrom.RunID, CachedSeq: st.CachedFrom.Seq, Key: st.CacheKey}}
	status := &Event{Seq: seq, Type: EvStepStatus, StepID: st.ID, Attempt: st.Attempt, Status: st.Status,
		Data: statusPayload(st, true)}
	if st.ExitCode != nil {
		status.ExitCode = intp(*st.ExitCode)
	}
	return hit, status
}

func marshalEvents(t *testing.T, evs ...*Event) {
	t.Helper()
	for _, e := range evs {
		e.Time, e.RunID = time.Now(), "run-20261129T000000-abcd"
		var err error
		if e.JSON, e.jsonWellFormed, err = e.marshal(); err != nil {
			t.Fatal(err)
		}
	}
}

// fullRecord is st as a full JSON record reads back.
func fullRecord(t *testing.T, st *StepState) *StepState {
	t.Helper()
	b, err := AppendStepJSON(nil, st)
	if err != nil {
		t.Fatal(err)
	}
	var back StepState
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return &back
}

func TestHitRecordRebuildsTheFullRecord(t *testing.T) {
	defer func(l *time.Location) { time.Local = l }(time.Local)
	for _, zone := range []*time.Location{time.UTC, time.FixedZone("IST", 5*3600+30*60), time.FixedZone("PST", -8*3600)} {
		time.Local = zone
		f := &filler{r: rand.New(rand.NewPCG(29, 11))}
		for i := range 3000 {
			seq := int64(2 + i)
			st, hit, status := plainHitOf(f, seq)
			marshalEvents(t, hit, status)
			rec, ok := AppendHitRecord([]byte{}, st, hit, status)
			if !ok && !recordUTF8(st) {
				continue // the full record, as JSON writes it (U+FFFD)
			}
			if !ok {
				t.Fatalf("a plain hit got a full record: %+v", st)
			}
			if s, ok := IsHitRecord(rec); !ok || s != seq {
				t.Fatalf("IsHitRecord = %d, %v; want %d", s, ok, seq)
			}
			got, err := DecodeHitRecord(st.ID, rec, hit.JSON, status.JSON)
			if err != nil {
				t.Fatalf("%v\nrecord %q\nevents %s\n%s", err, rec, hit.JSON, status.JSON)
			}
			if want := fullRecord(t, st); !reflect.DeepEqual(got, want) {
				t.Fatalf("zone %s: rebuilt record differs:\n got %s\nwant %s", zone, jsonOf(got), jsonOf(want))
			}
			if full, _ := AppendStepJSON(nil, st); len(rec) >= len(full) {
				t.Fatalf("hit record of %d bytes, the full one %d", len(rec), len(full))
			}
		}
	}
}

func jsonOf(st *StepState) string {
	b, _ := json.Marshal(st)
	return string(b)
}

// Only the fields a hit sets, those of its definition and Story (never
// stored) may be on a step that gets a hit record: every other field of
// StepState, set, keeps the full record. A field added to StepState is
// thus refused until it is thought about here.
func TestHitRecordKeepsEveryField(t *testing.T) {
	inRecord := map[string]bool{"ID": true, "Name": true, "Phase": true, "Status": true, "Attempt": true,
		"StartedAt": true, "FinishedAt": true, "DurationMs": true, "Needs": true, "FanOut": true,
		"Hash": true, "CacheKey": true, "CachedFrom": true, "Story": true}
	f := &filler{r: rand.New(rand.NewPCG(3, 7))}
	typ := reflect.TypeFor[StepState]()
	for i := range typ.NumField() {
		fld := typ.Field(i)
		if inRecord[fld.Name] {
			continue
		}
		for range 50 {
			st, _, _ := plainHitOf(f, 10)
			v := reflect.ValueOf(st).Elem().Field(i)
			for v.IsZero() {
				f.fill(v, 3)
			}
			if v.Kind() == reflect.Slice && v.Len() == 0 {
				continue // empty is none
			}
			hit, status := hitEvents(st, 10)
			if _, ok := AppendHitRecord(nil, st, hit, status); ok {
				t.Fatalf("a hit with %s set got a hit record: %+v", fld.Name, v.Interface())
			}
		}
	}
}

// An event that says something else than the record (a masked key, the
// other step, not the seq before) keeps the full record.
func TestHitRecordNeedsItsEvents(t *testing.T) {
	f := &filler{r: rand.New(rand.NewPCG(5, 5))}
	cases := map[string]func(st *StepState, hit, status *Event){
		"masked key":       func(_ *StepState, hit, _ *Event) { hit.Data.(*CacheHit).Key = "***" },
		"masked status":    func(_ *StepState, _, status *Event) { status.Data.(*StepStatus).CacheKey = "***" },
		"masked run":       func(_ *StepState, hit, _ *Event) { hit.Data.(*CacheHit).CachedRunID += "*" },
		"cached attempt":   func(_ *StepState, hit, _ *Event) { hit.Data.(*CacheHit).CachedAttempt++ },
		"cached seq":       func(_ *StepState, hit, _ *Event) { hit.Data.(*CacheHit).CachedSeq++ },
		"masked phase":     func(_ *StepState, _, status *Event) { status.Data.(*StepStatus).Phase += "*" },
		"other step":       func(_ *StepState, hit, _ *Event) { hit.StepID += "x" },
		"not adjacent":     func(_ *StepState, hit, _ *Event) { hit.Seq-- },
		"swapped":          func(_ *StepState, hit, status *Event) { *hit, *status = *status, *hit },
		"attempt":          func(_ *StepState, _, status *Event) { status.Attempt++ },
		"started":          func(_ *StepState, _, status *Event) { status.Data.(*StepStatus).StartedAt = timep(time.Now()) },
		"finished":         func(_ *StepState, _, status *Event) { status.Data.(*StepStatus).FinishedAt = nil },
		"duration":         func(_ *StepState, _, status *Event) { status.Data.(*StepStatus).DurationMs = nil },
		"not cached":       func(st *StepState, _, _ *Event) { st.Status = StatusSuccess },
		"no cached_from":   func(st *StepState, _, _ *Event) { st.CachedFrom = nil },
		"event exit code":  func(_ *StepState, _, status *Event) { status.ExitCode = intp(0) },
		"first event":      func(_ *StepState, hit, status *Event) { hit.Seq, status.Seq = 0, 1 },
		"no status":        func(_ *StepState, _, status *Event) { status.Type = EvStepCacheHit },
		"another payload":  func(_ *StepState, hit, _ *Event) { hit.Data = &CacheMiss{} },
		"attempt's end":    func(_ *StepState, _, status *Event) { status.Data.(*StepStatus).AttemptEnd = &AttemptEnd{} },
		"event has output": func(_ *StepState, _, status *Event) { status.Data.(*StepStatus).Outputs = []Output{{Key: "x"}} },
	}
	for name, mut := range cases {
		st, hit, status := plainHitOf(f, 10)
		mut(st, hit, status)
		if _, ok := AppendHitRecord(nil, st, hit, status); ok {
			t.Errorf("%s: got a hit record", name)
		}
	}
}

// A hit record that is cut short, or whose events are not its own, does
// not decode: the store is damaged. It never panics.
func TestHitRecordDamaged(t *testing.T) {
	f := &filler{r: rand.New(rand.NewPCG(8, 8))}
	st, hit, status := plainHitOf(f, 10)
	st.Needs = []string{"a", "b"}
	hit, status = hitEvents(st, 10)
	other, otherHit, otherStatus := plainHitOf(f, 20)
	marshalEvents(t, hit, status, otherHit, otherStatus)
	rec, ok := AppendHitRecord(nil, st, hit, status)
	if !ok {
		t.Fatal("no hit record")
	}
	for n := range len(rec) {
		if _, err := DecodeHitRecord(st.ID, rec[:n], hit.JSON, status.JSON); err == nil {
			t.Errorf("a record cut at %d of %d bytes decoded", n, len(rec))
		}
	}
	if _, err := DecodeHitRecord(st.ID, append(rec, 0), hit.JSON, status.JSON); err == nil {
		t.Error("a record with a byte more decoded")
	}
	if _, err := DecodeHitRecord(st.ID, rec, status.JSON, hit.JSON); err == nil {
		t.Error("swapped events decoded")
	}
	if _, err := DecodeHitRecord(other.ID+"x", rec, hit.JSON, status.JSON); err == nil {
		t.Error("another step's events decoded")
	}
	if _, err := DecodeHitRecord(st.ID, rec, otherHit.JSON, otherStatus.JSON); err == nil {
		t.Error("events at other seqs decoded")
	}
}

func FuzzDecodeHitRecord(f *testing.F) {
	f.Add([]byte{hitRecordMark, 10, 0, 1, 't', 0, 1}, []byte(`{"seq":9}`), []byte(`{"seq":10}`))
	f.Add([]byte{hitRecordMark, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, []byte(`{}`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, rec, hit, status []byte) {
		st, err := DecodeHitRecord("t", rec, hit, status)
		if err == nil && (st == nil || st.Status != StatusCached || st.CachedFrom == nil) {
			t.Fatalf("decoded %+v", st)
		}
	})
}
