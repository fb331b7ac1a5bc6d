#!/usr/bin/env bash
# Installs blepay (`make install`): the release binaries into /usr/local/bin, the systemd units (and a drop-in that
# restarts bluetoothd when it dies), the blepay and blepay-ledger users and
# groups (sysusers.d), the D-Bus policy and the control API's interface XML, the sample configuration (an existing
# file is never overwritten), shell completions and the documentation. With DESTDIR, everything goes below it and nothing on the running system is
# touched. Usage: scripts/install.sh RELEASE_BIN_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$1
dest=${DESTDIR:-}

install -d "$dest/usr/local/bin" "$dest/etc/systemd/system" "$dest/usr/lib/sysusers.d" \
  "$dest/usr/share/dbus-1/system.d" "$dest/usr/local/share/doc/blepay" \
  "$dest/usr/share/bash-completion/completions" "$dest/usr/share/dbus-1/interfaces" "$dest/etc/blepay"
install -m 755 "$bin/blepayd" "$bin/blepayctl" "$bin/blepay-ledger" "$dest/usr/local/bin/"
install -m 644 "$root"/systemd/*.service "$dest/etc/systemd/system/"
install -D -m 644 "$root/systemd/bluetooth.service.d/blepay-restart.conf" \
  "$dest/etc/systemd/system/bluetooth.service.d/blepay-restart.conf"
install -m 644 "$root/systemd/blepay.sysusers" "$dest/usr/lib/sysusers.d/blepay.conf"
install -m 644 "$root/dbus/org.blepay.conf" "$dest/usr/share/dbus-1/system.d/org.blepay.conf"
# The control API's interfaces, with argument names, for busctl, gdbus and D-Bus code generators.
"$bin/blepayctl" interface customer > "$dest/usr/share/dbus-1/interfaces/org.blepay.Customer1.xml"
"$bin/blepayctl" interface business > "$dest/usr/share/dbus-1/interfaces/org.blepay.Business1.xml"
install -m 644 "$root"/docs/*.md "$root"/docs/*.yaml "$dest/usr/local/share/doc/blepay/"
"$bin/blepayctl" --generate-completion-script bash > "$dest/usr/share/bash-completion/completions/blepayctl"

if [[ -z $dest ]]; then
  systemd-sysusers /usr/lib/sysusers.d/blepay.conf
fi
for file in "$root"/config/*.toml; do
  target="$dest/etc/blepay/$(basename "$file")"
  [[ -e $target ]] && { echo "install: keeping $target"; continue; }
  # Readable by its program's group only: the files name where secrets are kept.
  install -m 640 "$file" "$target"
  group=blepay; [[ $(basename "$file") == ledger.toml ]] && group=blepay-ledger
  [[ -z $dest ]] && chgrp "$group" "$target"
done

if [[ -z $dest ]]; then
  # Pick up the new units and policy where systemd and the system bus are running.
  if [[ -d /run/systemd/system ]]; then systemctl daemon-reload; fi
  dbus-send --system --type=method_call --dest=org.freedesktop.DBus / org.freedesktop.DBus.ReloadConfig 2>/dev/null || true
fi
echo "install: done; edit /etc/blepay/*.toml (ledger.public_key, adapter), then: systemctl enable --now blepay-customer (or blepay-business, blepay-ledger)"
