#!/usr/bin/env bash
# The ledger's durable throughput, side by side in one run (release builds, loopback HTTP, this machine's disk):
#   ledger-sqlite        complete payments/s and p50/p99 of one payment at concurrency 32: one process, SQLite;
#                        and offline payments settled/s, uploaded in batches of 100 (POST /v1/settlements)
#   ledger-postgres-2x   the same with two processes on one PostgreSQL database, the load split across both
#   sqlite-raw           durable SQLite transactions/s on the same disk (one INSERT each, one connection, WAL,
#                        synchronous FULL): the physical limit one-fsync-per-commit storage has
# A complete payment is the business's POST /v1/payments then the customer's POST /v1/payments/{id}/acceptance,
# answered `settled`; anything else is an error and fails the bench. Messages are signed before timing starts.
# Prints only 'bench:' lines; the logs are shown on failure. Run as root (it starts PostgreSQL with
# scripts/postgres.sh). Usage: scripts/bench-ledger.sh LEDGER_BINARY [PAYMENTS [CONCURRENCY [SETTLEMENTS]]]
# (make bench passes the ledger as it ships: make deb's release build, the Swift runtime linked in).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ledger=$(realpath "${1:?usage: bench-ledger.sh LEDGER_BINARY [PAYMENTS [CONCURRENCY [SETTLEMENTS]]]}")
payments=${2:-8000}
concurrency=${3:-32}
settlements=${4:-4000}
warm_up=500
admin_url=postgres://blepay:blepay@127.0.0.1:5432/blepay
# The load is built in the Benchmarks package's own folder, shared with its benchmarks.
load_build=$root/Benchmarks/.build

# Beside the ledger's binary, on the disk the ledger's state directory would be on, never a tmpfs: the numbers are
# about fsync.
work=$(mktemp -d "$(dirname "$ledger")/ledger-bench.XXXXXX")
pids=()
database=""

stop_servers() {
    local pid
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    pids=()
}
cleanup() {
    stop_servers
    if [[ -n $database ]]; then
        psql -X -q "$admin_url" -c "DROP DATABASE IF EXISTS $database WITH (FORCE)" >/dev/null 2>&1 || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() {
    echo "bench: the ledger bench failed: $*" >&2
    local log
    for log in "$work"/*.log; do
        [[ -s $log ]] || continue
        echo "--- ${log##*/}" >&2
        tail -n 40 "$log" >&2
    done
    exit 1
}

filesystem=$(stat -f -c %T "$work")
[[ $filesystem != tmpfs && $filesystem != ramfs ]] || fail "$work is on $filesystem, not on a disk"

bash "$root/scripts/postgres.sh" >"$work/postgres.log" 2>&1 || fail "PostgreSQL did not start (scripts/postgres.sh)"
swift build -c release --package-path "$root/Benchmarks" --scratch-path "$load_build" --product LedgerLoad \
    >"$work/build.log" 2>&1 || fail "building LedgerLoad"
load=$load_build/release/LedgerLoad

# True when something answers on 127.0.0.1:$1.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# True when the ledger on port $1 answers GET /v1/health with 200.
healthy() (
    exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf 'GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
    read -r -t 5 _ status _ <&3 || exit 1
    [[ $status == 200 ]]
)
# start NAME ARGS…: starts a ledger process on a free port; sets $url and $pid once it is healthy.
start() {
    local name=$1 port
    shift
    for _ in $(seq 50); do
        port=$((20000 + RANDOM % 40000))
        listening "$port" || break
    done
    BLEPAY_LOG_LEVEL=warning "$ledger" serve --port "$port" "$@" >"$work/$name.log" 2>&1 &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 300); do
        healthy "$port" 2>/dev/null && break
        kill -0 "$pid" 2>/dev/null || fail "$name exited"
        sleep 0.1
    done
    healthy "$port" 2>/dev/null || fail "$name did not answer /v1/health on port $port"
    url=http://127.0.0.1:$port
}
# audit NAME ARGS…: the ledger's own check of the books the run left (every transfer balances, every payment has
# its postings), with the servers stopped.
audit() {
    local name=$1
    shift
    BLEPAY_LOG_LEVEL=warning "$ledger" audit "$@" >"$work/audit-$name.log" 2>&1 || fail "the audit of $name found problems"
}

# Appends the goal to each line the load prints.
goal() { sed "s/\$/; goal $1/"; }

# (a) SQLite: one process, its default backend.
start sqlite --state-directory "$work/sqlite"
"$load" payments --url "$url" --admin-token-file "$work/sqlite/admin.token" --payments "$payments" \
    --warm-up "$warm_up" --concurrency "$concurrency" --label ledger-sqlite --server-pid "$pid" \
    2>"$work/load-sqlite.log" | goal ">= 3,000\/s" || fail "the load on SQLite"
stop_servers
audit sqlite --state-directory "$work/sqlite"

# (a') SQLite again, offline payments settled as a business uploads them: batches of 100 signed pairs, each under a
# customer's voucher (the vouchers are issued, and every pair signed, before the clock starts).
start settle --state-directory "$work/settle"
"$load" settlements --url "$url" --admin-token-file "$work/settle/admin.token" --payments "$settlements" \
    --label ledger-sqlite 2>"$work/load-settle.log" || fail "the settlement load"
stop_servers
audit settle --state-directory "$work/settle"

# (b) PostgreSQL: two processes on one fresh database, sharing the state directory's ledger key and admin token
# (the first creates them, the second starts once the first is healthy).
database=blepay_bench_$(od -An -N4 -tx4 /dev/urandom | tr -d ' \n')
psql -X -q "$admin_url" -c "CREATE DATABASE $database" >"$work/psql.log" 2>&1 || fail "creating database $database"
cat >"$work/postgres.toml" <<TOML
[storage]
backend = "postgres"
postgres_url = "postgres://blepay:blepay@127.0.0.1:5432/$database"
postgres_connections = 16

[ledger]
state_directory = "$work/postgres"
TOML
start postgres-1 --config "$work/postgres.toml"
first=$url first_pid=$pid
start postgres-2 --config "$work/postgres.toml"
"$load" payments --url "$first" --url "$url" --admin-token-file "$work/postgres/admin.token" --payments "$payments" \
    --warm-up "$warm_up" --concurrency "$concurrency" --label ledger-postgres-2x --server-pid "$first_pid" \
    --server-pid "$pid" 2>"$work/load-postgres.log" | goal ">= 1,000\/s" || fail "the load on PostgreSQL"
stop_servers
audit postgres --config "$work/postgres.toml"

# The disk's limit, beside the ledger's SQLite database.
"$load" sqlite-raw --dir "$work/raw" --seconds 3 2>"$work/raw.log" || fail "raw SQLite"
