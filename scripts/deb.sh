#!/usr/bin/env bash
# Builds blepay's Debian packages (`make deb`) from release binaries built with the Swift runtime linked in, so that
# a host needs no Swift toolchain: blepay-ledger (the reference ledger) and blepay (the daemons and blepayctl). Each
# carries its systemd units (ExecStart in /usr/bin), its sysusers.d users, the sample configuration as conffiles, and
# maintainer scripts that create the users and reload systemd and the system bus, and enable or start nothing.
# Usage: scripts/deb.sh RELEASE_BIN_DIR OUT_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$1
out=$2
version=$(cat "$root/VERSION")
arch=$(dpkg --print-architecture)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
# Only this build's packages stay: the rig installs every package in the folder.
rm -f "$out"/*.deb

# unit NAME DIR: the unit from systemd/, run from /usr/bin.
unit() { install -d "$2/lib/systemd/system"; sed 's#/usr/local/bin/#/usr/bin/#' "$root/systemd/$1" > "$2/lib/systemd/system/$1"; }

# glibc BINARY…: the oldest glibc that runs the binaries, the newest GLIBC_2.N version they need; 2.36 at least if
# their relative relocations are packed (DT_RELR, which glibc names GLIBC_ABI_DT_RELR and loads from 2.36 on).
glibc() {
  {
    readelf -VW "$@" | grep -o 'GLIBC_2\.[0-9.]*' | sed 's/^GLIBC_//'
    readelf -VW "$@" | grep 'GLIBC_ABI_DT_RELR' >/dev/null && echo 2.36
  } | sort -uV | tail -n 1
}

# depends BINARY…: the packages of the shared libraries the binaries load (never the toolchain's), glibc's with the
# oldest version that runs them.
depends() {
  local libs
  libs=$(for b in "$@"; do objdump -p "$b" | awk '/NEEDED/ {print $2}'; done | sort -u)
  for lib in $libs; do
    path=$(ldconfig -p | awk -v lib="$lib" '$1 == lib && /x86-64|x86_64|AArch64|aarch64/ {print $NF; exit}')
    [[ -n $path ]] || { echo "deb: $lib is not a system library (is the Swift runtime linked in?)" >&2; exit 1; }
    dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -1 | cut -d: -f1 || dpkg -S "$path" | head -1 | cut -d: -f1
  done | sort -u | sed "s/^libc6\$/libc6 (>= $(glibc "$@"))/" | paste -sd, | sed 's/,/, /g'
}

# control DIR NAME DEPENDS DESCRIPTION BINARIES…: DEPENDS beside the binaries' libraries.
control() {
  local dir=$1 name=$2 more=$3 description=$4
  shift 4
  install -d "$dir/DEBIAN"
  cat > "$dir/DEBIAN/control" <<CONTROL
Package: $name
Version: $version
Architecture: $arch
Maintainer: blepay developers <blepay@localhost>
Section: net
Priority: optional
Depends: $(depends "$@"), $more
Installed-Size: $(du -sk --exclude=DEBIAN "$dir" | cut -f1)
Description: $description
CONTROL
  (cd "$dir" && find etc -type f 2>/dev/null | sed 's#^#/#' | sort) > "$dir/DEBIAN/conffiles"
}

# scripts DIR SYSUSERS GROUP CONFIGS…: postinst creates the users, gives the configuration files to GROUP (they
# name where secrets are kept) and reloads systemd and the system bus; prerm stops the units on removal; postrm
# reloads. Nothing is enabled or started: the operator configures first (docs/operations.md).
scripts() {
  local dir=$1 sysusers=$2 group=$3 units=$4
  shift 4
  cat > "$dir/DEBIAN/postinst" <<SCRIPT
#!/bin/sh
set -e
if [ "\$1" = configure ]; then
  systemd-sysusers /usr/lib/sysusers.d/$sysusers
  for file in $*; do chgrp $group "\$file" && chmod 640 "\$file"; done
  if [ -d /run/systemd/system ]; then systemctl daemon-reload; fi
  dbus-send --system --type=method_call --dest=org.freedesktop.DBus / org.freedesktop.DBus.ReloadConfig 2>/dev/null || true
fi
SCRIPT
  cat > "$dir/DEBIAN/prerm" <<SCRIPT
#!/bin/sh
set -e
if [ "\$1" = remove ] && [ -d /run/systemd/system ]; then systemctl stop $units || true; fi
SCRIPT
  cat > "$dir/DEBIAN/postrm" <<SCRIPT
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
SCRIPT
  chmod 755 "$dir/DEBIAN/postinst" "$dir/DEBIAN/prerm" "$dir/DEBIAN/postrm"
}

ledger=$work/blepay-ledger
install -D -s -m 755 "$bin/blepay-ledger" "$ledger/usr/bin/blepay-ledger"
unit blepay-ledger.service "$ledger"
install -d "$ledger/usr/lib/sysusers.d" "$ledger/etc/blepay" "$ledger/usr/share/doc/blepay-ledger"
grep -v '^[gum] blepay \|^m blepay ' "$root/systemd/blepay.sysusers" > "$ledger/usr/lib/sysusers.d/blepay-ledger.conf"
install -m 640 "$root/config/ledger.toml" "$ledger/etc/blepay/ledger.toml"
install -m 644 "$root/docs/ledger.md" "$root/docs/ledger-openapi.yaml" "$root/docs/operations.md" \
  "$ledger/usr/share/doc/blepay-ledger/"
control "$ledger" blepay-ledger systemd "blepay's reference payment ledger: accounts, instruments, payments, pre-authorizations, settlement" \
  "$ledger/usr/bin/blepay-ledger"
scripts "$ledger" blepay-ledger.conf blepay-ledger blepay-ledger.service /etc/blepay/ledger.toml

daemons=$work/blepay
install -D -s -m 755 "$bin/blepayd" "$daemons/usr/bin/blepayd"
install -D -s -m 755 "$bin/blepayctl" "$daemons/usr/bin/blepayctl"
unit blepay-customer.service "$daemons"
unit blepay-business.service "$daemons"
install -D -m 644 "$root/systemd/bluetooth.service.d/blepay-restart.conf" \
  "$daemons/lib/systemd/system/bluetooth.service.d/blepay-restart.conf"
install -d "$daemons/usr/lib/sysusers.d" "$daemons/etc/blepay" "$daemons/usr/share/dbus-1/system.d" \
  "$daemons/usr/share/dbus-1/interfaces" "$daemons/usr/share/bash-completion/completions" "$daemons/usr/share/doc/blepay"
grep -v 'blepay-ledger' "$root/systemd/blepay.sysusers" > "$daemons/usr/lib/sysusers.d/blepay.conf"
install -m 644 "$root/dbus/org.blepay.conf" "$daemons/usr/share/dbus-1/system.d/org.blepay.conf"
"$bin/blepayctl" interface customer > "$daemons/usr/share/dbus-1/interfaces/org.blepay.Customer1.xml"
"$bin/blepayctl" interface business > "$daemons/usr/share/dbus-1/interfaces/org.blepay.Business1.xml"
"$bin/blepayctl" --generate-completion-script bash > "$daemons/usr/share/bash-completion/completions/blepayctl"
install -m 640 "$root/config/customer.toml" "$root/config/business.toml" "$daemons/etc/blepay/"
install -m 644 "$root"/docs/*.md "$root/docs/grafana-dashboard.json" "$daemons/usr/share/doc/blepay/"
control "$daemons" blepay "systemd, dbus, bluez" "blepay's BLE payment daemons (customer and business) and blepayctl" \
  "$daemons/usr/bin/blepayd" "$daemons/usr/bin/blepayctl"
scripts "$daemons" blepay.conf blepay "blepay-customer.service blepay-business.service" \
  /etc/blepay/customer.toml /etc/blepay/business.toml

for package in "$ledger" "$daemons"; do
  dpkg-deb --root-owner-group -Zxz --build "$package" "$out/$(basename "$package")_${version}_${arch}.deb" >/dev/null
done
ls "$out"/*_"${version}"_"${arch}".deb
