#!/usr/bin/env bash
# Builds the rig's virtual controller: BlueZ 5.66's btvirt (Debian's source, checksum pinned) with btvirt.patch.
# The packaged btvirt has room for 16 controllers in one air; it gives a central's second connection a handle of its
# own on each end, so a business cannot serve two customers at once; and its server loses its place in the H4 stream
# when a read from a bridged controller ends inside a packet header, after which host b's controller answers
# nothing. The patch makes room for 32 and fixes both.
# Installs /usr/local/libexec/blepay-rig/btvirt; idempotent. Usage: build-btvirt.sh (as root)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
target=/usr/local/libexec/blepay-rig/btvirt
stamp=$(sha256sum "$here/btvirt.patch" | cut -c1-16)
[[ -x $target && -f $target.$stamp ]] && exit 0

url=http://deb.debian.org/debian/pool/main/b/bluez/bluez_5.66.orig.tar.xz
sha256=a231fb9d151780edf6d2536c81914e2dbd3daa36b68f486badaf98a7f34021e4
work=$(mktemp -d /tmp/blepay-btvirt.XXXXXX)
trap 'rm -rf "$work"' EXIT
curl -sfL --retry 3 -o "$work/bluez.tar.xz" "$url"
echo "$sha256  $work/bluez.tar.xz" | sha256sum -c --quiet
tar -xf "$work/bluez.tar.xz" -C "$work"
cd "$work/bluez-5.66"
patch -p1 --quiet < "$here/btvirt.patch"
echo '#define VERSION "5.66"' > config.h
mkdir -p "$(dirname "$target")"
gcc -O2 -w -DHAVE_CONFIG_H -I. -Ilib -o "$target" \
  emulator/{main,serial,server,vhci,btdev,bthost,smp,phy,amp,le}.c \
  src/shared/{queue,util,crypto,ecc,ringbuf,hci,hci-crypto,io-mainloop,timeout-mainloop,mainloop,mainloop-notify}.c \
  lib/{bluetooth,hci,sdp,uuid}.c
rm -f "$target".*
touch "$target.$stamp"
echo "build-btvirt: built $target"
