#!/bin/sh
# The /faber:debug handler: receives the problem as one argument, "fixes" it.
echo "debug handler called with:"
for a in "$@"; do printf '  [%s]\n' "$a"; done
: > "$FABER_OUTPUT_DIR/.fixed"
