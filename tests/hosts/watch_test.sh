#!/usr/bin/env bash
# watch_test.sh BUILD_DIR: meshrun-watch alone, on this machine (no hosts, no root, no MPI): the
# two halves meshrun-mpirun runs (app/launch/meshrun_watch.cpp), the server's heartbeat stopped by
# SIGSTOP as a lost link stops it. Checks, each cued by a file its command writes, never a sleep:
#   1. the watch runs its command in a session of its own and passes the command's exit code;
#      a command killed by a signal: the server writes "daemon HOST SIGNAL" (1b);
#   2. the server silent for SECONDS: the watch kills every process of that session (a command
#      and the child it started in the background) and exits 3, and the server, once continued,
#      has written "lost HOST" to its events (the watch went without saying "bye");
#   3. a server that cannot be reached: the command is not run, exit 3, one line naming the host.
set -u
BUILD_DIR=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
WATCH=$BUILD_DIR/meshrun-watch
[ -x "$WATCH" ] || { echo "skipped: no meshrun-watch (built with MPI only)"; exit 77; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/meshrun-watch-test.XXXXXX")
FAILED=0
ok() { echo "ok $*"; }
fail() { echo "FAIL $*"; FAILED=1; }
SECS=1
server=""
cleanup() {
  [ -n "$server" ] && kill -CONT "$server" 2>/dev/null && kill "$server" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
# until FILE: polls (bounded: 100 x 0.1 s) for FILE to exist.
until_file() {
  for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done
  return 1
}
MESHRUN_WATCH_ID=t1 "$WATCH" serve "$TMP" "$SECS" &
server=$!
until_file "$TMP/port" || { echo "FAIL the server wrote no port"; exit 1; }
port=$(cat "$TMP/port")

# 1.
"$WATCH" watch t1 "$SECS" "$port" 127.0.0.1 sh -c 'exit 7'
code=$?
[ "$code" = 7 ] && ok "the command's exit code passes: $code" || fail "exit $code, not 7"

# 1b. A command killed by a signal (orted's SIGKILL): 128 + 9, and the server writes
# "daemon HOST 9" to its events (meshrun-mpirun names the host from it); an exit writes none.
"$WATCH" watch t1 "$SECS" "$port" 127.0.0.1 sh -c 'kill -9 $$'
code=$?
for _ in $(seq 100); do grep -q '^daemon ' "$TMP/events" 2>/dev/null && break; sleep 0.1; done
if [ "$code" = 137 ] && [ "$(grep -c '^daemon ' "$TMP/events")" = 1 ] &&
   grep -q "^daemon $(hostname) 9$" "$TMP/events"; then
  ok "a command killed: exit 137, the server: daemon $(hostname) 9"
else
  fail "a command killed: exit $code; the server's events: $(cat "$TMP/events" 2>/dev/null)"
fi

# 2.
"$WATCH" watch t1 "$SECS" "$port" 127.0.0.1 \
  sh -c 'sleep 1000 & echo $! >"$0/child"; echo $$ >"$0/cmd"; wait' "$TMP" 2>"$TMP/err2" &
w=$!
until_file "$TMP/child" && until_file "$TMP/cmd" || fail "the command never started"
cmd=$(cat "$TMP/cmd") child=$(cat "$TMP/child")
sid=$(ps -o sid= -p "$cmd" | tr -d ' ')
[ "$sid" = "$cmd" ] && ok "the command leads a session of its own ($sid)" ||
  fail "the command's session is $sid, not its own ($cmd)"
kill -STOP "$server"
wait "$w"
code=$?
kill -CONT "$server"
# (a zombie is gone: it waits only for its new parent to reap it)
gone=yes
for p in "$cmd" "$child"; do
  st=$(ps -o stat= -p "$p" 2>/dev/null)
  [ -n "$st" ] && [ "${st#Z}" = "$st" ] && gone="no: $p runs ($st)"
done
if [ "$code" = 3 ] && [ "$gone" = yes ] && grep -q "stopped answering" "$TMP/err2"; then
  ok "a silent server: the session killed, exit 3: $(cat "$TMP/err2")"
else
  fail "a silent server: exit $code, session gone: $gone; stderr: $(cat "$TMP/err2")"
fi
until_file "$TMP/events" && grep -q "^lost $(hostname)$" "$TMP/events" &&
  ok "the server: lost $(hostname)" || fail "the server's events: $(cat "$TMP/events" 2>/dev/null)"

# 3. A port nothing listens on (the server's, once it is gone).
kill "$server"
wait "$server" 2>/dev/null
server=""
"$WATCH" watch t1 "$SECS" "$port" 127.0.0.1 sh -c 'echo ran >"$0/ran"' "$TMP" 2>"$TMP/err3"
code=$?
if [ "$code" = 3 ] && [ ! -e "$TMP/ran" ] && [ "$(wc -l <"$TMP/err3")" = 1 ] &&
   grep -q "^meshrun-watch: $(hostname): cannot reach" "$TMP/err3"; then
  ok "no server: not run, exit 3: $(cat "$TMP/err3")"
else
  fail "no server: exit $code, ran: $([ -e "$TMP/ran" ] && echo yes || echo no); stderr: $(cat "$TMP/err3")"
fi
[ "$FAILED" = 0 ]
