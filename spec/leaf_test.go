package spec

import "testing"

// TestScalarLeafErrors holds the wording and position of every scalar
// leaf's errors (str, intv, boolv, durv, sizev, factorv), which share one
// decoding prelude (scalar.decodeScalar, parser.isScalar).
func TestScalarLeafErrors(t *testing.T) {
	const src = `name: leaves
description: [a]
jobs: x
cpus: 99999999999
use_pending_failed: 3
handler_timeout: [1]
kill_grace: -5s
memory: {a: 1}
sge:
  memory_per_slot: !!bool maybe
failure_handlers:
  - name: h
    rules:
      - exit_codes: [1]
        memory_factor: "x"
      - match_all_exit_codes: true
        timeout_factor: 200
steps:
  - id: a
    run: "true"
    timeout: soon
    memory: lots
    max_parallel: 1.5
`
	_, inv := parse(t, src, Options{})
	if inv == nil {
		t.Fatal("plan parsed")
	}
	const want = `plan.yaml:2:14: description: must be a string, not a list
plan.yaml:3:7: jobs: must be an integer, not "x"
plan.yaml:4:7: cpus: integer 99999999999 out of range
plan.yaml:5:21: use_pending_failed: must be true or false, not an integer
plan.yaml:6:18: handler_timeout: must be a duration like 90s, 10m or 1h30m, not a list
plan.yaml:7:13: kill_grace: duration -5s must not be negative
plan.yaml:8:9: memory: must be a size like 512MiB or 2GiB, not a mapping
plan.yaml:10:20: sge: memory_per_slot: must be true or false, not a boolean
plan.yaml:15:24: failure handler "h": rules[0]: memory_factor: must be a number like 1.5, not "x"
plan.yaml:17:25: failure handler "h": rules[1]: timeout_factor: 200 must be a number from 1 to 100
plan.yaml:21:14: step "a": timeout: bad duration "soon" (use Go syntax like 90s, 10m or 1h30m)
plan.yaml:22:13: step "a": memory: bad size "lots" (use a number with a unit: 512MiB, 2GiB, 1.5G)
plan.yaml:23:19: step "a": max_parallel: must be an integer, not a number
`
	if got := diagText(inv.Errors); got != want {
		t.Errorf("errors:\n%s\nwant:\n%s", got, want)
	}
}
