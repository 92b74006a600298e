package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/faber-run/faber/exec"
)

const (
	// logLinesPerStep bounds the output kept per step for the log pane; the
	// whole output is in the log files (faber logs).
	logLinesPerStep = 500
	// tickEvery drives the spinner and the elapsed time.
	tickEvery = 100 * time.Millisecond
	// messageFor is how long a footer message stays.
	messageFor = 6 * time.Second
	// usageEvery is how often the view asks the run's owner what it uses
	// of its capacity and which steps wait for resources (Options.Usage).
	usageEvery = time.Second
)

// StepDef is what the live view knows about a step before it runs.
type StepDef struct {
	ID    string
	Name  string
	Phase string
	// Handler is the step's on_failure command as written ("" when it has
	// none); shown while the step is remediating, until the exact command
	// arrives with step_handler_invoked.
	Handler string
	// FanOut is, on an item step <id>[<key>], its fan-out step: items are
	// not rows; their fan-out step's row shows their progress.
	FanOut string
}

// Options configure the live view.
type Options struct {
	Plan   string
	RunID  string
	Steps  []StepDef // plan order, the end step last; empty: taken from run_started
	Styles Styles
	Keys   *KeyMap // nil: DefaultKeyMap
	// Prior holds the recorded state of the steps when a run is resumed, so
	// that steps which already succeeded show as such.
	Prior map[string]*exec.StepState
	// OnInterrupt is called for q / Ctrl-C: first with hard=false (a graceful
	// stop, like SIGINT), then with hard=true (kill now). It must not block.
	OnInterrupt func(hard bool)
	// OnClassify, when set, classifies a pending_failed step (retry or fail)
	// in the running session and returns once it is recorded; when nil, the
	// view tells how to do it with `faber classify`. It is called off the
	// program's goroutine, so it may block.
	OnClassify func(stepID string, retry bool) error
	// OnDecide, when set, approves or rejects a step at its approval gate
	// (a / x x), as faber approve / reject do.
	OnDecide func(stepID string, approve bool) error
	// WaitDecisions says the session waits, while this view is open, for a
	// decision on pending_failed steps once nothing else can run
	// (exec.Runner.WaitDecisions, fed by TUI.Decisions): the view then
	// prompts for r / x x, and q leaves the decision for later (the run ends
	// pending_failed) instead of leaving the view. Off for faber attach.
	WaitDecisions bool
	// Attached is a view of a run that another process owns (faber attach):
	// q and Ctrl-C leave the view and do nothing to the run.
	Attached bool
	// ResumeHint adds "resume with: faber resume <id>" to the final summary
	// (off when the caller prints it itself).
	ResumeHint bool
	// Now is the clock (nil: time.Now); tests fix it.
	Now func() time.Time
	// Usage, when set, asks the run's owner what the run uses of its
	// capacity and which steps wait for resources (README "Why a step
	// waits"); nil when it does not say (a run whose steps request
	// nothing). The view asks about once a second while the run is
	// active, off the program's goroutine, one question at a time.
	Usage func() *exec.Usage
	// Estimate, when set, is the run's ETA as the header shows it ("ETA
	// ~3m10s", "no ETA: why"), from the steps as the view knows them (ID,
	// Phase, FanOut, Status, and StartedAt: the running attempt's start)
	// at now. The header asks it about once a second while the run is
	// active; it must be quick.
	Estimate func(steps []*exec.StepState, now time.Time) string
	// Budgets, when set, are the plan's budget lines (exec.Budgets) with
	// what steps spent, given the steps (and items) that spent something
	// as the view knows them (ID, Phase, FanOut, Spent): the header shows
	// the plan's and the phases', the log pane's title the selected
	// step's own (README "Budgets"). nil for a plan without budgets.
	Budgets func(steps []*exec.StepState) []exec.BudgetLine
}

// Messages the model understands besides keys and window sizes.
type (
	// eventsMsg is a batch of events, delivered at most every flushEvery.
	eventsMsg struct {
		events  []exec.Event
		dropped map[string]int // output lines dropped per step before delivery
	}
	tickMsg  time.Time
	endMsg   struct{}
	leaveMsg struct{} // leave the view, as q does (faber attach on a signal)
	// decidedMsg: a / x x on a step at its approval gate was applied.
	decidedMsg struct {
		step    string
		approve bool
		err     error
	}
	classifiedMsg struct {
		step  string
		retry bool
		err   error
	}
	// usageMsg is the owner's answer to Options.Usage.
	usageMsg struct{ usage *exec.Usage }
)

// logLine is one line of a step's output as shown.
type logLine struct {
	text   string
	stderr bool
	mark   bool // a separator written by faber, not by the step
	child  bool // an event of the step's child run (a sub-plan step)
}

// ring keeps the last logLinesPerStep lines.
type ring struct {
	lines []logLine
	start int
	total int // lines ever added
}

func (r *ring) add(l logLine) {
	r.total++
	if len(r.lines) < logLinesPerStep {
		r.lines = append(r.lines, l)
		return
	}
	r.lines[r.start] = l
	r.start = (r.start + 1) % len(r.lines)
}

func (r *ring) len() int { return len(r.lines) }

// at returns line i, 0 being the oldest kept.
func (r *ring) at(i int) logLine { return r.lines[(r.start+i)%len(r.lines)] }

// stepRow is one step as the view shows it.
type stepRow struct {
	def     StepDef
	index   int // in Model.steps
	phase   int // in Model.phases
	row     int // in Model.rows
	rowEnd  int // last row of the step's nested child-run lines (row when none)
	status  string
	attempt int
	exit    *int
	err     string
	started time.Time
	dur     time.Duration
	hasDur  bool
	// retry budget of the last rule or handler that granted a retry.
	retries, budget int
	budgetBy        string
	handler         string // on_failure command while remediating (or the last one)
	classified      string
	// peak is the last finished attempt's peak memory (bytes), limit its
	// memory limit, cause why it ended (oom, timeout) — from attempt_end.
	peak, limit int64
	cause       string
	peakBound   bool // peak is an upper bound (exec.Resources.PeakExact)
	log         ring
	lastAttempt int
	lastKind    string
	lastLine    string // newest attempt output line, for the row
	activeSince time.Time
	// runs are the child runs of a sub-plan step (`plan:`), shown as
	// display-only lines under the step's row.
	runs []*childRun
	// fanStart and fanEnd, on a fan-out's row, are when its first item
	// started and its last one ended: its duration is their span.
	fanStart, fanEnd time.Time
	// first is when the step's first attempt seen here started, ended when
	// it became final: with several attempts (retries, a handler's re-run)
	// its duration is their span, not its last attempt's.
	first, ended time.Time
}

// shownDur is a finished step's duration as the views show it: its last
// attempt's, or with more than one attempt the span from its first.
func (r *stepRow) shownDur() (time.Duration, bool) {
	if r.attempt > 1 && !r.first.IsZero() && !r.ended.IsZero() && r.ended.After(r.first) {
		return r.ended.Sub(r.first), true
	}
	return r.dur, r.hasDur
}

// childRun is a sub-plan step's child run (or a grandchild run) as the view
// knows it from the child's events: its steps, shown nested under the step
// that runs it. Its lines are display-only: they are never selected.
type childRun struct {
	id     string
	depth  int    // 1: run by a step of this run; 2: by a step of a child run; …
	via    string // the child step ids leading to a grandchild run ("" at depth 1)
	status string // the run's outcome once it ended; "" while it runs
	steps  []*childStep
	byID   map[string]*childStep
	idW    int
}

// childStep is one step of a child run.
type childStep struct {
	id, name string
	status   string
	attempt  int
	exit     *int
	err      string
	handler  string
	started  time.Time
	dur      time.Duration
	hasDur   bool
	runs     []*childRun // grandchild runs, when this step is a sub-plan step too
}

type phaseRow struct {
	name  string
	steps []int
	done  int
	bad   int
}

// flatRow is one line of the step list: a phase title (step < 0), a step,
// or (run set) a display-only line nested under step: the title of a child
// run (cstep nil) or one of its steps.
type flatRow struct {
	phase int
	step  int
	run   *childRun
	cstep *childStep
}

// Model is the bubbletea model of the live view. It only consumes events;
// it never starts a process or touches the store.
type Model struct {
	opt    Options
	st     Styles
	keys   KeyMap
	now    func() time.Time
	steps  []*stepRow
	byID   map[string]*stepRow
	phases []*phaseRow
	rows   []flatRow
	counts map[string]int
	idW    int
	attW   int // width of the attempt column: grows, never shrinks, so rows stay still
	statW  int // the longest status shown so far, the status column in a narrow window (grows too)

	width, height int
	sel           int
	top           int  // first visible row of the list
	track         bool // f: select each step that starts running ("follow" is the log's tail)
	showLog       bool
	showHelp      bool
	logOff        int // lines scrolled back from the newest, in the log view
	lv            logView

	start      time.Time
	end        time.Time
	runStatus  string // "" while running
	interrupts int
	detached   bool // q: the view was left, the run goes on
	msg        string
	msgAlert   bool
	msgUntil   time.Time
	confirm    string // the step that a second x fails for good ("" when none)
	frame      int
	events     int // events applied, so an empty summary can be left out
	done       bool
	dropped    int

	// items are the item steps of fan-outs, by id; fans the progress of
	// each fan-out, by its step id (the row that shows it).
	items map[string]*itemState
	fans  map[string]*exec.ItemCounts
	// itemsOf are the items of each fan-out in plan order; pendingItems
	// counts the items that are pending_failed.
	itemsOf      map[string][]*itemState
	pendingItems int

	// decideLater ends the session's wait for decisions (q while it waits);
	// nil when the session does not wait (Options.WaitDecisions). leftLater
	// is set once q left them for later; offered once the view pointed at a
	// pending_failed step for the current wait.
	decideLater func()
	leftLater   bool
	offered     bool

	// usage is the owner's last answer to Options.Usage (nil: none, or a
	// run whose steps request nothing); waitWhy is why each waiting step
	// waits, by row: a fan-out's row has its first waiting item's reason
	// and waitItems counts them. asking is set while a question is out;
	// askedAt is when the last one went.
	usage     *exec.Usage
	waitWhy   map[string]string
	waitItems map[string]int
	asking    bool
	askedAt   time.Time

	childRuns map[string]*childRun // every child and grandchild run, by run id
	rowsDirty bool                 // child lines were added: layoutRows is due
	plainSt   Styles               // colourless, for the child-event lines of the log pane

	// eta is Options.Estimate's last answer, asked at etaAt.
	eta   string
	etaAt time.Time

	// spent is what each step (an item too) has spent, as its last
	// step_status said, in spentOrder as first seen; budgets the lines
	// of Options.Budgets from it (nil: to work out again).
	spent      map[string]*exec.StepState
	spentOrder []*exec.StepState
	budgets    []exec.BudgetLine
}

// NewModel returns the model for a run; New wraps it in a running program.
func NewModel(opt Options) *Model {
	m := &Model{
		opt:       opt,
		st:        opt.Styles,
		keys:      DefaultKeyMap(),
		now:       opt.Now,
		byID:      map[string]*stepRow{},
		counts:    map[string]int{},
		plainSt:   NewStyles(false),
		childRuns: map[string]*childRun{},
		spent:     map[string]*exec.StepState{},
		items:     map[string]*itemState{},
		fans:      map[string]*exec.ItemCounts{},
		itemsOf:   map[string][]*itemState{},
		width:     80,
		height:    24,
		attW:      3,
		statW:     len(exec.StatusPending),
		track:     true,
		lv:        logView{cur: -1},
	}
	if opt.Keys != nil {
		m.keys = *opt.Keys
	} else if opt.Attached {
		m.keys = attachedKeys(m.keys)
	}
	if m.now == nil {
		m.now = time.Now
	}
	if opt.WaitDecisions && !opt.Attached {
		m.decideLater = func() {} // New ends the session's wait
	}
	m.start = m.now()
	for _, d := range opt.Steps {
		m.addStep(d)
	}
	m.layoutRows()
	for id, ps := range opt.Prior {
		if ps != nil {
			m.spentOf(id, ps.Phase, ps.Spent)
		}
		if it := m.items[id]; it != nil && ps != nil {
			m.setItemStatus(it, ps.Status)
			continue
		}
		r := m.byID[id]
		if r == nil || ps == nil {
			continue
		}
		m.setStatus(r, ps.Status)
		r.attempt, r.exit, r.err = ps.Attempt, ps.ExitCode, ps.Error
		if ps.DurationMs > 0 && ps.Status != exec.StatusInProgress {
			r.dur, r.hasDur = time.Duration(ps.DurationMs)*time.Millisecond, true
		}
		r.classified = ps.Classified
		m.fitAttempt(r)
		if ps.ChildRunID != "" {
			m.newChildRun(r, nil, "", ps.ChildRunID)
		}
	}
	if m.rowsDirty {
		m.layoutRows()
	}
	return m
}

// addStep appends a step (and its phase, when new); layoutRows must follow.
func (m *Model) addStep(d StepDef) *stepRow {
	if d.Name == "" {
		d.Name = d.ID
	}
	if d.FanOut != "" {
		m.addItem(d)
		return nil
	}
	pi := -1
	for i, p := range m.phases {
		if p.name == d.Phase {
			pi = i
			break
		}
	}
	if pi < 0 {
		m.phases = append(m.phases, &phaseRow{name: d.Phase})
		pi = len(m.phases) - 1
	}
	r := &stepRow{def: d, index: len(m.steps), phase: pi, status: exec.StatusPending}
	m.steps = append(m.steps, r)
	m.byID[d.ID] = r
	m.phases[pi].steps = append(m.phases[pi].steps, r.index)
	m.counts[exec.StatusPending]++
	if w := len(d.ID); w > m.idW {
		m.idW = w
	}
	return r
}

// layoutRows rebuilds the flat list: each phase title followed by its steps,
// each step followed by the lines of its child runs.
func (m *Model) layoutRows() {
	m.rows = m.rows[:0]
	m.rowsDirty = false
	for pi, p := range m.phases {
		m.rows = append(m.rows, flatRow{phase: pi, step: -1})
		for _, si := range p.steps {
			r := m.steps[si]
			r.row = len(m.rows)
			m.rows = append(m.rows, flatRow{phase: pi, step: si})
			for _, cr := range r.runs {
				m.layoutRun(pi, si, cr)
			}
			r.rowEnd = len(m.rows) - 1
		}
	}
}

// layoutRun appends a child run's title line, then its steps, each followed
// by its own (grandchild) runs.
func (m *Model) layoutRun(pi, si int, cr *childRun) {
	m.rows = append(m.rows, flatRow{phase: pi, step: si, run: cr})
	for _, cs := range cr.steps {
		m.rows = append(m.rows, flatRow{phase: pi, step: si, run: cr, cstep: cs})
		for _, g := range cs.runs {
			m.layoutRun(pi, si, g)
		}
	}
}

// setStatus changes a step's status and keeps the counters right.
func (m *Model) setStatus(r *stepRow, status string) {
	if r.status == status {
		return
	}
	m.counts[r.status]--
	m.counts[status]++
	p := m.phases[r.phase]
	if exec.Terminal(r.status) {
		p.done--
	}
	if exec.Terminal(status) {
		p.done++
	}
	if isBad(r.status) {
		p.bad--
	}
	if isBad(status) {
		p.bad++
	}
	wasActive := isActive(r.status)
	r.status = status
	m.statW = max(m.statW, len(status))
	if isActive(status) && !wasActive {
		r.activeSince = m.now()
	}
}

// fitAttempt widens the attempt column for the step's text.
func (m *Model) fitAttempt(r *stepRow) {
	m.attW = max(m.attW, len(attemptText(r)))
}

func isActive(s string) bool { return exec.Status(s).Active() }

func isBad(s string) bool {
	return s == exec.StatusFailure || s == exec.StatusRemediationFailed
}

// Init starts the spinner clock.
func (m *Model) Init() tea.Cmd { return m.tick() }

func (m *Model) tick() tea.Cmd {
	return tea.Tick(tickEvery, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// Update applies a message: a batch of events, a key, a resize or a tick.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case eventsMsg:
		child := false
		for _, e := range msg.events {
			m.apply(e)
			child = child || e.Type == exec.EvChildEvent
		}
		if m.rowsDirty {
			m.layoutRows()
		}
		if child {
			m.scrollTo() // nested lines came or changed under the steps
		}
		for step, n := range msg.dropped {
			m.dropped += n
			if r := m.byID[step]; r != nil {
				r.log.add(logLine{text: fmt.Sprintf("… %d lines not shown (the view fell behind); faber logs has them all", n), mark: true})
			}
		}
		m.offerDecision()
	case tickMsg:
		m.frame++
		if m.msg != "" && !m.msgUntil.IsZero() && m.now().After(m.msgUntil) {
			m.msg = ""
		}
		if m.done {
			return m, nil
		}
		if ask := m.askUsage(); ask != nil {
			return m, tea.Batch(m.tick(), ask)
		}
		return m, m.tick()
	case usageMsg:
		m.asking = false
		m.setUsage(msg.usage)
	case leaveMsg:
		m.detached = true
		return m, tea.Quit
	case endMsg:
		m.done = true
		if m.end.IsZero() {
			m.end = m.now()
		}
		return m, tea.Quit
	case tea.WindowSizeMsg:
		m.width, m.height = max(msg.Width, 20), max(msg.Height, 5)
		m.scrollTo()
	case tea.KeyMsg:
		return m, m.key(msg)
	case decidedMsg:
		switch {
		case msg.err != nil:
			m.say(fmt.Sprintf("decide %s: %v", msg.step, msg.err), true)
		case msg.approve:
			m.say(fmt.Sprintf("%s approved: it starts", msg.step), false)
		default:
			m.say(fmt.Sprintf("%s rejected: it fails; its on_failure decides what follows", msg.step), false)
		}
	case classifiedMsg:
		verb := "fail"
		if msg.retry {
			verb = "retry"
		}
		switch {
		case msg.err != nil:
			m.say(fmt.Sprintf("classify %s: %v", msg.step, msg.err), true)
		case msg.retry:
			m.say(fmt.Sprintf("%s classified %s: it runs again", msg.step, verb), false)
		default:
			m.say(fmt.Sprintf("%s classified %s: what depends on it is canceled", msg.step, verb), false)
		}
	}
	return m, nil
}

// say shows a message in the footer for a while.
func (m *Model) say(s string, alert bool) {
	m.msg, m.msgAlert, m.msgUntil = s, alert, m.now().Add(messageFor)
}

func (m *Model) key(k tea.KeyMsg) tea.Cmd {
	km := m.keys
	if !m.msgUntil.IsZero() { // a transient message goes with the next key
		m.msg = ""
	}
	confirm := m.confirm // a pending "x again" lasts one key
	if confirm != "" {
		m.confirm, m.msg = "", ""
	}
	if m.lv.typing && k.String() != "ctrl+c" {
		m.searchKey(k)
		return nil
	}
	switch {
	case km.Detach.Matches(k) && m.waiting():
		// The session waits for a decision: q leaves it for later, and
		// the view stays until the run has ended (pending_failed, exit 3).
		m.leftLater = true
		m.decideLater()
		m.msg, m.msgAlert, m.msgUntil = "left for later: the run ends pending_failed; faber classify, then faber resume, go on with it", true, time.Time{}
		return nil
	case km.Detach.Matches(k) || (m.opt.Attached && km.Quit.Matches(k)):
		// The run goes on; the caller tells how to come back (Detached).
		m.detached = true
		return tea.Quit
	case km.Quit.Matches(k):
		m.interrupts++
		hard := m.interrupts > 1
		if m.interrupts > 2 {
			// The run has not ended after a kill: leave the live view so the
			// terminal is usable; plain progress takes over.
			return tea.Quit
		}
		if m.opt.OnInterrupt != nil {
			m.opt.OnInterrupt(hard)
		}
		if hard {
			m.msg, m.msgAlert, m.msgUntil = "killing the running steps… (ctrl+c again: leave the live view)", true, time.Time{}
		} else {
			m.msg, m.msgAlert, m.msgUntil = "interrupting: stopping the run, the run stays resumable — ctrl+c again to kill now", true, time.Time{}
		}
		return nil
	case km.Help.Matches(k):
		m.showHelp = !m.showHelp
		return nil
	case km.Close.Matches(k):
		if !m.showHelp && m.clearSearch() {
			return nil
		}
		m.showHelp, m.showLog, m.logOff = false, false, 0
		return nil
	}
	if m.showHelp {
		return nil
	}
	if m.logKey(k) {
		return nil
	}
	page := max(m.listHeight()-2, 1)
	if m.showLog {
		page = max(m.height-4, 1)
	}
	switch {
	case km.ToggleLog.Matches(k):
		m.showLog = !m.showLog
		m.logOff = 0
	case km.Track.Matches(k):
		m.track = !m.track
		if m.track {
			m.trackActive(nil)
			m.say("tracking the running step", false)
		} else {
			m.say("stopped tracking the running step", false)
		}
	case km.Up.Matches(k):
		if m.showLog {
			m.scrollLog(1)
		} else {
			m.selectStep(m.sel - 1)
		}
	case km.Down.Matches(k):
		if m.showLog {
			m.scrollLog(-1)
		} else {
			m.selectStep(m.sel + 1)
		}
	case km.PageUp.Matches(k):
		if m.showLog {
			m.scrollLog(page)
		} else {
			m.selectStep(m.sel - page)
		}
	case km.PageDown.Matches(k):
		if m.showLog {
			m.scrollLog(-page)
		} else {
			m.selectStep(m.sel + page)
		}
	case km.Top.Matches(k):
		if m.showLog {
			m.scrollLog(1 << 30)
		} else {
			m.selectStep(0)
		}
	case km.Bottom.Matches(k):
		if m.showLog {
			m.logOff = 0
		} else {
			m.selectStep(len(m.steps) - 1)
		}
	case km.Approve.Matches(k):
		return m.decide(true, confirm)
	case km.Fail.Matches(k) && m.selected() != nil && m.selected().status == exec.StatusAwaitingApproval:
		return m.decide(false, confirm)
	case km.Retry.Matches(k), km.Fail.Matches(k):
		return m.classify(km.Retry.Matches(k), confirm)
	}
	return nil
}

// decide handles a / x x on a step at its approval gate (README "Approval
// gates"): a approves it at once; x asks first, and rejects it when the
// next key is x again on the same step.
func (m *Model) decide(approve bool, confirmed string) tea.Cmd {
	r := m.selected()
	if r == nil || r.status != exec.StatusAwaitingApproval {
		m.say("a / x x decide a step awaiting approval; select one first", false)
		return nil
	}
	id := r.def.ID
	if m.opt.OnDecide == nil || m.runStatus != "" {
		m.say(fmt.Sprintf("faber approve %s %s (or faber reject ... --reason '...'), then faber resume %s", m.opt.RunID, ShellQuote(id), m.opt.RunID), true)
		return nil
	}
	if !approve && confirmed != id {
		m.confirm = id
		m.msg, m.msgAlert, m.msgUntil = fmt.Sprintf("x again to reject %s (it fails; its on_failure decides); any other key keeps it waiting", id), true, time.Time{}
		return nil
	}
	fn := m.opt.OnDecide
	m.say(fmt.Sprintf("deciding %s…", id), false)
	return func() tea.Msg {
		return decidedMsg{step: id, approve: approve, err: fn(id, approve)}
	}
}

// classify handles r / x on the selected step: r retries it at once; x asks
// first, and fails it when the next key is x again on the same step
// (confirmed names the step that the previous x asked about). On a
// fan-out's row they classify its pending_failed items.
func (m *Model) classify(retry bool, confirmed string) tea.Cmd {
	r := m.selected()
	ids := m.decisionIDs(r)
	if len(ids) == 0 {
		m.say("r / x classify a pending_failed step; select one first", false)
		return nil
	}
	id := r.def.ID
	what := id
	if len(ids) > 1 || ids[0] != id {
		what = fmt.Sprintf("%s (%d pending_failed %s)", id, len(ids), plural(len(ids), "item", "items"))
	}
	if m.opt.OnClassify == nil || m.runStatus != "" {
		// No session to apply it (or it has ended): say how to do it.
		m.say(ClassifyHint(m.opt.RunID, ids)+", then faber resume "+m.opt.RunID, true)
		return nil
	}
	if !retry && confirmed != id {
		m.confirm = id
		m.msg, m.msgAlert, m.msgUntil = fmt.Sprintf("x again to fail %s and cancel its dependents; any other key keeps it waiting", what), true, time.Time{}
		return nil
	}
	fn := m.opt.OnClassify
	m.say(fmt.Sprintf("classifying %s…", what), false)
	return func() tea.Msg {
		for _, it := range ids {
			if err := fn(it, retry); err != nil {
				return classifiedMsg{step: it, retry: retry, err: err}
			}
		}
		return classifiedMsg{step: what, retry: retry}
	}
}

// decisionIDs are what r / x on row r classify: the step when it is
// pending_failed, else its pending_failed items (a fan-out), in order.
func (m *Model) decisionIDs(r *stepRow) []string {
	if r == nil {
		return nil
	}
	if r.status == exec.StatusPendingFailed {
		return []string{r.def.ID}
	}
	var ids []string
	if m.pendingItems > 0 {
		for _, it := range m.itemsOf[r.def.ID] {
			if it.status == exec.StatusPendingFailed {
				ids = append(ids, it.id)
			}
		}
	}
	return ids
}

// waiting reports whether the session waits for a decision, as far as the
// view knows: it was told the session waits (WaitDecisions), the run goes
// on, nothing runs, and a step or item is pending_failed.
func (m *Model) waiting() bool {
	if m.decideLater == nil || m.leftLater || m.runStatus != "" || m.interrupts > 0 {
		return false
	}
	if m.counts[exec.StatusPendingFailed] == 0 && m.pendingItems == 0 && m.counts[exec.StatusAwaitingApproval] == 0 {
		return false
	}
	if m.counts[exec.StatusInProgress]+m.counts[exec.StatusRemediating]+m.counts[exec.StatusRetrying] > 0 {
		return false
	}
	for _, f := range m.fans {
		if f.Running > 0 {
			return false
		}
	}
	return true
}

// offerDecision, when the session starts waiting for a decision, selects
// the first step that waits (unless one is selected already), so that r
// and x x act on it.
func (m *Model) offerDecision() {
	if !m.waiting() {
		m.offered = false
		return
	}
	if m.offered {
		return
	}
	m.offered = true
	if len(m.decisionIDs(m.selected())) > 0 {
		return
	}
	if r := m.selected(); r != nil && r.status == exec.StatusAwaitingApproval {
		return
	}
	for _, r := range m.steps {
		if len(m.decisionIDs(r)) > 0 || r.status == exec.StatusAwaitingApproval {
			m.setSel(r.index)
			return
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// selectStep moves the selection (by hand: tracking stops).
func (m *Model) selectStep(i int) {
	if len(m.steps) == 0 {
		return
	}
	i = min(max(i, 0), len(m.steps)-1)
	m.track = false
	m.setSel(i)
}

func (m *Model) setSel(i int) {
	if i != m.sel {
		m.logOff = 0
		m.lv.cur = -1 // a line number of the other step's log
	}
	m.sel = i
	m.scrollTo()
}

func (m *Model) selected() *stepRow {
	if m.sel < 0 || m.sel >= len(m.steps) {
		return nil
	}
	return m.steps[m.sel]
}

// scrollLog moves the log view back (n > 0) or forward in the selected step's output.
func (m *Model) scrollLog(n int) {
	r := m.selected()
	if r == nil {
		return
	}
	maxOff := max(r.log.len()-m.logBodyHeight(), 0)
	if m.lv.wrap { // a line may take several rows: down to the oldest one at the bottom
		maxOff = max(r.log.len()-1, 0)
	}
	m.logOff = min(max(m.logOff+n, 0), maxOff)
}

// trackActive selects the most recently started running step, if any
// (other than skip).
func (m *Model) trackActive(skip *stepRow) {
	var best *stepRow
	for _, r := range m.steps {
		if r == skip || !isActive(r.status) {
			continue
		}
		if best == nil || r.activeSince.After(best.activeSince) {
			best = r
		}
	}
	if best != nil {
		m.setSel(best.index)
	}
}

// step returns the row of a step, adding it when the plan did not name it.
func (m *Model) step(id string, e exec.Event) *stepRow {
	if r := m.byID[id]; r != nil {
		return r
	}
	if it := m.items[id]; it != nil {
		return m.fanRow(it)
	}
	var phase string
	if d, ok := e.Data.(*exec.StepStatus); ok {
		phase = d.Phase
	}
	r := m.addStep(StepDef{ID: id, Phase: phase})
	m.layoutRows()
	return r
}

// apply folds one event into the view.
func (m *Model) apply(e exec.Event) {
	m.events++
	switch e.Type {
	case exec.EvRunStarted:
		d := data[exec.RunStarted](e)
		if !e.Time.IsZero() {
			m.start = e.Time
		}
		if d.Plan != "" && m.opt.Plan == "" {
			m.opt.Plan = d.Plan
		}
		if m.opt.RunID == "" {
			m.opt.RunID = e.RunID
		}
		if len(m.steps) == 0 {
			if infos := d.Steps; len(infos) > 0 {
				for _, in := range infos {
					m.addStep(StepDef{ID: in.ID, Name: in.Name, Phase: in.Phase, FanOut: in.FanOut})
				}
				m.layoutRows()
			}
		}
	case exec.EvRunResumed:
		if !e.Time.IsZero() {
			m.start = e.Time
		}
		m.runStatus, m.end = "", time.Time{}
	case exec.EvFanOutExpanded:
		m.applyExpanded(e.StepID, data[exec.FanOutExpanded](e))
	case exec.EvStepStatus:
		if d, ok := e.Data.(*exec.StepStatus); ok && d.Spent != nil {
			m.spentOf(e.StepID, d.Phase, d.Spent)
		}
		if it := m.items[e.StepID]; it != nil {
			m.applyItemStatus(it, e)
			return
		}
		m.applyStatus(e)
	case exec.EvStepOutput:
		if e.StepID == "" {
			return
		}
		if it := m.items[e.StepID]; it != nil {
			m.applyItemLine(it, e)
			return
		}
		m.applyLine(m.step(e.StepID, e), e)
	case exec.EvChildEvent:
		if e.StepID == "" || e.Child == nil || e.Child.RunID == "" {
			return
		}
		m.applyChild(m.step(e.StepID, e), *e.Child)
	case exec.EvRetryReserved:
		r := m.step(e.StepID, e)
		d := data[exec.RetryReserved](e)
		r.retries, r.budget, r.budgetBy = d.RetryCount, d.MaxRetries, d.FailureHandler
		msg := fmt.Sprintf("retry %d/%d reserved by failure handler %s", r.retries, r.budget, r.budgetBy)
		if d.DelayMs > 0 {
			msg += ", after " + fmtDur(time.Duration(d.DelayMs)*time.Millisecond)
		}
		r.log.add(logLine{text: msg, mark: true})
		m.fitAttempt(r)
	case exec.EvRecoveryFinished:
		r := m.step(e.StepID, e)
		code := 0
		if e.ExitCode != nil {
			code = *e.ExitCode
		}
		r.log.add(logLine{text: fmt.Sprintf("recovery script exited %d", code), mark: true})
	case exec.EvHandlerInvoked:
		r := m.step(e.StepID, e)
		d := data[exec.HandlerInvoked](e)
		r.handler = d.HandlerCommand
		r.retries, r.budget = d.RetryCount, d.MaxRetries
		r.budgetBy = "on_failure"
		status, message := handlerOutcome(d.HandlerResult)
		text := fmt.Sprintf("on_failure %s: %s", status, oneLine(message))
		if hr := d.HandlerResult; hr != nil && hr.Spent != nil {
			text += " · spent " + hr.Spent.Text()
		}
		r.log.add(logLine{text: text, mark: true})
		m.fitAttempt(r)
	case exec.EvStepOrphaned:
		r := m.step(e.StepID, e)
		r.log.add(logLine{text: "was running when faber died: " + data[exec.StepOrphaned](e).Message, mark: true})
	case exec.EvStepSubmitted:
		r := m.step(e.StepID, e)
		r.log.add(logLine{text: "submitted as job " + data[exec.StepSubmitted](e).Job, mark: true})
	case exec.EvStepReattached:
		r := m.step(e.StepID, e)
		r.log.add(logLine{text: "re-attached to its job " + data[exec.StepReattached](e).Job + ", which outlived faber", mark: true})
	case exec.EvStepClassified:
		r := m.step(e.StepID, e)
		r.classified = data[exec.StepClassified](e).Action
	case exec.EvWarning:
		m.say("warning: "+data[exec.Warning](e).Message, true)
	case exec.EvWorkflowCompleted, exec.EvWorkflowFailed:
		m.runStatus = e.Status
		m.setUsage(nil) // nothing waits in an ended run
		m.end = e.Time
		if m.end.IsZero() {
			m.end = m.now()
		}
	}
}

func (m *Model) applyStatus(e exec.Event) {
	r := m.step(e.StepID, e)
	prev := r.status
	m.setStatus(r, e.Status)
	if e.Attempt > 0 {
		r.attempt = e.Attempt
		m.fitAttempt(r)
	}
	d := data[exec.StepStatus](e)
	r.exit = e.ExitCode
	r.err = d.Error
	if ae := d.AttemptEnd; ae != nil && ae.Resources != nil {
		r.peak, r.limit, r.cause = ae.Resources.PeakRSSBytes, ae.Resources.MemoryLimitBytes, ae.Cause
		r.peakBound = !ae.Resources.PeakExact()
		if ae.ExitCode == nil {
			r.peak = 0 // no process ran (a rejection): nothing was measured
		}
	}
	if ae := d.AttemptEnd; ae != nil && ae.Spent != nil {
		r.log.add(logLine{text: fmt.Sprintf("attempt %d spent %s", ae.Attempt, ae.Spent.Text()), mark: true})
	}
	switch e.Status {
	case exec.StatusInProgress:
		r.started = timeOr(d.StartedAt, e.Time)
		r.hasDur = false
		r.classified = "" // a classification is spent once its attempt starts
		if r.first.IsZero() {
			r.first = r.started
		}
		r.ended = time.Time{}
	case exec.StatusRemediating:
		if d.HandlerCommand != "" {
			r.handler = d.HandlerCommand
		} else if prev != exec.StatusRemediating {
			r.handler = r.def.Handler
		}
	}
	if d.DurationMs != nil && e.Status != exec.StatusInProgress {
		r.dur, r.hasDur = time.Duration(*d.DurationMs)*time.Millisecond, true
	}
	if exec.Terminal(e.Status) {
		m.fanEnded(r, e.Time)
		r.ended = e.Time
	}
	if !m.track {
		return
	}
	if e.Status == exec.StatusInProgress && prev != exec.StatusInProgress {
		m.setSel(r.index)
	} else if !isActive(e.Status) && m.sel == r.index {
		m.trackActive(r)
	}
}

func (m *Model) applyLine(r *stepRow, e exec.Event) {
	out := data[exec.StepOutput](e)
	kind := out.Kind
	if kind == "" {
		kind = "attempt"
	}
	if e.Attempt != r.lastAttempt || kind != r.lastKind {
		if r.log.total > 0 || e.Attempt > 1 || kind != "attempt" {
			label := "attempt " + strconv.Itoa(e.Attempt)
			switch kind {
			case "handler":
				label = "on_failure handler (after attempt " + strconv.Itoa(e.Attempt) + ")"
			case "recovery":
				label = "recovery script (after attempt " + strconv.Itoa(e.Attempt) + ")"
			}
			r.log.add(logLine{text: label, mark: true})
		}
		r.lastAttempt, r.lastKind = e.Attempt, kind
	}
	text := sanitize(e.Line)
	stderr := out.Stream == "stderr"
	r.log.add(logLine{text: text, stderr: stderr})
	if kind == "attempt" && strings.TrimSpace(text) != "" {
		r.lastLine = text
	}
	if m.showLog && m.logOff > 0 && m.sel == r.index {
		m.scrollLog(1) // keep the lines in view still while reading back
	}
}

// applyChild folds one event of a child run of step r into the view: the
// nested lines under r, and a line in r's log pane. A grandchild run's
// events carry the run and step that run it (parent_run_id,
// parent_step_id); they nest under that step of the child run, or under r
// when that run is not known.
func (m *Model) applyChild(r *stepRow, c exec.Event) {
	cr := m.childRuns[c.RunID]
	if cr == nil {
		ps := c.ParentStepID
		p := m.childRuns[c.ParentRunID]
		if ps == "" {
			p = nil
		}
		cr = m.newChildRun(r, p, ps, c.RunID)
	}
	switch c.Type {
	case exec.EvRunStarted, exec.EvRunResumed:
		cr.status = ""
		var infos []exec.StepInfo
		switch d := c.Data.(type) {
		case *exec.RunStarted:
			infos = d.Steps
		case *exec.RunResumed:
			infos = d.Steps
		}
		for _, in := range infos {
			cs := m.childStep(cr, in.ID)
			if in.Name != "" {
				cs.name = in.Name
			}
		}
	case exec.EvStepStatus:
		if c.StepID == "" {
			break
		}
		cs := m.childStep(cr, c.StepID)
		prev := cs.status
		cs.status = c.Status
		m.statW = max(m.statW, len(c.Status))
		if c.Attempt > 0 {
			cs.attempt = c.Attempt
		}
		d := data[exec.StepStatus](c)
		cs.exit = c.ExitCode
		cs.err = d.Error
		switch c.Status {
		case exec.StatusInProgress:
			def := c.Time
			if def.IsZero() {
				def = m.now()
			}
			cs.started = timeOr(d.StartedAt, def)
			cs.hasDur = false
		case exec.StatusRemediating:
			if d.HandlerCommand != "" {
				cs.handler = d.HandlerCommand
			} else if prev != exec.StatusRemediating {
				cs.handler = ""
			}
		}
		if d.DurationMs != nil && c.Status != exec.StatusInProgress {
			cs.dur, cs.hasDur = time.Duration(*d.DurationMs)*time.Millisecond, true
		}
	case exec.EvHandlerInvoked:
		if d, ok := c.Data.(*exec.HandlerInvoked); ok && c.StepID != "" {
			m.childStep(cr, c.StepID).handler = d.HandlerCommand
		}
	case exec.EvWorkflowCompleted, exec.EvWorkflowFailed:
		cr.status = c.Status
	}
	if l := PlainLine(c, m.plainSt); l != "" {
		if cr.via != "" {
			l = cr.via + " ↳ " + l
		}
		r.log.add(logLine{text: sanitize([]byte(l)), child: true})
		if m.showLog && m.logOff > 0 && m.sel == r.index {
			m.scrollLog(1)
		}
	}
}

// newChildRun records a child run under step r (parent nil) or, a
// grandchild run, under step ps of the child run parent.
func (m *Model) newChildRun(r *stepRow, parent *childRun, ps, id string) *childRun {
	cr := &childRun{id: id, depth: 1, byID: map[string]*childStep{}}
	if parent != nil {
		cs := m.childStep(parent, ps)
		cs.runs = append(cs.runs, cr)
		cr.depth = parent.depth + 1
		cr.via = ps
		if parent.via != "" {
			cr.via = parent.via + " ↳ " + ps
		}
	} else {
		r.runs = append(r.runs, cr)
	}
	m.childRuns[id] = cr
	m.rowsDirty = true
	return cr
}

// childStep returns a step of a child run, adding it when new.
func (m *Model) childStep(cr *childRun, id string) *childStep {
	if cs := cr.byID[id]; cs != nil {
		return cs
	}
	cs := &childStep{id: id, name: id, status: exec.StatusPending}
	cr.steps = append(cr.steps, cs)
	cr.byID[id] = cs
	cr.idW = max(cr.idW, len(id))
	m.rowsDirty = true
	return cs
}

// stepInfos reads the steps field of run_started or run_resumed: live
func handlerOutcome(r *exec.HandlerResult) (status, message string) {
	if r == nil {
		return "done", ""
	}
	return r.Status, r.Message
}

func timeOr(t *time.Time, def time.Time) time.Time {
	if t != nil {
		return *t
	}
	if def.IsZero() {
		return time.Now()
	}
	return def
}

// Detached reports whether the view was left with q while the run goes on.
func (m *Model) Detached() bool { return m.detached }
