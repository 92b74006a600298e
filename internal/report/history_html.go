package report

import (
	"bufio"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/spec"
)

// historyPage is what the history page's template is given.
type historyPage struct {
	History      *History
	Plan         string
	FaberVersion string
	GeneratedAt  time.Time
}

// WriteHistoryHTML writes a plan's history as one self-contained HTML page
// (faber report --plan). version is the faber that writes it.
func WriteHistoryHTML(w io.Writer, h *History, version string, now time.Time) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := page.ExecuteTemplate(bw, "historypage", historyPage{History: h, Plan: h.Plan, FaberVersion: version, GeneratedAt: now.UTC()}); err != nil {
		return err
	}
	return bw.Flush()
}

func durpText(ms *int64) string {
	if ms == nil {
		return "-"
	}
	return durText(*ms)
}

// pctText is a rate as a percentage; "-" for a step that never ran.
func pctText(rate float64, ran int) string {
	if ran == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", rate*100)
}

// spark draws a step's durations over the runs as a small bar chart, one
// bar per run (oldest left), coloured by how the step ended there.
func spark(s *StepHistory) template.HTML {
	const w, h = 120.0, 24.0
	var top int64
	for _, d := range s.DurationsMs {
		if d != nil && *d > top {
			top = *d
		}
	}
	n := len(s.DurationsMs)
	if n == 0 {
		return ""
	}
	bw := w / float64(n)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="spark" viewBox="0 0 %g %g" role="img">`, w, h)
	for i, d := range s.DurationsMs {
		if d == nil {
			continue
		}
		bh := 1.0
		if top > 0 {
			bh = math.Max(1, h*float64(*d)/float64(top))
		}
		class := "other"
		switch st := exec.Status(s.Statuses[i]); {
		case st == exec.StatusSuccess:
			class = "ok"
		case st.Failed():
			class = "fail"
		}
		fmt.Fprintf(&b, `<rect class="spk %s" x="%.2f" y="%.2f" width="%.2f" height="%.2f"><title>run %d: %s, %s</title></rect>`,
			class, float64(i)*bw+bw*0.1, h-bh, bw*0.8, bh, i+1, durText(*d), template.HTMLEscapeString(s.Statuses[i]))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// sized says whether any step has a right-sizing.
func sized(steps []*StepHistory) bool {
	for _, s := range steps {
		if s.Memory != nil || s.Timeout != nil {
			return true
		}
	}
	return false
}

type namedSizing struct {
	Name   string
	Sizing *Sizing
}

// sizings are a step's right-sizings, memory first.
func sizings(s *StepHistory) []namedSizing {
	var out []namedSizing
	if s.Memory != nil {
		out = append(out, namedSizing{"memory", s.Memory})
	}
	if s.Timeout != nil {
		out = append(out, namedSizing{"timeout", s.Timeout})
	}
	return out
}

// amountText is a figure of a sizing in its unit: a size or a duration.
func amountText(z *Sizing, v int64) string {
	if z.Unit == "bytes" {
		return spec.FormatSize(v)
	}
	return durText(v)
}

func amountpText(z *Sizing, v *int64) string {
	if v == nil {
		return "-"
	}
	return amountText(z, *v)
}

// stepOf is the history of one step.
func stepOf(h *History, id string) *StepHistory {
	for _, s := range h.Steps {
		if s.ID == id {
			return s
		}
	}
	return nil
}
