# tests/e2e/lib.sh - the hang guards of the test scripts (sourced by tests/*.sh).
#
# A fixed number of seconds in a test is a hang guard, never a measurement: a wait for a file or a
# log line, a `timeout` around a program, a server's deadline for an honest party's answer. Each
# is far longer than the quiet machine needs, and VT_TEST_TIMEOUT_SCALE (a positive number,
# default 1) multiplies them all for a slower or busier machine: ctest reads it at configure time
# for every test's TIMEOUT and passes the same value to the tests in their environment
# (vt_test_timeout, tests/tests.cmake); a script run by hand reads it from its own environment.
# What a test asserts never depends on which of two times runs out first: the order of events
# comes from files and log lines (wait_until), never from a sleep.
VT_SCALE=${VT_TEST_TIMEOUT_SCALE:-1}
if ! awk -v s="$VT_SCALE" 'BEGIN { exit !(s ~ /^[0-9]+(\.[0-9]*)?$/ && s + 0 >= 0.001 && s + 0 <= 10000) }'; then
  echo "VT_TEST_TIMEOUT_SCALE=$VT_SCALE: expected a number from 0.001 to 10000" >&2
  exit 2
fi

# vt_scale N: N (seconds or milliseconds) times VT_TEST_TIMEOUT_SCALE, rounded up to an integer
vt_scale() { awk -v s="$VT_SCALE" -v n="$1" 'BEGIN { v = n * s; r = int(v); if (r < v) r++; print r }'; }

# wait_until SECONDS COMMAND...: runs COMMAND every 0.05 s until it succeeds (0) or SECONDS (scaled)
# have passed and a last try fails (1). A hang guard: COMMAND names the event waited for.
wait_until() {
  local end=$((SECONDS + $(vt_scale "$1")))
  shift
  until "$@"; do
    [ "$SECONDS" -lt "$end" ] || { "$@"; return; }
    sleep 0.05
  done
}

# file_or_exit FILE PID: FILE is non-empty, or PID has ended (for wait_until: a server's port file)
file_or_exit() { [ -s "$1" ] || ! kill -0 "$2" 2>/dev/null; }
# line_or_exit FILE REGEX PID: FILE has a line matching REGEX, or PID has ended
line_or_exit() { grep -q -- "$2" "$1" 2>/dev/null || ! kill -0 "$3" 2>/dev/null; }
# exited PID: PID has ended (a server that stops by itself)
exited() { ! kill -0 "$1" 2>/dev/null; }
