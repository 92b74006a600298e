package exec

import (
	"encoding/json"
	"time"
)

// StepInfo is the static description of a step carried by run_started and
// run_resumed events, so that readers can show a run without its plan.
type StepInfo struct {
	ID    string   `json:"id"`
	Name  string   `json:"name"`
	Phase string   `json:"phase"`
	Needs []string `json:"needs"`
}

// View is a run as rebuilt from its event log: what `faber status` shows.
type View struct {
	Run   RunState
	Steps []*StepState // plan order, the end step last
	// Owner fields are filled in by the caller.
	LastSeq int64
}

// Replay rebuilds a run's state from its events, oldest first. It is how
// processes other than the owner read a run: the event log is complete, so
// they never need the owner's store.
func Replay(events [][]byte) (*View, error) {
	v := &View{}
	byID := map[string]*StepState{}
	order := []string{}
	get := func(id string) *StepState {
		st := byID[id]
		if st == nil {
			st = &StepState{ID: id, Name: id, Status: StatusPending, Needs: []string{}}
			byID[id] = st
			order = append(order, id)
		}
		return st
	}
	setSteps := func(raw any) {
		infos, ok := raw.([]StepInfo)
		if !ok {
			return
		}
		newOrder := make([]string, 0, len(infos))
		seen := map[string]bool{}
		for _, in := range infos {
			st := get(in.ID)
			st.Name, st.Phase = in.Name, in.Phase
			st.Needs = in.Needs
			if st.Needs == nil {
				st.Needs = []string{}
			}
			newOrder = append(newOrder, in.ID)
			seen[in.ID] = true
		}
		for _, id := range order { // steps known only from events (e.g. "end")
			if !seen[id] {
				newOrder = append(newOrder, id)
			}
		}
		order = newOrder
	}
	for _, line := range events {
		e, err := decodeForReplay(line)
		if err != nil {
			return nil, err
		}
		v.LastSeq = e.Seq
		switch e.Type {
		case EvRunStarted:
			v.Run.RunID = e.RunID
			v.Run.StartedAt = e.Time
			v.Run.Status = RunInProgress
			if s, ok := e.Fields["plan"].(string); ok {
				v.Run.Plan = s
			}
			setSteps(e.Fields["steps"])
		case EvRunResumed:
			v.Run.Status = RunInProgress
			v.Run.FinishedAt = nil
			if e.Fields["steps"] != nil {
				setSteps(e.Fields["steps"])
			}
		case EvStepStatus:
			st := get(e.StepID)
			st.Status = e.Status
			st.Attempt = e.Attempt
			if p, ok := e.Fields["phase"].(string); ok && p != "" {
				st.Phase = p
			}
			st.Error, _ = e.Fields["error"].(string)
			if c, ok := e.Fields["child_run_id"].(string); ok {
				st.ChildRunID = c
			}
			st.ExitCode = e.ExitCode
			st.StartedAt = fieldTime(e.Fields["started_at"])
			st.FinishedAt = fieldTime(e.Fields["finished_at"])
			if d, ok := e.Fields["duration_ms"].(float64); ok {
				st.DurationMs = int64(d)
			} else {
				st.DurationMs = 0
			}
		case EvHandlerInvoked:
			st := get(e.StepID)
			rem := &Remediation{}
			rem.HandlerType, _ = e.Fields["handler_type"].(string)
			rem.HandlerCommand, _ = e.Fields["handler_command"].(string)
			t := e.Time
			rem.HandlerInvokedAt = &t
			if hr, ok := e.Fields["handler_result"].(HandlerResult); ok {
				rem.HandlerResult = &hr
			}
			if n, ok := e.Fields["retry_count"].(float64); ok {
				rem.RetryCount = int(n)
			}
			if n, ok := e.Fields["max_retries"].(float64); ok {
				rem.MaxRetries = int(n)
			}
			st.Remediation = rem
		case EvStepClassified:
			st := get(e.StepID)
			st.Classified, _ = e.Fields["action"].(string)
		case EvWorkflowCompleted, EvWorkflowFailed:
			v.Run.Status = e.Status
			if v.Run.Status == "" {
				v.Run.Status = RunFailed
				if e.Type == EvWorkflowCompleted {
					v.Run.Status = RunSuccess
				}
			}
			t := e.Time
			v.Run.FinishedAt = &t
		}
	}
	for _, id := range order {
		v.Steps = append(v.Steps, byID[id])
	}
	// The end step always comes last.
	for i, st := range v.Steps {
		if st.ID == "end" && i != len(v.Steps)-1 {
			v.Steps = append(append(v.Steps[:i:i], v.Steps[i+1:]...), st)
			break
		}
	}
	return v, nil
}

func fieldTime(x any) *time.Time {
	s, ok := x.(string)
	if !ok || s == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil
	}
	return &t
}

// replayEvent holds the fields Replay reads, decoded in one pass: status of
// a 10,000-step run decodes tens of thousands of events, and the generic
// Event decoder (a map, one Unmarshal per field) dominated its time.
type replayEvent struct {
	Seq            int64           `json:"seq"`
	Time           time.Time       `json:"time"`
	Type           string          `json:"type"`
	RunID          string          `json:"run_id"`
	StepID         string          `json:"step_id"`
	Attempt        int             `json:"attempt"`
	Status         string          `json:"status"`
	ExitCode       *int            `json:"exit_code"`
	Error          *string         `json:"error"`
	Phase          *string         `json:"phase"`
	ChildRunID     *string         `json:"child_run_id"`
	StartedAt      *string         `json:"started_at"`
	FinishedAt     *string         `json:"finished_at"`
	DurationMs     *float64        `json:"duration_ms"`
	Plan           *string         `json:"plan"`
	Steps          json.RawMessage `json:"steps"`
	HandlerType    *string         `json:"handler_type"`
	HandlerCommand *string         `json:"handler_command"`
	HandlerResult  json.RawMessage `json:"handler_result"`
	RetryCount     *float64        `json:"retry_count"`
	MaxRetries     *float64        `json:"max_retries"`
	Action         *string         `json:"action"`
}

// decodeForReplay decodes an event line into an Event carrying only the
// fields Replay uses, with the JSON types Replay expects (numbers float64).
func decodeForReplay(line []byte) (Event, error) {
	var r replayEvent
	if err := json.Unmarshal(line, &r); err != nil {
		return Event{}, err
	}
	e := Event{Seq: r.Seq, Time: r.Time, Type: r.Type, RunID: r.RunID, StepID: r.StepID, Attempt: r.Attempt,
		Status: r.Status, ExitCode: r.ExitCode, Fields: make(map[string]any, 8)}
	str := func(k string, p *string) {
		if p != nil {
			e.Fields[k] = *p
		}
	}
	num := func(k string, p *float64) {
		if p != nil {
			e.Fields[k] = *p
		}
	}
	str("error", r.Error)
	str("phase", r.Phase)
	str("child_run_id", r.ChildRunID)
	str("started_at", r.StartedAt)
	str("finished_at", r.FinishedAt)
	num("duration_ms", r.DurationMs)
	str("plan", r.Plan)
	str("handler_type", r.HandlerType)
	str("handler_command", r.HandlerCommand)
	num("retry_count", r.RetryCount)
	num("max_retries", r.MaxRetries)
	str("action", r.Action)
	if len(r.Steps) > 0 && (r.Type == EvRunStarted || r.Type == EvRunResumed) {
		var infos []StepInfo
		if json.Unmarshal(r.Steps, &infos) == nil {
			e.Fields["steps"] = infos
		}
	}
	if len(r.HandlerResult) > 0 {
		var hr HandlerResult
		if json.Unmarshal(r.HandlerResult, &hr) == nil {
			e.Fields["handler_result"] = hr
		}
	}
	return e, nil
}
