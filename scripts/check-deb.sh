#!/usr/bin/env bash
# Checks the packages `make deb` built: names, version and dependencies (no Swift toolchain; glibc from the version
# its binaries need), the files each carries, the configuration as conffiles, maintainer scripts that enable and start
# nothing, and that every binary exports no symbols, keeps its relative relocations packed, is hardened (full RELRO,
# no writable code or executable data), has its start-up code laid out together and, unpacked and run with nothing
# of the toolchain on its paths, says its version.
# Usage: scripts/check-deb.sh OUT_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$1
version=$(cat "$root/VERSION")
arch=$(dpkg --print-architecture)
fail() { echo "check-deb: $*" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# expect PACKAGE FILE…: the package holds each file.
expect() {
  local deb=$out/$1_${version}_${arch}.deb
  shift
  [[ -f $deb ]] || fail "no $deb"
  local listing
  listing=$(dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's#^\./#/#')
  for file in "$@"; do grep -qx "$file" <<<"$listing" || fail "$(basename "$deb") lacks $file"; done
}
expect blepay-ledger /usr/bin/blepay-ledger /lib/systemd/system/blepay-ledger.service /etc/blepay/ledger.toml \
  /usr/lib/sysusers.d/blepay-ledger.conf
expect blepay /usr/bin/blepayd /usr/bin/blepayctl /lib/systemd/system/blepay-customer.service \
  /lib/systemd/system/blepay-business.service /etc/blepay/customer.toml /etc/blepay/business.toml \
  /usr/lib/sysusers.d/blepay.conf /usr/share/dbus-1/system.d/org.blepay.conf \
  /usr/share/dbus-1/interfaces/org.blepay.Customer1.xml /usr/share/dbus-1/interfaces/org.blepay.Business1.xml \
  /usr/share/bash-completion/completions/blepayctl /lib/systemd/system/bluetooth.service.d/blepay-restart.conf

for package in blepay-ledger blepay; do
  deb=$out/${package}_${version}_${arch}.deb
  [[ $(dpkg-deb -f "$deb" Package) == "$package" && $(dpkg-deb -f "$deb" Version) == "$version" ]] \
    || fail "$package: wrong name or version"
  depends=$(dpkg-deb -f "$deb" Depends)
  grep -qi swift <<<"$depends" && fail "$package depends on the toolchain: $depends"
  glibc=$(grep -Eo 'libc6 \(>= 2\.[0-9]+\)' <<<"$depends" | grep -Eo '[0-9]+\)$' | tr -d ')') \
    || fail "$package does not name the glibc its binaries need: $depends"
  (( glibc >= 36 )) || fail "$package names glibc 2.$glibc, and its packed relocations need 2.36: $depends"
  dpkg-deb -e "$deb" "$work/$package.control"
  grep -q '^/etc/blepay/' "$work/$package.control/conffiles" || fail "$package: no conffiles"
  if grep -Eq 'systemctl (enable|start|restart)|deb-systemd-invoke start' "$work/$package.control"/{postinst,prerm,postrm}; then
    fail "$package: a maintainer script enables or starts a unit"
  fi
  dpkg-deb -x "$deb" "$work/root"
done
grep -q '^ExecStart=/usr/bin/blepayd customer' "$work/root/lib/systemd/system/blepay-customer.service" \
  || fail "the customer unit does not run /usr/bin/blepayd"

for binary in blepayd blepayctl blepay-ledger; do
  path=$work/root/usr/bin/$binary
  if ldd "$path" | grep -q '/opt/swift\|not found'; then fail "$binary loads the toolchain's libraries: $(ldd "$path")"; fi
  # Symbols exported to the loader are looked up and resolved at every start, and nothing loads against them.
  exported=$(readelf --dyn-syms -W "$path" | awk 'NR > 3 && $7 != "UND"' | wc -l)
  (( exported == 0 )) || fail "$binary exports $exported symbols to the dynamic loader"
  # Relative relocations are applied at every start: packed (DT_RELR), not 3 MB of 24-byte entries. A packed
  # binary needs glibc 2.36, which the package must say.
  readelf -dW "$path" | grep '(RELR)' >/dev/null || fail "$binary keeps its relative relocations unpacked (no DT_RELR)"
  relative=$(readelf -rW "$path" | grep -c '_RELATIVE' || true)
  (( relative < 1000 )) || fail "$binary has $relative unpacked relative relocations"
  # Full RELRO: after relocation the GOT, .data.rel.ro and .init_array are read-only, and .rodata always is.
  headers=$(readelf -lW "$path")
  grep -q '^ *GNU_RELRO ' <<<"$headers" || fail "$binary has no RELRO region"
  readelf -dW "$path" | grep -Eq '\(FLAGS\).*BIND_NOW|\(FLAGS_1\).*NOW' \
    || fail "$binary binds lazily (not linked with -z now)"
  if grep -q ' RWE ' <<<"$headers"; then fail "$binary has a segment or stack both writable and executable"; fi
  if readelf -SW "$path" | grep -Eq '\] \.rodata +PROGBITS +([0-9a-f]+ +){4}[A-Z]*W'; then
    fail "$binary has a writable .rodata"
  fi
  # The code it runs at start laid out together (scripts/order/PROGRAM.ld): a profile that no longer matches the
  # code, or a build without function sections, leaves the section empty or missing.
  startup=$(readelf -SW "$path" |
    sed -En 's/.*\] \.text\.blepay\.startup +PROGBITS +[0-9a-f]+ [0-9a-f]+ ([0-9a-f]+) .*/\1/p')
  (( 16#${startup:-0} >= 65536 )) ||
    fail "$binary has no start-up code laid out together (.text.blepay.startup: ${startup:-none})"
  said=$(env -i PATH=/usr/bin:/bin "$path" --version) || fail "$binary --version failed"
  [[ $said == "blepay $version (commit "*")" ]] || fail "$binary --version said: $said"
done
echo "check-deb: blepay-ledger and blepay $version ($arch): contents, conffiles, dependencies and versions as expected"
