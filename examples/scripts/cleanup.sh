#!/bin/sh
# Recovery script: runs after the retry is reserved, before the next attempt.
echo "cleaning up after $1 (exit $2, attempt $FABER_FAILED_ATTEMPT)"
