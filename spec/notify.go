// Notifications: the plan's notify: list, commands run on chosen events
// (README "Notifications").

package spec

import (
	"strings"
	"time"

	"github.com/faber-run/faber/spec/subst"
)

// The event kinds a notification can be run on.
const (
	// NotifyRunFinished: the end of every session that evaluated the run,
	// whatever its status.
	NotifyRunFinished = "run_finished"
	// NotifyRunFailed: the run ended failed or remediation_failed.
	NotifyRunFailed = "run_failed"
	// NotifyRunInterrupted: the run ended interrupted (Ctrl-C, SIGTERM).
	NotifyRunInterrupted = "run_interrupted"
	// NotifyStepFailed: a step became failure or remediation_failed (final;
	// never on a retry).
	NotifyStepFailed = "step_failed"
	// NotifyAwaitingDecision: a step waits for a person: pending_failed, or
	// awaiting_approval.
	NotifyAwaitingDecision = "awaiting_decision"
)

// NotifyKinds are the accepted kinds, in the order the README lists them.
var NotifyKinds = []string{NotifyRunFinished, NotifyRunFailed, NotifyStepFailed, NotifyAwaitingDecision, NotifyRunInterrupted}

// NotifyDefaultTimeout is a notification's timeout when it sets none.
const NotifyDefaultTimeout = 30 * time.Second

// notifyBuiltins are the variables a notification's command may use
// besides the context.
var notifyBuiltins = []string{"run_id", "plan", "plan_name", "event", "step_id", "status", "error"}

// NotifyBuiltins returns the names of the built-in variables of a
// notification's command.
func NotifyBuiltins() []string { return append([]string(nil), notifyBuiltins...) }

// Notify is one entry of the plan's notify: list.
type Notify struct {
	On      []string      // kinds, as written (deduplicated)
	Run     string        // shell script template
	Timeout time.Duration // NotifyDefaultTimeout unless set
	Pos     Pos
}

// Wants reports whether the notification is run on kind.
func (n *Notify) Wants(kind string) bool {
	for _, k := range n.On {
		if k == kind {
			return true
		}
	}
	return false
}

type rawNotify struct {
	rawMeta
	On      list[str] `yaml:"on" required:"true" enum:"run_finished,run_failed,step_failed,awaiting_decision,run_interrupted" doc:"Event kinds that run the command: run_finished (every end of a session), run_failed (the run ended failed or remediation_failed), step_failed (a step ended failure or remediation_failed), awaiting_decision (a step became pending_failed or awaiting_approval), run_interrupted."`
	Run     str       `yaml:"run" required:"true" doc:"Shell script run as <shell> -c in the plan's directory, with the event as JSON on stdin; {run_id}, {plan}, {event}, {step_id}, {status}, {error} and context variables are substituted safely."`
	Timeout durv      `yaml:"timeout" doc:"Time limit of the command (Go duration, default 30s); its process group is killed then."`
}

// notify builds the plan's notifications.
func (b *builder) notify(raw *rawPlan) {
	for _, rn := range raw.Notify.Items {
		if rn == nil {
			continue
		}
		n := &Notify{Run: rn.Run.V, Timeout: NotifyDefaultTimeout, Pos: rn.Pos}
		if rn.Timeout.Set {
			n.Timeout = rn.Timeout.V
			if n.Timeout == 0 {
				b.errorf(rn.Timeout.Pos, "%s: timeout must be more than 0", rn.Where)
			}
		}
		for _, k := range rn.On.Items {
			if !k.Set {
				continue
			}
			if !contains(NotifyKinds, k.V) {
				hint := suggest(k.V, NotifyKinds)
				if hint == "" {
					hint = " (use " + orList(NotifyKinds) + ")"
				}
				b.errorf(k.Pos, "%s: on: unknown event kind %q%s", rn.Where, k.V, hint)
				continue
			}
			if !n.Wants(k.V) {
				n.On = append(n.On, k.V)
			}
		}
		if rn.On.Set && len(rn.On.Items) == 0 {
			b.errorf(rn.On.Pos, "%s: on: name at least one event kind (%s)", rn.Where, orList(NotifyKinds))
		}
		if rn.Run.Set && strings.TrimSpace(n.Run) == "" {
			b.errorf(rn.Run.Pos, "%s: run must not be empty", rn.Where)
		}
		b.notifyScript(&rn.Run, rn.Where+": run")
		b.plan.Notify = append(b.plan.Notify, n)
	}
}

// notifyScript checks the variables of a notification's command and that
// it renders for the plan's shell.
func (b *builder) notifyScript(s *str, where string) {
	if !strings.Contains(s.V, "{") {
		return
	}
	refs := subst.Names(s.V)
	seen := map[string]bool{}
	for _, ref := range refs {
		if seen[ref.Name] {
			continue
		}
		seen[ref.Name] = true
		if contains(notifyBuiltins, ref.Name) {
			continue
		}
		if b.known[ref.Name] {
			b.used[ref.Name] = true
			continue
		}
		names := append(NotifyBuiltins(), b.plan.ContextKeys...)
		b.errorf(b.varPos(s, ref), "%s: unknown variable {%s}%s", where, ref.Name, suggest(ref.Name, names))
	}
	if len(refs) == 0 {
		return
	}
	if shell := b.plan.ShellFor(nil); !subst.IsPOSIXShell(shell) {
		b.errorf(s.Pos, "%s: uses {%s} but shell %q is not a POSIX shell (sh, bash, dash, zsh, ksh); substitution needs one", where, refs[0].Name, shell)
		return
	}
	b.scripts = append(b.scripts, scriptCheck{tmpl: s.V, refs: refs, pos: s.Pos, what: where})
}
