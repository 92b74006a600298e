#!/bin/sh
echo "debug handler: $*"
