#!/usr/bin/env bash
# Installs what blepay's build and tests need on a Debian 12 machine (run as root); with --demo, only what
# `make demo` needs (no Python example's library, no blepay user for the D-Bus policy tests).
# Idempotent: packages already present are skipped quickly.
set -euo pipefail
demo=0
[[ ${1:-} == --demo ]] && demo=1

DEB_PACKAGES=(
  libdbus-1-dev libbluetooth-dev dbus bluez bluez-test-tools
  qemu-system-x86 linux-image-amd64 busybox-static socat procps systemd curl gcc patch xz-utils
)
# gdb: the stacks of a test tier that hangs (scripts/test-tier.sh).
((demo)) || DEB_PACKAGES+=(python3-jeepney gdb)

missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v vng >/dev/null 2>&1; then
  echo "install-deps: installing virtme-ng"
  python3 -m pip install --quiet --disable-pip-version-check virtme-ng
fi
# The rig's virtual controller, fixed for a central with several connections.
bash "$(cd "$(dirname "$0")" && pwd)/build-btvirt.sh"
# The blepay user and group, as an installation creates them: the D-Bus policy tests call the daemons as a member.
((demo)) || systemd-sysusers "$(cd "$(dirname "$0")/.." && pwd)/systemd/blepay.sysusers"
echo "install-deps: ready"
