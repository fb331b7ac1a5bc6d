# Sourced by blepay's long-running scripts (make test, make demo): one line per step with the time since the script
# started, each step's own output kept in a log file, and a failing step shown by the end of its log. What a step
# prints never reaches the console in bulk: a compiler's or a test runner's hundreds of kilobytes stay in files.
# Set STEPS_NAME (the script's name in messages) and STEPS_LOGS (the logs' folder) before sourcing it.
steps_start=${steps_start:-$(date +%s)}
mkdir -p "$STEPS_LOGS"

# say TEXT…: TEXT after the time since the script started, as [m:ss].
say() {
  local seconds=$(($(date +%s) - steps_start))
  printf '[%d:%02d] %s\n' $((seconds / 60)) $((seconds % 60)) "$*"
}

# attempt TEXT LOG COMMAND…: says TEXT, then runs COMMAND with its output in STEPS_LOGS/LOG; its status.
attempt() {
  local text=$1 log=$STEPS_LOGS/$2
  shift 2
  say "$text (output in $log)"
  "$@" > "$log" 2>&1 < /dev/null
}

# failed LOG [PATTERN]: the end of STEPS_LOGS/LOG, then (last, where a reader of the end sees them first) its lines
# matching the extended regular expression PATTERN; and the script ends.
failed() {
  echo "$STEPS_NAME: that failed; the end of $STEPS_LOGS/$1:" >&2
  tail -n "${STEPS_TAIL:-25}" "$STEPS_LOGS/$1" >&2
  if [[ -n ${2:-} ]]; then
    echo "$STEPS_NAME: what failed in $STEPS_LOGS/$1:" >&2
    grep -aE "$2" "$STEPS_LOGS/$1" | cut -c1-400 | head -n 40 >&2 || true
  fi
  exit 1
}

# step TEXT LOG COMMAND…: attempt, and a failure ends the script.
step() { attempt "$@" || failed "$2"; }
