#!/bin/sh
# A stand-in for an AI agent (examples/agent.yaml): it fixes the tests on
# attempt $1 and reports what each call spent in $FABER_RESULT.
if [ "$FABER_ATTEMPT" -ge "$1" ]; then
  printf '{"status":"success","message":"tests fixed","cost_usd":0.30,"turns":6,"tokens":4100}' > "$FABER_RESULT"
  echo "attempt $FABER_ATTEMPT: tests fixed"
  exit 0
fi
printf '{"status":"failure","message":"2 tests still fail","cost_usd":0.30,"turns":6,"tokens":3900}' > "$FABER_RESULT"
echo "attempt $FABER_ATTEMPT: 2 tests still fail" >&2
exit 1
