#!/bin/sh
# Fails for table "broken" until the debug handler has "fixed" it.
while [ $# -gt 0 ]; do
  case "$1" in
    --work-id) work=$2; shift 2 ;;
    --table) table=$2; shift 2 ;;
    *) shift ;;
  esac
done
if [ "$table" = broken ] && [ ! -e "$FABER_OUTPUT_DIR/.fixed" ]; then
  echo "Field 'name' is required in table $table" >&2
  exit 1
fi
echo "work $work validated"
