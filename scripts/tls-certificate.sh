#!/usr/bin/env bash
# A private CA and a server certificate it signs, for blepay's TLS where no public CA is used (the ledger's HTTPS in
# the rig and the contract run, the test PostgreSQL). In DIR: ca.crt (what clients trust: [ledger] ca_file,
# postgres_ca_file) and ca.key, made once and kept; NAME.crt and NAME.key (mode 0600, P-256), made anew on every
# call, valid for the subjectAltName entries given (DNS:name, IP:address) for 825 days.
# Usage: scripts/tls-certificate.sh DIR NAME SAN [SAN...]
#   e.g. scripts/tls-certificate.sh /etc/blepay/tls ledger DNS:localhost IP:127.0.0.1 IP:::1
set -euo pipefail

dir=${1:?usage: scripts/tls-certificate.sh DIR NAME SAN [SAN...]}
name=${2:?usage: scripts/tls-certificate.sh DIR NAME SAN [SAN...]}
shift 2
(($# > 0)) || { echo "tls-certificate: name at least one subjectAltName (DNS:… or IP:…)" >&2; exit 2; }
sans=$(IFS=,; echo "$*")

mkdir -p "$dir"
umask 077
if [[ ! -s $dir/ca.crt || ! -s $dir/ca.key ]]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 -subj "/CN=blepay private CA" \
    -addext "basicConstraints = critical, CA:TRUE, pathlen:0" -addext "keyUsage = critical, keyCertSign, cRLSign" \
    -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
  chmod 0644 "$dir/ca.crt"
fi
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=${name}" \
  -keyout "$dir/$name.key.new" -out "$dir/$name.csr" 2>/dev/null
openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -set_serial "0x$(openssl rand -hex 16)" \
  -days 825 -out "$dir/$name.crt.new" -extfile <(printf '%s\n' "subjectAltName = $sans" \
    "basicConstraints = critical, CA:FALSE" "keyUsage = critical, digitalSignature" "extendedKeyUsage = serverAuth") \
  2>/dev/null
chmod 0644 "$dir/$name.crt.new"
rm -f "$dir/$name.csr"
# Each file replaced whole, the key first: a server reading them meanwhile sees a pair, or keeps the one it has.
mv "$dir/$name.key.new" "$dir/$name.key"
mv "$dir/$name.crt.new" "$dir/$name.crt"
