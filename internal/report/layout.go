package report

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/faber-run/faber/exec"
)

// The timeline's geometry, in SVG user units (the SVGs are this wide and
// scale down with the page).
const (
	Width  = 1000
	LabelW = 230 // the step ids, left of the bars
	ChartX = 240
	ChartW = 740
	RowH   = 18
	BarH   = 12
	// AggregateAbove is how many items a fan-out may have and still get a
	// row per item: above it, the fan-out gets one aggregated row, and its
	// items are listed in a collapsed table.
	AggregateAbove = 50
	minBarW        = 2.0
)

// Layout is the timeline: blocks of rows, each drawn as one SVG; a fan-out's
// items are a block of their own (collapsible).
type Layout struct {
	Blocks []*Block
	Ticks  []Tick
	// Bars counts the attempt bars drawn (one per attempt outside
	// aggregated fan-outs).
	Bars int
}

// Block is one SVG of rows; Summary, when set, makes it a collapsible
// group (a fan-out's items).
type Block struct {
	Summary string
	Open    bool
	Height  int
	Rows    []*Row
	// Items, on an aggregated fan-out, are its items, for the table.
	Items []*Step
}

// Row is one line of the timeline: a step (or an aggregated fan-out).
type Row struct {
	Y        int
	TextY    int
	TextX    int
	Label    string
	Full     string // the label before it was shortened
	Critical bool
	Bars     []Bar
}

// Bar is one rectangle: an attempt, a recovery script, a wait ...
type Bar struct {
	X, W  float64
	Y     int
	H     int
	Class string
	Title string
}

// Tick is a mark of the time axis.
type Tick struct {
	X     float64
	Label string
}

// scale maps times to x.
type scale struct {
	t0   time.Time
	span time.Duration
}

func (sc scale) x(t time.Time) float64 {
	return ChartX + float64(t.Sub(sc.t0))/float64(sc.span)*ChartW
}

// bar is the bar from a to b (b nil: to the end of the timeline).
func (sc scale) bar(a time.Time, b *time.Time, y int, class, title string) Bar {
	x0 := sc.x(a)
	x1 := float64(ChartX + ChartW)
	if b != nil {
		x1 = sc.x(*b)
	}
	w := x1 - x0
	if w < minBarW {
		w = minBarW
	}
	if x0+w > ChartX+ChartW+minBarW {
		x0 = ChartX + ChartW + minBarW - w
	}
	return Bar{X: round(x0), W: round(w), Y: y + (RowH-BarH)/2, H: BarH, Class: class, Title: title}
}

func round(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

// Lay out lays out a report's timeline.
func LayOut(r *Report) *Layout {
	t0 := r.StartedAt
	t1 := t0
	for _, s := range r.Steps {
		if s.StartedAt != nil && (t0.IsZero() || s.StartedAt.Before(t0)) {
			t0 = *s.StartedAt
		}
		if s.FinishedAt != nil && s.FinishedAt.After(t1) {
			t1 = *s.FinishedAt
		}
	}
	if r.FinishedAt != nil && r.FinishedAt.After(t1) {
		t1 = *r.FinishedAt
	}
	if end := r.StartedAt.Add(time.Duration(r.DurationMs) * time.Millisecond); end.After(t1) {
		t1 = end
	}
	sc := scale{t0: t0, span: t1.Sub(t0)}
	if sc.span <= 0 {
		sc.span = time.Millisecond
	}
	l := &Layout{}
	step := tickStep(sc.span)
	for d := time.Duration(0); d <= sc.span; d += step {
		l.Ticks = append(l.Ticks, Tick{X: round(ChartX + float64(d)/float64(sc.span)*ChartW), Label: shortDur(d)})
	}
	items := map[string][]*Step{}
	for _, s := range r.Steps {
		if s.FanOut != "" {
			items[s.FanOut] = append(items[s.FanOut], s)
		}
	}
	var top *Block
	add := func(b *Block, row *Row) {
		// the label column holds about 34 characters; the whole id is
		// in the label's tooltip
		row.Full = row.Label
		row.Label = shorten(row.Label, 34-row.TextX/6)
		row.Y = b.Height
		row.TextY = b.Height + RowH - 5
		for i := range row.Bars {
			row.Bars[i].Y += b.Height
		}
		b.Rows = append(b.Rows, row)
		b.Height += RowH
	}
	for _, s := range r.Steps {
		if s.FanOut != "" {
			continue
		}
		if top == nil {
			top = &Block{}
			l.Blocks = append(l.Blocks, top)
		}
		add(top, l.stepRow(sc, s, s.ID))
		its := items[s.ID]
		if len(its) == 0 {
			continue
		}
		top = nil
		g := &Block{}
		l.Blocks = append(l.Blocks, g)
		if len(its) > AggregateAbove {
			g.Summary = fmt.Sprintf("%s: %d items (%s), aggregated", s.ID, len(its), countsText(its))
			g.Open = true
			g.Items = its
			add(g, aggRow(sc, s.ID, its))
			continue
		}
		g.Summary = fmt.Sprintf("%s: %d items (%s)", s.ID, len(its), countsText(its))
		g.Open = true
		for _, it := range its {
			row := l.stepRow(sc, it, strings.TrimPrefix(it.ID, s.ID))
			row.TextX = 16
			add(g, row)
		}
	}
	// items whose fan-out step is not in the run (a part of a plan)
	return l
}

// stepRow is a step's row: a bar per attempt and per span.
func (l *Layout) stepRow(sc scale, s *Step, label string) *Row {
	row := &Row{Label: label, TextX: 4, Critical: s.Critical}
	crit := ""
	if s.Critical {
		crit = " crit"
	}
	for _, sp := range s.Spans {
		title := fmt.Sprintf("%s: %s (%s)", s.ID, sp.Text, spanDur(sp.StartedAt, sp.FinishedAt))
		row.Bars = append(row.Bars, sc.bar(sp.StartedAt, sp.FinishedAt, 0, "bar "+sp.Kind+crit, title))
	}
	if len(s.Attempts) == 0 && len(s.Spans) == 0 && s.StartedAt != nil {
		// a fan-out's step: the span of its items
		row.Bars = append(row.Bars, sc.bar(*s.StartedAt, s.FinishedAt, 0, "bar fanout"+crit,
			fmt.Sprintf("%s: its items, %s", s.ID, spanDur(*s.StartedAt, s.FinishedAt))))
	}
	for _, a := range s.Attempts {
		class := "bar attempt"
		switch {
		case a.FinishedAt == nil:
			class += " open"
		case a.ExitCode != nil && *a.ExitCode == 0 && a.Cause == "":
			class += " ok"
		default:
			class += " fail"
		}
		if a.Retry {
			class += " retry"
		}
		row.Bars = append(row.Bars, sc.bar(a.StartedAt, a.FinishedAt, 0, class+crit, s.ID+": "+attemptText(a)))
		l.Bars++
	}
	return row
}

// aggRow is one row for the items of a large fan-out: a bar from the first
// item's start to the last one's finish.
func aggRow(sc scale, id string, its []*Step) *Row {
	var start, fin *time.Time
	attempts := 0
	crit := false
	for _, it := range its {
		attempts += len(it.Attempts)
		crit = crit || it.Critical
		if it.StartedAt != nil && (start == nil || it.StartedAt.Before(*start)) {
			start = it.StartedAt
		}
		if it.FinishedAt != nil && (fin == nil || it.FinishedAt.After(*fin)) {
			fin = it.FinishedAt
		}
	}
	row := &Row{Label: fmt.Sprintf("%s[…] ×%d", id, len(its)), TextX: 16, Critical: crit}
	if start != nil {
		class := "bar agg"
		if crit {
			class += " crit"
		}
		title := fmt.Sprintf("%s: %d items, %d attempts (%s), %s", id, len(its), attempts, countsText(its), spanDur(*start, fin))
		row.Bars = append(row.Bars, sc.bar(*start, fin, 0, class, title))
	}
	return row
}

// countsText is "3 success, 1 failure": the items by status.
func countsText(its []*Step) string {
	n := map[string]int{}
	for _, it := range its {
		n[it.Status]++
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", n[k], k)
	}
	return strings.Join(parts, ", ")
}

// attemptText is one attempt in words, for a bar's tooltip.
func attemptText(a *Attempt) string {
	w := fmt.Sprintf("attempt %d", a.Attempt)
	switch {
	case a.FinishedAt == nil:
		w += " (no end recorded)"
	case a.ExitCode != nil:
		w += fmt.Sprintf(" exited %d", *a.ExitCode)
		if a.Cause != "" {
			w += " (" + a.Cause + ")"
		}
	default:
		w += " ended " + a.Status
	}
	w += ", " + spanDur(a.StartedAt, a.FinishedAt)
	if a.Spent != nil {
		w += ", spent " + a.Spent.Text()
	}
	return w
}

func spanDur(a time.Time, b *time.Time) string {
	if b == nil {
		return "still open"
	}
	return exec.FormatDuration(b.Sub(a))
}

// shortDur is a duration for the axis.
// tickStep is the time between two marks of an axis of span: the
// smallest of 1, 2 and 5 times a power of ten (from 1ms; then 1, 2, 5, 10,
// 15 and 30 minutes, and hours) that makes at most 6 intervals, so the
// marks read 0s, 500ms, 1s, 1.5s and not 447ms, 893ms.
func tickStep(span time.Duration) time.Duration {
	for _, st := range []time.Duration{
		time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
		10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
		100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
		time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 20 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	} {
		if span <= 6*st {
			return st
		}
	}
	h := time.Hour
	for span > 6*h {
		h *= 2
	}
	return h
}

func shortDur(d time.Duration) string {
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute).String()
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// statusClass is the CSS class of a status.
func statusClass(s string) string {
	st := exec.Status(s)
	switch {
	case st.Succeeded():
		return "st-ok"
	case s == exec.StatusSkipped:
		return "st-skip"
	case s == exec.StatusPendingFailed:
		return "st-pend"
	case st.Failed():
		return "st-fail"
	}
	return "st-other"
}
