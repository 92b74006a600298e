package exec

// StepInfo is the static description of a step carried by run_started and
// run_resumed events, so that readers can show a run without its plan.
type StepInfo struct {
	ID    string   `json:"id"`
	Name  string   `json:"name"`
	Phase string   `json:"phase"`
	Needs []string `json:"needs"`
	// FanOut is the fan-out step an item step <id>[<key>] belongs to.
	FanOut string `json:"fan_out,omitempty"`
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
	setSteps := func(infos []StepInfo) {
		if infos == nil {
			return
		}
		newOrder := make([]string, 0, len(infos))
		seen := map[string]bool{}
		for _, in := range infos {
			st := get(in.ID)
			st.Name, st.Phase, st.FanOut = in.Name, in.Phase, in.FanOut
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
		var e Event
		if err := e.UnmarshalJSON(line); err != nil {
			return nil, err
		}
		v.LastSeq = e.Seq
		switch d := e.Data.(type) {
		case *RunStarted:
			v.Run.RunID = e.RunID
			v.Run.StartedAt = e.Time
			v.Run.Status = RunInProgress
			v.Run.Plan = d.Plan
			setSteps(d.Steps)
		case *RunResumed:
			v.Run.Status = RunInProgress
			v.Run.FinishedAt = nil
			setSteps(d.Steps)
		case *FanOutExpanded:
			// The fan-out's items are these now, right before its join
			// step; the ones it no longer has leave the view.
			for _, id := range d.Removed {
				delete(byID, id)
			}
			now := make(map[string]bool, len(d.Items))
			for _, in := range d.Items {
				now[in.ID] = true
			}
			newOrder := make([]string, 0, len(order)+len(d.Items))
			for _, id := range order {
				st := byID[id]
				if st == nil || (st.FanOut == e.StepID && !now[id]) || now[id] {
					continue
				}
				if id == e.StepID {
					for _, in := range d.Items {
						newOrder = append(newOrder, in.ID)
					}
				}
				newOrder = append(newOrder, id)
			}
			order = newOrder
			for _, in := range d.Items {
				st := byID[in.ID]
				if st == nil {
					st = &StepState{ID: in.ID, Status: StatusPending}
					byID[in.ID] = st
				}
				st.Name, st.Phase, st.FanOut, st.Needs = in.Name, in.Phase, in.FanOut, nonNil(in.Needs)
			}
			if st := byID[e.StepID]; st != nil && d.Needs != nil {
				st.Needs = d.Needs
			}
		case *StepStatus:
			st := get(e.StepID)
			st.Status = e.Status
			st.Attempt = e.Attempt
			if d.Phase != "" {
				st.Phase = d.Phase
			}
			st.Error = d.Error
			st.CacheKey = d.CacheKey
			if e.Status != StatusCached {
				st.CachedFrom = nil
			}
			if d.ChildRunID != "" {
				st.ChildRunID = d.ChildRunID
			}
			st.ExitCode = e.ExitCode
			st.StartedAt, st.FinishedAt = d.StartedAt, d.FinishedAt
			st.DurationMs = 0
			if d.DurationMs != nil {
				st.DurationMs = *d.DurationMs
			}
			if d.AttemptEnd != nil {
				st.Attempts = append(st.Attempts, d.AttemptEnd)
			}
		case *HandlerInvoked:
			t := e.Time
			get(e.StepID).Remediation = &Remediation{
				HandlerType:      d.HandlerType,
				HandlerCommand:   d.HandlerCommand,
				HandlerInvokedAt: &t,
				HandlerResult:    d.HandlerResult,
				RetryCount:       d.RetryCount,
				MaxRetries:       d.MaxRetries,
			}
		case *CacheHit:
			get(e.StepID).CachedFrom = &CachedFrom{RunID: d.CachedRunID, Attempt: d.CachedAttempt, Seq: d.CachedSeq}
		case *StepClassified:
			get(e.StepID).Classified = d.Action
			setLimits(get(e.StepID), d.MemoryBytes, d.TimeoutMs)
		case *RetryReserved:
			setLimits(get(e.StepID), d.MemoryBytes, d.TimeoutMs)
		case *WorkflowEnded:
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

// setLimits records a step's next-attempt limits from an event; zero keeps
// what the step had.
func setLimits(st *StepState, memory, timeoutMs int64) {
	if memory == 0 && timeoutMs == 0 {
		return
	}
	if st.Limits == nil {
		st.Limits = &Limits{}
	}
	if memory > 0 {
		st.Limits.MemoryBytes = memory
	}
	if timeoutMs > 0 {
		st.Limits.TimeoutMs = timeoutMs
	}
}
