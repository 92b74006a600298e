package report

import (
	"bufio"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/spec"
)

//go:embed report.html.tmpl
var pageText string

//go:embed css.tmpl
var cssText string

//go:embed history.html.tmpl
var historyText string

var page = withParts(template.Must(template.New("report").Funcs(template.FuncMap{
	"dur":         durText,
	"time":        timeText,
	"exits":       exitsText,
	"resources":   resourcesText,
	"statusClass": statusClass,
	"join":        strings.Join,
	"durp":        durpText,
	"pct":         pctText,
	"spark":       spark,
	"sized":       sized,
	"sizings":     sizings,
	"amount":      amountText,
	"cost":        exec.FormatCost,
	"amountp":     amountpText,
	"stepOf":      stepOf,
	"last":        func(rs []*HistoryRun) int { return len(rs) - 1 },
}).Parse(pageText)))

// withParts adds the templates the report page and the history page share
// (its CSS, the history section) to the report page's.
func withParts(t *template.Template) *template.Template {
	template.Must(t.New("css").Parse(cssText))
	template.Must(t.New("history").Parse(historyText))
	return t
}

// sections is what the page template is given.
type sections struct {
	*Report
	Layout *Layout
	// Steps are the rows of the step table: every step but the items of an
	// aggregated fan-out, which are in Aggregated.
	Steps      []*Step
	Aggregated []*Block
	Legend     []legendItem
	// AggregateAbove is the package's constant, for the page's note.
	AggregateAbove int
}

type legendItem struct {
	Class, Text string
}

var legend = []legendItem{
	{"attempt ok", "attempt that succeeded"},
	{"attempt fail", "attempt that failed"},
	{"attempt ok retry", "retry (attempt after the first)"},
	{"attempt open", "attempt with no recorded end"},
	{"recovery", "recovery script"},
	{"backoff", "backoff wait (rule delay)"},
	{"handler", "on_failure handler"},
	{"decision", "pending decision (pending_failed)"},
	{"approval", "waiting for approval (approval gate)"},
	{"cached", "cached step"},
	{"skipped", "skipped step (when: false)"},
	{"fanout", "fan-out (the span of its items)"},
	{"agg", "fan-out items, aggregated"},
	{"attempt ok crit", "on the critical path"},
}

// WriteHTML writes the report as one self-contained HTML page.
func WriteHTML(w io.Writer, r *Report) error {
	l := LayOut(r)
	s := sections{Report: r, Layout: l, Legend: legend, AggregateAbove: AggregateAbove}
	agg := map[string]bool{}
	for _, b := range l.Blocks {
		if b.Items != nil {
			s.Aggregated = append(s.Aggregated, b)
			for _, it := range b.Items {
				agg[it.ID] = true
			}
		}
	}
	// the table in timeline order: each fan-out's items after it
	items := map[string][]*Step{}
	for _, st := range r.Steps {
		if st.FanOut != "" && !agg[st.ID] {
			items[st.FanOut] = append(items[st.FanOut], st)
		}
	}
	for _, st := range r.Steps {
		if st.FanOut == "" {
			s.Steps = append(s.Steps, st)
			s.Steps = append(s.Steps, items[st.ID]...)
		}
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := page.Execute(bw, s); err != nil {
		return err
	}
	return bw.Flush()
}

func durText(ms int64) string {
	return exec.FormatDuration(time.Duration(ms) * time.Millisecond)
}

func timeText(v any) string {
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x
	case *time.Time:
		if x != nil {
			t = *x
		}
	}
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000 UTC")
}

// exitsText is the exit codes of a step's attempts: "3, 0".
func exitsText(s *Step) string {
	var parts []string
	for _, a := range s.Attempts {
		if a.ExitCode != nil {
			parts = append(parts, strconv.Itoa(*a.ExitCode))
		} else {
			parts = append(parts, "-")
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// resourcesText is an attempt's CPU time and peak memory against its
// limits and requests.
func resourcesText(a *Attempt) string {
	res, req := a.Resources, a.Reserved
	var cpu, mem string
	if res != nil {
		cpu = "CPU " + durText(res.UserMs+res.SysMs)
		if res.WallMs > 0 {
			cpu += fmt.Sprintf(" in %s wall", durText(res.WallMs))
		}
		mem = "peak " + res.PeakText()
		if res.MemoryLimitBytes > 0 {
			mem += fmt.Sprintf(" of %s limit (%d%%)", spec.FormatSize(res.MemoryLimitBytes), res.PeakRSSBytes*100/res.MemoryLimitBytes)
		}
	}
	var lim []string
	if res != nil && res.CPUs > 0 {
		lim = append(lim, fmt.Sprintf("limit %d CPUs", res.CPUs))
	}
	if req != nil && req.CPUs > 0 {
		lim = append(lim, fmt.Sprintf("request %d CPUs", req.CPUs))
	}
	if len(lim) > 0 {
		cpu += " (" + strings.Join(lim, ", ") + ")"
	}
	if req != nil && req.MemoryBytes > 0 {
		m := "request " + spec.FormatSize(req.MemoryBytes)
		if res != nil && req.MemoryBytes > 0 {
			m += fmt.Sprintf(" (%d%% used)", res.PeakRSSBytes*100/req.MemoryBytes)
		}
		if mem != "" {
			mem += "; " + m
		} else {
			mem = m
		}
	}
	if res != nil && res.TimeoutMs > 0 {
		mem += "; timeout " + durText(res.TimeoutMs)
	}
	parts := []string{}
	for _, p := range []string{cpu, mem} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return "not measured"
	}
	return strings.Join(parts, " · ")
}
