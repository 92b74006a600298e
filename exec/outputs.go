package exec

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/faber-run/faber/internal/regfile"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/spec/subst"
)

// Step outputs (README "Step outputs"): an attempt publishes named values by
// appending lines to the file $FABER_OUTPUTS names; the values of the
// step's successful attempt are kept with its record and substituted where
// a downstream step writes {steps.ID.outputs.KEY}.

// The limits of what a step publishes: a value, and all of a step's keys
// and values together. Past either, the attempt fails; nothing is cut.
const (
	MaxOutputValue = 1 << 20
	MaxStepOutputs = 4 << 20
)

// Output is one published value. Value holds the program's bytes exactly;
// in JSON it is "value" when it is UTF-8, else "value_base64".
type Output struct {
	Key   string
	Value string
}

type outputJSON struct {
	Key    string  `json:"key"`
	Value  *string `json:"value,omitempty"`
	Base64 string  `json:"value_base64,omitempty"`
}

// MarshalJSON keeps the value byte-exact: text as it is, other bytes in
// base64.
func (o Output) MarshalJSON() ([]byte, error) {
	j := outputJSON{Key: o.Key}
	if utf8.ValidString(o.Value) {
		j.Value = &o.Value
	} else {
		j.Base64 = base64.StdEncoding.EncodeToString([]byte(o.Value))
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads either form MarshalJSON writes.
func (o *Output) UnmarshalJSON(b []byte) error {
	var j outputJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	o.Key = j.Key
	switch {
	case j.Value != nil:
		o.Value = *j.Value
	case j.Base64 != "":
		v, err := base64.StdEncoding.DecodeString(j.Base64)
		if err != nil {
			return fmt.Errorf("output %q: %w", j.Key, err)
		}
		o.Value = string(v)
	default:
		o.Value = ""
	}
	return nil
}

// OutputsError is a problem with an outputs file: the attempt that wrote
// it fails with this as its {error}.
type OutputsError struct {
	Line int // 0: the file as a whole
	Msg  string
}

func (e *OutputsError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("$FABER_OUTPUTS line %d: %s", e.Line, e.Msg)
	}
	return "$FABER_OUTPUTS: " + e.Msg
}

// ParseOutputs reads an outputs file: KEY=VALUE lines and KEY<<DELIM
// heredocs (README "Step outputs"). A key given twice keeps its first place
// and its last value.
func ParseOutputs(b []byte) ([]Output, error) {
	var outs []Output
	at := map[string]int{}
	total := 0
	set := func(line int, k, v string) error {
		if len(v) > MaxOutputValue {
			return &OutputsError{line, fmt.Sprintf("the value of %s is %d bytes; a value may have at most %d (1 MiB)", k, len(v), MaxOutputValue)}
		}
		if i, ok := at[k]; ok {
			total -= len(outs[i].Value)
			outs[i].Value = v
		} else {
			at[k] = len(outs)
			outs = append(outs, Output{Key: k, Value: v})
			total += len(k)
		}
		total += len(v)
		if total > MaxStepOutputs {
			return &OutputsError{line, fmt.Sprintf("the step's outputs come to more than %d bytes (4 MiB), the most a step may publish", MaxStepOutputs)}
		}
		return nil
	}
	n := 0
	// next returns the next line without its \n; a heredoc's lines keep
	// every byte (a value may end in \r), other lines lose a \r before
	// the \n (CRLF files).
	next := func() (string, bool) {
		if len(b) == 0 {
			return "", false
		}
		n++
		i := bytes.IndexByte(b, '\n')
		var l []byte
		if i < 0 {
			l, b = b, nil
		} else {
			l, b = b[:i], b[i+1:]
		}
		return string(l), true
	}
	for {
		line, ok := next()
		if !ok {
			return outs, nil
		}
		line = strings.TrimSuffix(line, "\r")
		if line == "" {
			continue
		}
		kl := subst.KeyLen(line)
		key, rest := line[:kl], line[kl:]
		switch {
		case kl > 0 && strings.HasPrefix(rest, "="):
			if err := set(n, key, rest[1:]); err != nil {
				return nil, err
			}
		case kl > 0 && strings.HasPrefix(rest, "<<"):
			delim := rest[2:]
			if delim == "" {
				return nil, &OutputsError{n, fmt.Sprintf("%s<< names no delimiter (write %s<<EOF, the value's lines, then EOF)", key, key)}
			}
			start := n
			var lines []string
			size := 0
			for {
				l, ok := next()
				if !ok {
					return nil, &OutputsError{start, fmt.Sprintf("%s<<%s: no line %q ends the value", key, delim, delim)}
				}
				if l == delim || l == delim+"\r" {
					break
				}
				size += len(l) + 1
				if size > MaxOutputValue+1 {
					return nil, &OutputsError{start, fmt.Sprintf("the value of %s is more than %d bytes; a value may have at most %d (1 MiB)", key, MaxOutputValue, MaxOutputValue)}
				}
				lines = append(lines, l)
			}
			if err := set(start, key, strings.Join(lines, "\n")); err != nil {
				return nil, err
			}
		case kl == 0:
			return nil, &OutputsError{n, fmt.Sprintf("%q is not KEY=VALUE (a key is a letter or _ then letters, digits or _)", clipLine(line))}
		default:
			return nil, &OutputsError{n, fmt.Sprintf("%q has no = after the key %s (write %s=VALUE, or %s<<EOF for a value of several lines)", clipLine(line), key, key, key)}
		}
	}
}

// clipLine cuts a line quoted in a message to 60 bytes.
func clipLine(s string) string {
	if len(s) <= 60 {
		return s
	}
	s = s[:60]
	if i := lastStart(s); !utf8.FullRuneInString(s[i:]) {
		s = s[:i]
	}
	return s + "…"
}

// readOutputs reads the outputs file at path: none when there is no file.
// A file too large to hold outputs within the limits is not read whole.
func readOutputs(path string) ([]Output, error) {
	f, fi, err := regfile.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &OutputsError{Msg: err.Error()}
	}
	defer f.Close()
	if fi.Mode().Perm()&0o077 != 0 {
		privateResult(f, fi, path)
	}
	// Keys, '=' and line ends come on top of the values: room for them.
	const most = MaxStepOutputs + MaxStepOutputs/4
	if fi.Size() > most {
		return nil, &OutputsError{Msg: fmt.Sprintf("the file is %d bytes; a step may publish at most %d bytes (4 MiB)", fi.Size(), MaxStepOutputs)}
	}
	b, err := io.ReadAll(io.LimitReader(f, most+1))
	if err != nil {
		return nil, &OutputsError{Msg: err.Error()}
	}
	if len(b) > most {
		return nil, &OutputsError{Msg: fmt.Sprintf("the file is more than %d bytes; a step may publish at most %d bytes (4 MiB)", most, MaxStepOutputs)}
	}
	return ParseOutputs(b)
}

// outputOf is the value of key among outs.
func outputOf(outs []Output, key string) (string, bool) {
	for _, o := range outs {
		if o.Key == key {
			return o.Value, true
		}
	}
	return "", false
}

// UsesError is an output reference that cannot be substituted: the
// attempt (or handler, recovery script) that needs it does not start.
type UsesError struct {
	Ref spec.OutputRef
	Why string
}

func (e *UsesError) Error() string {
	return fmt.Sprintf("{%s}: %s", e.Ref.Name(), e.Why)
}

// readOutputs takes in what a successful attempt published. A file that
// breaks the format or a limit fails the attempt, as a result file saying
// failure would: its exit code stays, only match_all rules match it.
func (o *outcome) readOutputs(ps procSpec) {
	if ps.outputsPath == "" || o.failed() || o.stoppedBy != "" {
		return
	}
	outs, err := readOutputs(ps.outputsPath)
	if err != nil {
		o.resultStatus, o.resultMessage = "failure", err.Error()
		return
	}
	o.outputs = outs
}

// useValue is the value of output u for a step that substitutes it, or why
// there is none: the step that should have published it did not, failed
// (under on_failure: continue) or never ran.
func (r *Runner) useValue(u spec.OutputRef) (string, error) {
	p := r.byID[u.Step]
	switch {
	case p == nil:
		return "", &UsesError{u, fmt.Sprintf("this run has no step %q", u.Step)}
	case Status(p.st.Status).Succeeded():
		if v, ok := outputOf(p.st.Outputs, u.Key); ok {
			return v, nil
		}
		return "", &UsesError{u, fmt.Sprintf("step %q published no output %q (%s)", u.Step, u.Key, publishedKeys(p.st.Outputs))}
	case p.st.Status == StatusFailure:
		return "", &UsesError{u, fmt.Sprintf("step %q failed (on_failure: continue) and published no outputs", u.Step)}
	case p.st.Status == StatusSkipped:
		return "", &UsesError{u, fmt.Sprintf("step %q was skipped (its when: was false) and published no outputs", u.Step)}
	}
	return "", &UsesError{u, fmt.Sprintf("step %q is %s and published no outputs", u.Step, p.st.Status)}
}

// publishedKeys lists what a step published, for a message.
func publishedKeys(outs []Output) string {
	if len(outs) == 0 {
		return "it published none"
	}
	keys := make([]string, len(outs))
	for i, o := range outs {
		keys[i] = o.Key
	}
	return "it published " + strings.Join(keys, ", ")
}

// addUses puts the values of the outputs uses into vars; the first missing
// one is the error.
func (r *Runner) addUses(vars map[string]string, uses []spec.OutputRef) error {
	for _, u := range uses {
		v, err := r.useValue(u)
		if err != nil {
			return err
		}
		vars[u.Name()] = v
	}
	return nil
}

// addUsesIn is addUses for the output references in templates (a handler's
// command and args, a recovery script): those are found when they run.
func (r *Runner) addUsesIn(vars map[string]string, tmpls ...string) error {
	for _, name := range spec.OutputNames(tmpls...) {
		step, key, _ := subst.OutputRef(name)
		if err := r.addUses(vars, []spec.OutputRef{{Step: step, Key: key}}); err != nil {
			return err
		}
	}
	return nil
}

// useKey is what output u adds to the cache key of a step that uses it: a
// digest of its value, or "missing" (such a step fails; it is never a hit,
// as only a success writes an entry).
func (r *Runner) useKey(u spec.OutputRef) string {
	v, err := r.useValue(u)
	if err != nil {
		return "missing"
	}
	sum := sha256.Sum256([]byte(v))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// exitText is {exit_code} and FABER_RETURN_CODE of a failed attempt: empty
// when no process ran.
func (o *outcome) exitText() string {
	if o.noProcess {
		return ""
	}
	return strconv.Itoa(o.exitCode)
}

// AppendOutputs appends outs to the outputs file at path, each as a
// here-document whose delimiter is no line of its value: ParseOutputs
// reads back exactly these values. A sub-plan's child run hands its
// declared outputs to its parent step this way.
func AppendOutputs(path string, outs []Output) error {
	var b strings.Builder
	for _, o := range outs {
		delim := "FABER_EOF"
		for n := 1; hasLine(o.Value, delim); n++ {
			delim = "FABER_EOF_" + strconv.Itoa(n)
		}
		b.WriteString(o.Key + "<<" + delim + "\n" + o.Value + "\n" + delim + "\n")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(b.String())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// hasLine reports whether a line of v is delim (or delim and a CR).
func hasLine(v, delim string) bool {
	for _, l := range strings.Split(v, "\n") {
		if l == delim || l == delim+"\r" {
			return true
		}
	}
	return false
}

// PlanOutputs are the values a plan's outputs: declares, from its context
// and its steps' published values (states), in the order declared. A
// template that names a value no step published is left out, and named in
// missing.
func PlanOutputs(p *spec.Plan, runID string, states []*StepState) (outs []Output, missing []string) {
	vars := make(map[string]string, len(p.Context)+4)
	for k, v := range p.Context {
		vars[k] = v
	}
	vars["run_id"], vars["plan_name"] = runID, p.Name
	for _, st := range states {
		for _, o := range st.Outputs {
			vars[subst.OutputName(st.ID, o.Key)] = o.Value
		}
	}
	for _, k := range p.OutputKeys {
		v, err := subst.Expand(p.Outputs[k], vars)
		if err != nil {
			missing = append(missing, fmt.Sprintf("%s (%v)", k, err))
			continue
		}
		outs = append(outs, Output{Key: k, Value: v})
	}
	return outs, missing
}
