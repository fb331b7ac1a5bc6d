#!/usr/bin/env bash
# Counts the tests of several `swift test` runs into one closing line, "test: N passed, N failed",
# and fails if any failed or none ran.
set -euo pipefail
log=${1:?usage: test-summary.sh SWIFT_TEST_LOG}
# Per-test result lines look like "✔ Test name(…) passed after …" (the run and suite totals have no "(").
passed=$(grep -cE '^✔ Test [^ ]+\(.*\) .*passed after' "$log" || true)
failed=$(grep -cE '^✘ Test [^ ]+\(.*\) .*failed after' "$log" || true)
echo "test: $passed passed, $failed failed"
((failed == 0 && passed > 0))
