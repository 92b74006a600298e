package exec

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/spec/subst"
)

// The pure parts of how a step's processes are built. The runner uses them,
// and so does `faber run --dry-run`, so that what a dry run shows is what a
// run executes.

// KindScript is the kind of a step command that is a run: script, run by the
// step's shell (the other kinds are spec.ResolveCommand's).
const KindScript = "script"

// FailValues are the values of the built-ins that handlers and recovery
// scripts have on top of a step's: {error}, {exit_code}, {stdout_file} and
// {stderr_file} of the failed attempt.
type FailValues struct {
	Error      string
	ExitCode   string
	StdoutFile string
	StderrFile string
}

// StepVars returns the substitution map of a process of step s (SPEC §4.1):
// the plan's context, {plan_name}, {step_id}, {step_name}, {phase}, and the
// given {run_id} and {attempt}; with fail, also the failure built-ins.
func StepVars(p *spec.Plan, s *spec.Step, runID, attempt string, fail *FailValues) map[string]string {
	v := make(map[string]string, len(p.Context)+10)
	for k, val := range p.Context {
		v[k] = val
	}
	v["run_id"] = runID
	v["plan_name"] = p.Name
	v["step_id"] = s.ID
	v["step_name"] = s.Name
	v["phase"] = s.Phase
	v["attempt"] = attempt
	if s.Item != nil {
		for k, x := range s.Item.Vars() {
			v[k] = x
		}
	}
	if fail != nil {
		v["error"] = fail.Error
		v["exit_code"] = fail.ExitCode
		v["stdout_file"] = fail.StdoutFile
		v["stderr_file"] = fail.StderrFile
	}
	return v
}

// StepArgv returns the argv of an attempt of step s (not a sub-plan step),
// before any executor wrapping: a /command resolved per SPEC §4.1 (kind is
// spec.ResolveCommand's), or the run: script rendered for the step's shell
// (kind KindScript; the shell as named, not yet looked up in PATH), with the
// FABER_SUB_* entries the script reads its values from in env.
func StepArgv(p *spec.Plan, s *spec.Step, vars map[string]string) (argv, env []string, kind string, err error) {
	if spec.IsCommand(s.Run) {
		argv, kind, err = p.ResolveCommand(s.Run, nil, vars)
		if err != nil {
			return nil, nil, "", fmt.Errorf("step %q: %w", s.ID, err)
		}
		return argv, nil, kind, nil
	}
	argv, env, err = ScriptArgv(p, s, s.Run, vars)
	if err != nil {
		return nil, nil, "", fmt.Errorf("step %q: %w", s.ID, err)
	}
	return argv, env, KindScript, nil
}

// ScriptArgv renders script (a run: or a recovery script of step s) with
// subst.Script and returns the argv that runs it with the step's shell (as
// named, not looked up in PATH) and the FABER_SUB_* environment entries.
func ScriptArgv(p *spec.Plan, s *spec.Step, script string, vars map[string]string) (argv, env []string, err error) {
	text, env, err := subst.Script(script, vars)
	if err != nil {
		return nil, nil, err
	}
	return ShellArgv(p.ShellFor(s), text), env, nil
}

// ShellArgv returns the argv that runs script with shell: `cmd /C`,
// `powershell -Command`, else `<shell> -c` with no added flags (SPEC §10).
func ShellArgv(shell, script string) []string {
	base := strings.ToLower(filepath.Base(shell))
	if base == "cmd" || base == "cmd.exe" {
		return []string{shell, "/C", script}
	}
	if strings.HasPrefix(base, "powershell") || strings.HasPrefix(base, "pwsh") {
		return []string{shell, "-Command", script}
	}
	return []string{shell, "-c", script}
}

// WorkDir is the working directory of step s's processes: the plan's
// directory, or `dir` (substituted) relative to it.
func WorkDir(p *spec.Plan, s *spec.Step, vars map[string]string) string {
	if s.Dir == "" {
		return p.Dir
	}
	d, err := subst.Expand(s.Dir, vars)
	if err != nil {
		d = s.Dir
	}
	if filepath.IsAbs(d) {
		return d
	}
	return filepath.Join(p.Dir, d)
}

// HandlerTimeout is how long step s's on_failure command may run: the
// structured handler's handler_timeout, else the step's, else the plan's,
// else 30m.
func HandlerTimeout(p *spec.Plan, s *spec.Step) time.Duration {
	return firstDur(s.OnFailure.HandlerTimeout, s.HandlerTimeout, p.HandlerTimeout, 30*time.Minute)
}

// ChildContext returns the context a sub-plan step hands its child plan:
// the keys of its context: in file order, and their substituted values.
func ChildContext(s *spec.Step, vars map[string]string) (keys []string, vals map[string]string, err error) {
	vals = make(map[string]string, len(s.PlanContextKeys))
	for _, k := range s.PlanContextKeys {
		v, err := subst.Expand(s.PlanContext[k], vars)
		if err != nil {
			return nil, nil, fmt.Errorf("step %q: context %s: %w", s.ID, k, err)
		}
		keys = append(keys, k)
		vals[k] = v
	}
	return keys, vals, nil
}

// ChildValues is what a parent run hands the child run of a sub-plan step,
// in a private file (never in the child's argv, which every user of the
// machine can read): the child's context values, in order, and the values
// the parent masks, which the child masks too. Values are bytes (base64 in
// the file), UTF-8 or not.
type ChildValues struct {
	Keys    []string `json:"keys"`
	Values  [][]byte `json:"values"`
	Secrets [][]byte `json:"secrets,omitempty"`
}

// RemoveChildContexts removes the context files of a run's sub-plan steps
// (logs/<step>/attempt-N.context) that are still there. A child run
// removes its own as it reads it, so one that is left was written by a
// faber that died before its child read it: it holds the step's context,
// secrets included. The caller owns the run and has ended its leftover
// processes (resume).
func RemoveChildContexts(runDir string) {
	paths, _ := filepath.Glob(filepath.Join(runDir, "logs", "*", "attempt-*.context"))
	for _, p := range paths {
		_ = os.Remove(p)
	}
}

// WriteChildValues writes cv to a new file at path, readable by its owner
// only.
func WriteChildValues(path string, cv *ChildValues) error {
	b, err := json.Marshal(cv)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	_ = os.Remove(path) // a leftover of an earlier session: a new file gets 0600
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ReadChildValues reads and removes the file WriteChildValues wrote: the
// values are the child's to keep (in its own private meta.json), not the
// parent's log dir's.
func ReadChildValues(path string) (*ChildValues, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	_ = os.Remove(path)
	var cv ChildValues
	if err := json.Unmarshal(b, &cv); err != nil || len(cv.Keys) != len(cv.Values) {
		return nil, fmt.Errorf("%s: not a file of context values written by faber", path)
	}
	return &cv, nil
}

// Jobs is how many steps run at once: flag (--jobs) when set, else the
// plan's jobs, else the CPU count.
func Jobs(flag int, p *spec.Plan) int {
	switch {
	case flag > 0:
		return flag
	case p.Jobs > 0:
		return p.Jobs
	}
	return runtime.NumCPU()
}
