#!/usr/bin/env bash
# Checks the systemd units the way an installation would use them: `systemd-analyze verify` finds nothing to say
# (with ExecStart pointing at this build's binaries instead of /usr/local/bin), each unit's exposure from
# `systemd-analyze security --offline=yes` is at most 2.0, and the sysusers file creates the blepay user and group
# and a blepay-ledger user in no group of the daemons'.
# Usage: scripts/check-units.sh BIN_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "$1" && pwd)
work=$(mktemp -d /tmp/blepay-units.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "units: $*" >&2; exit 1; }

for unit in "$root"/systemd/*.service; do
  sed "s#/usr/local/bin/#$bin/#" "$unit" > "$work/$(basename "$unit")"
done
said=$(systemd-analyze verify "$work"/*.service 2>&1) || fail "systemd-analyze verify failed: $said"
[[ -z $said ]] || fail "systemd-analyze verify: $said"

exposures=""
for unit in "$root"/systemd/*.service; do
  line=$(systemd-analyze security --offline=yes "$unit" 2>&1 | grep 'Overall exposure level') \
    || fail "no exposure level for $(basename "$unit")"
  level=$(sed -E 's/.*: ([0-9.]+) .*/\1/' <<< "$line")
  awk -v l="$level" 'BEGIN { exit !(l <= 2.0) }' || fail "$(basename "$unit") is exposed at $level (over 2.0)"
  exposures+="$(basename "$unit" .service) $level, "
done

mkdir -p "$work/sysroot/etc"
: > "$work/sysroot/etc/passwd"; : > "$work/sysroot/etc/group"
echo "bluetooth:x:109:" > "$work/sysroot/etc/group"
systemd-sysusers --root="$work/sysroot" "$root/systemd/blepay.sysusers" 2>/dev/null || fail "systemd-sysusers refused blepay.sysusers"
grep -q '^blepay:' "$work/sysroot/etc/passwd" || fail "blepay.sysusers created no blepay user"
grep -Eq '^bluetooth:.*blepay' "$work/sysroot/etc/group" || fail "blepay.sysusers did not add blepay to bluetooth"
grep -q '^blepay-ledger:' "$work/sysroot/etc/passwd" || fail "blepay.sysusers created no blepay-ledger user"
! grep -Eq '^(bluetooth|blepay):.*blepay-ledger' "$work/sysroot/etc/group" \
  || fail "blepay-ledger is in the bluetooth or blepay group"
grep -qx 'User=blepay-ledger' "$root/systemd/blepay-ledger.service" || fail "the ledger does not run as blepay-ledger"
! grep -q '^SupplementaryGroups=' "$root/systemd/blepay-ledger.service" || fail "the ledger has supplementary groups"

echo "units: verified $(ls "$root"/systemd/*.service | wc -l) units; exposure ${exposures%, } (at most 2.0); sysusers creates blepay and blepay-ledger"
