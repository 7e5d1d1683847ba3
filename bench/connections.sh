#!/usr/bin/env bash
# How many PostgreSQL server connections N replicas take, directly and through PgBouncer in
# transaction mode:  bench/connections.sh
#
# Creates a database on the local PostgreSQL (dropped at the end), imports a small dataset, starts
# REPLICAS `serve` on it, loads every replica at once with wrk (CONNS connections each, DURATION)
# and reads pg_stat_activity for the database meanwhile: the most server connections seen, and
# whether any request failed. Then the same through a PgBouncer (.ci/pgbouncer, pool of
# PGBOUNCER_POOL server connections). The counts are what matters here, not the rates: each replica
# is asked for more concurrency than its pool has, so that every pool fills.
#
# Knobs (environment): REPLICAS=8 POOL=10 (BACKOFFICE_DB_MAX_OPEN_CONNS) PGBOUNCER_POOL=20
#   CONNS=32 DURATION=5s SERVER=postgres://postgres@127.0.0.1:5432 (trusted from 127.0.0.1)
#   BASE_PORT=18100 PGBOUNCER_PORT=16433 KEEP=0
set -euo pipefail
cd "$(dirname "$0")/.."

REPLICAS=${REPLICAS:-8}
POOL=${POOL:-10}
PGBOUNCER_POOL=${PGBOUNCER_POOL:-20}
CONNS=${CONNS:-32}
DURATION=${DURATION:-5s}
SERVER=${SERVER:-postgres://postgres@127.0.0.1:5432}
BASE_PORT=${BASE_PORT:-18100}
PGBOUNCER_PORT=${PGBOUNCER_PORT:-16433}
KEEP=${KEEP:-0}
WORKDIR=$(mktemp -d -t backoffice-conns.XXXXXX)
db=bo_conns_$$
PGBOUNCER_DIR=""

say() { printf '== %s\n' "$*" >&2; }
pids=()
stop_replicas() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
cleanup() {
  stop_replicas
  if [ -n "$PGBOUNCER_DIR" ]; then kill "$(cat "$PGBOUNCER_DIR/pgbouncer.pid")" 2>/dev/null || true; rm -rf "$PGBOUNCER_DIR"; fi
  psql "$SERVER/postgres?sslmode=disable" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null || true
  if [ "$KEEP" != 1 ]; then rm -rf "$WORKDIR"; else say "kept $WORKDIR"; fi
}
trap cleanup EXIT
for t in go psql wrk curl; do command -v "$t" >/dev/null || { echo "connections.sh needs $t" >&2; exit 1; }; done

say "building, generating and importing a small dataset into $db"
go build -o "$WORKDIR/backoffice" ./cmd/backoffice
go run ./bench/gen -out "$WORKDIR/dataset.json" -targets "$WORKDIR/targets.env" -sam-logs 10000 -leads 100 -line-items 10 >/dev/null
# shellcheck disable=SC1091
. "$WORKDIR/targets.env"
psql "$SERVER/postgres?sslmode=disable" -qc "CREATE DATABASE $db" >/dev/null
export BACKOFFICE_MASTER_KEY
BACKOFFICE_MASTER_KEY=$(head -c 32 /dev/urandom | base64)
BACKOFFICE_DATABASE_URL="$SERVER/$db?sslmode=disable" "$WORKDIR/backoffice" import "$WORKDIR/dataset.json" >/dev/null

# most_connections URL RUN: the most server connections to the database seen while every replica, all
# started on URL, is loaded (logs named after RUN); sets result to "MOST NON2XX ERRORS" (ERRORS:
# wrk's socket errors, timeouts included).
most_connections() {
  local url=$1 run=$2 i port
  for i in $(seq 1 "$REPLICAS"); do
    port=$((BASE_PORT + i))
    BACKOFFICE_DATABASE_URL=$url BACKOFFICE_ADDR="127.0.0.1:$port" BACKOFFICE_DB_MAX_OPEN_CONNS=$POOL \
      BACKOFFICE_RATE_LIMIT=off BACKOFFICE_AUTH_FAILURE_LIMIT=off "$WORKDIR/backoffice" serve 2>"$WORKDIR/$run-serve-$i.log" &
    pids+=("$!")
  done
  for i in $(seq 1 "$REPLICAS"); do
    for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$((BASE_PORT + i))/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
  done
  local wrks=()
  for i in $(seq 1 "$REPLICAS"); do
    wrk -t1 -c"$CONNS" -d"$DURATION" -H "Authorization: Api-Key $BENCH_API_KEY" \
      "http://127.0.0.1:$((BASE_PORT + i))/v1/crm/leads/$BENCH_LEAD/service-acceptance" >"$WORKDIR/$run-wrk-$i.log" 2>&1 &
    wrks+=("$!")
  done
  local most=0 n
  while kill -0 "${wrks[0]}" 2>/dev/null; do
    n=$(psql "$SERVER/postgres?sslmode=disable" -Atc "SELECT count(*) FROM pg_stat_activity WHERE datname = '$db'")
    [ "$n" -gt "$most" ] && most=$n
    sleep 0.2
  done
  for p in "${wrks[@]}"; do wait "$p" || true; done
  stop_replicas
  local answers
  answers=$(cat "$WORKDIR/$run"-wrk-*.log | awk '/Non-2xx/ {n += $5} /Socket errors/ {gsub(",", ""); e += $4 + $6 + $8 + $10} END {print n + 0, e + 0}')
  result="$most $answers"
}

say "$REPLICAS replicas, pool of $POOL each, straight to PostgreSQL"
most_connections "$SERVER/$db?sslmode=disable" direct
direct=$result
say "$REPLICAS replicas, pool of $POOL each, through PgBouncer (transaction mode, pool of $PGBOUNCER_POOL)"
server_port=${SERVER##*:}
# Its own folder under /tmp: PgBouncer runs as the postgres user, who cannot enter WORKDIR.
PGBOUNCER_DIR=$(mktemp -d -t backoffice-pgbouncer.XXXXXX)
POOL_SIZE=$PGBOUNCER_POOL .ci/pgbouncer "$PGBOUNCER_DIR" "$PGBOUNCER_PORT" "$server_port"
most_connections "postgres://postgres@127.0.0.1:$PGBOUNCER_PORT/$db?sslmode=disable" pooled
pooled=$result

printf '\n%s replicas x pool %s, %s connections of load each for %s (%s cores)\n' "$REPLICAS" "$POOL" "$CONNS" "$DURATION" "$(nproc)"
row() { printf '| %-40s | %18s | %7s | %13s |\n' "$@"; }
row path 'server connections' non-2xx 'socket errors'
printf '|%s|%s|%s|%s|\n' ------------------------------------------ -------------------: --------: --------------:
# shellcheck disable=SC2086
row "direct" $direct
# shellcheck disable=SC2086
row "through PgBouncer (pool of $PGBOUNCER_POOL)" $pooled
echo "(socket errors are wrk's, timeouts after 2 s included)"
