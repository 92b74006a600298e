#!/bin/sh
# Pretends to download; fails once with 75 (EX_TEMPFAIL) to show a retry.
marker="$FABER_OUTPUT_DIR/.fetched-once"
if [ ! -e "$marker" ]; then
  : > "$marker"
  echo "mirror busy, try again" >&2
  exit 75
fi
echo "fetched $1.$2 ($3)"
