#!/usr/bin/env bash
# A local PostgreSQL for the ledger and its tests (Debian 12, run as root): installs the server if it is
# missing, starts the cluster with TLS (a certificate for localhost, 127.0.0.1 and ::1 from a CA of its own, whose
# certificate is left world-readable in $TLS_DIR/ca.crt for postgres_tls = "verify-full"), and creates the role and
# database `blepay` (password `blepay`). Safe to run again: every step is skipped when it is already done.
set -euo pipefail

VERSION=15
CLUSTER=main
ROLE=blepay
PASSWORD=blepay
DATABASE=blepay
HOST=127.0.0.1
PORT=5432
TIMEOUT=30
TLS_DIR=/etc/postgresql/$VERSION/$CLUSTER/blepay-tls

fail() {
    echo "postgres: $*" >&2
    exit 1
}

[[ $(id -u) -eq 0 ]] || fail "run as root (it installs packages and manages the cluster)"

if ! command -v pg_lsclusters >/dev/null 2>&1 || [[ ! -x /usr/lib/postgresql/$VERSION/bin/postgres ]]; then
    echo "postgres: installing postgresql"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -qq -y --no-install-recommends postgresql >/dev/null
fi

# pg_lsclusters prints: Ver Cluster Port Status Owner Data-directory Log-file
cluster_status() {
    pg_lsclusters --no-header 2>/dev/null | awk -v v="$VERSION" -v c="$CLUSTER" '$1 == v && $2 == c { print $4 }'
}

if [[ -z $(cluster_status) ]]; then
    echo "postgres: creating cluster $VERSION/$CLUSTER"
    pg_createcluster --port "$PORT" "$VERSION" "$CLUSTER" >/dev/null
fi

# The test tier runs many ledgers at once, each with a connection pool of its own: room for all of them (the
# default, 100, was seen exhausted, each ledger then answering 503).
CONNECTIONS=400
if [[ $(pg_conftool -s "$VERSION" "$CLUSTER" show max_connections 2>/dev/null) != "$CONNECTIONS" ]]; then
    pg_conftool "$VERSION" "$CLUSTER" set max_connections "$CONNECTIONS"
    if [[ $(cluster_status) == online* ]]; then
        echo "postgres: restarting cluster $VERSION/$CLUSTER for max_connections = $CONNECTIONS"
        pg_ctlcluster "$VERSION" "$CLUSTER" restart
    fi
fi

tls_changed=
if [[ ! -s $TLS_DIR/server.crt || ! -s $TLS_DIR/ca.crt ]]; then
    tls_changed=1
    echo "postgres: making a CA and a server certificate in $TLS_DIR"
    install -d -m 0755 -o postgres -g postgres "$TLS_DIR"
    bash "$(dirname "$0")/tls-certificate.sh" "$TLS_DIR" server DNS:localhost IP:127.0.0.1 IP:::1
    chown postgres:postgres "$TLS_DIR/server.key" "$TLS_DIR/server.crt"
fi
for setting in "ssl on" "ssl_cert_file $TLS_DIR/server.crt" "ssl_key_file $TLS_DIR/server.key" "ssl_min_protocol_version TLSv1.2"; do
    read -r name value <<<"$setting"
    if [[ $(pg_conftool -s "$VERSION" "$CLUSTER" show "$name" 2>/dev/null) != "$value" ]]; then
        pg_conftool "$VERSION" "$CLUSTER" set "$name" "$value"
        tls_changed=1
    fi
done
if [[ -n $tls_changed && $(cluster_status) == online* ]]; then
    echo "postgres: reloading cluster $VERSION/$CLUSTER for TLS"
    pg_ctlcluster "$VERSION" "$CLUSTER" reload
fi

if [[ $(cluster_status) != online* ]]; then
    echo "postgres: starting cluster $VERSION/$CLUSTER"
    pg_ctlcluster "$VERSION" "$CLUSTER" start
fi

deadline=$((SECONDS + TIMEOUT))
until pg_isready -q -h "$HOST" -p "$PORT"; do
    if ((SECONDS >= deadline)); then
        fail "the server at $HOST:$PORT did not accept connections within ${TIMEOUT}s (see /var/log/postgresql/postgresql-$VERSION-$CLUSTER.log)"
    fi
    sleep 0.5
done

psql_admin() {
    runuser -u postgres -- psql -p "$PORT" -X -q -v ON_ERROR_STOP=1 "$@"
}

if [[ $(psql_admin -tAc "SELECT 1 FROM pg_roles WHERE rolname = '$ROLE'") != 1 ]]; then
    psql_admin -c "CREATE ROLE $ROLE LOGIN CREATEDB PASSWORD '$PASSWORD'"
fi

if [[ $(psql_admin -tAc "SELECT 1 FROM pg_database WHERE datname = '$DATABASE'") != 1 ]]; then
    psql_admin -c "CREATE DATABASE $DATABASE OWNER $ROLE"
fi

echo "postgres: ready at postgres://$ROLE:$PASSWORD@$HOST:$PORT/$DATABASE (TLS: verify-full with $TLS_DIR/ca.crt)"
