package exec

// readyHeap orders ready steps by plan position, so that steps start in the
// order the plan lists them when slots are scarce.
type readyHeap []*stepRun

func (h readyHeap) Len() int           { return len(h) }
func (h readyHeap) Less(i, j int) bool { return readyBefore(h[i], h[j]) }

// readyBefore is the order of ready steps: plan order, the end step after
// a step of its index.
func readyBefore(a, b *stepRun) bool {
	return a.def.Index < b.def.Index || (a.def.Index == b.def.Index && !a.isEnd)
}
func (h readyHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *readyHeap) Push(x any)   { *h = append(*h, x.(*stepRun)) }
func (h *readyHeap) Pop() any {
	old := *h
	n := len(old)
	x := old[n-1]
	*h = old[:n-1]
	return x
}
