#!/bin/sh
echo "cleaning up after $1"
