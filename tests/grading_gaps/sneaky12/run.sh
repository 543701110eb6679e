#!/bin/bash
# usage: [BIN=build/release/meshrun] [OUT=/tmp/sneaky12] tests/grading_gaps/sneaky12/run.sh EX NAME
# Exports tests/grading_gaps/sneaky12/EX/NAME.py with the make-jax venv and grades it on every case.
PASS=sneaky12 exec "$(dirname "$0")/../sneaky10/run.sh" "$@"
