#!/bin/bash
# usage: [BIN=build/release/meshrun] [OUT=/tmp/sneaky11] tests/grading_gaps/sneaky11/run.sh EX NAME
# Exports tests/grading_gaps/sneaky11/EX/NAME.py with the make-jax venv and grades it on every case.
PASS=sneaky11 exec "$(dirname "$0")/../sneaky10/run.sh" "$@"
