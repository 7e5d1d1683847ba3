#!/usr/bin/env bash
# The load benchmark, in one command:  bench/load.sh
#
# Builds the service, generates a large dataset (default: 1,000,000 SAM action logs on one lead,
# 10,000 leads with principals, 1,000 line items), imports it, serves it on loopback, and runs
# wrk against each read operation and against a bare net/http server that writes the same bytes
# (bench/bare: the machine's limit). The service acceptance is also read with a session token and
# with an identity provider's access token (bench/idp, ES256), to compare what each credential
# costs; every other case authenticates with an API key. Prints a table: requests/s at $CONNS connections and the
# ratio to the bare server, the server's CPU time per request, p99 latency at $CONNS and at one
# connection, non-2xx answers, the server's memory, and the import rate.
#
# Decrypt answers only after its audit event is durably committed, so its limit is not the bare
# server but bench/durable: a plain server that commits a row of seven columns with two indexes
# per request (one writer goroutine, the waiting requests' rows in one transaction) into the same
# engine with the same settings, on the same cores, before it answers; the row holds what decrypt's
# audit event holds (a time-ordered uuid, the bench user's and principal's uuids). Its rounds run
# beside each decrypt case's (at one connection too, ROUNDS rounds of each in turn), and the
# report prints each case's ratio to it, both one-connection p99s (medians of those rounds), and
# the disk's own latency of a write and its fdatasync. decrypt asks for one principal over and over;
# decrypt_many for every principal of the dataset, each request's drawn at random (bench/many.lua),
# as staff reveal the SSNs of the many merchants they board, and its limit's rows name the same
# spread of principals (so each commit writes index entries all over the events' by-target index,
# where one principal's land on one page).
#
# The load generator never shares the server's cores: the service and the bare server run on
# SERVER_CPUS with GOMAXPROCS set to that many cores, wrk on LOAD_CPUS (on 2 cores: core 0 and
# core 1). Sharing cores would starve the server and the bare baseline alike and pull every
# ratio toward 1. On PostgreSQL the database is not pinned: it shares the machine's cores.
#
# Every run is bounded ($DURATION each) and talks to 127.0.0.1 only. Knobs (environment):
#   SAM_LOGS=1000000 LEADS=10000 LINE_ITEMS=1000 DURATION=10s ROUNDS=3 CONNS=32
#   SERVER_CPUS=0 LOAD_CPUS=(every other core) THREADS=(one per load core)
#   CASES="acceptance acceptance_session acceptance_token decrypt decrypt_many sam_page_1 sam_page_50000" (which
#     cases run, in this order)
#   PORT=18080 BARE_PORT=18081 LIMIT_PORT=18082 IDP_PORT=18443 WORKDIR=(a new temporary folder) KEEP=0 (1 keeps WORKDIR)
#   DATABASE_URL=(SQLite in WORKDIR) a postgres://… URL of an EMPTY database runs it on PostgreSQL
#   PGBOUNCER=0 (1: through a PgBouncer in transaction mode, started by .ci/pgbouncer on
#     PGBOUNCER_PORT=16432 with a pool of PGBOUNCER_POOL=20, in front of the PostgreSQL server on
#     this host at DATABASE_URL's port, whose user must be postgres, trusted from 127.0.0.1)
set -euo pipefail
cd "$(dirname "$0")/.."

SAM_LOGS=${SAM_LOGS:-1000000}
LEADS=${LEADS:-10000}
LINE_ITEMS=${LINE_ITEMS:-1000}
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-32}
SERVER_CPUS=${SERVER_CPUS:-0}
LOAD_CPUS=${LOAD_CPUS:-$(seq -s, 1 $(($(nproc) - 1)))}
[ -n "$LOAD_CPUS" ] || { echo "load.sh needs two cores: one for the server, one for wrk" >&2; exit 1; }
# count_cpus LIST: how many cores a taskset list such as 0 or 1,2,3 or 2-5 names.
count_cpus() { echo "$1" | tr ',' '\n' | awk -F- '{n += (NF == 2) ? $2 - $1 + 1 : 1} END {print n}'; }
SERVER_PROCS=$(count_cpus "$SERVER_CPUS")
THREADS=${THREADS:-$(count_cpus "$LOAD_CPUS")}
PORT=${PORT:-18080}
BARE_PORT=${BARE_PORT:-18081}
IDP_PORT=${IDP_PORT:-18443}
KEEP=${KEEP:-0}
WORKDIR=${WORKDIR:-$(mktemp -d -t backoffice-bench.XXXXXX)}
mkdir -p "$WORKDIR"
PGBOUNCER_DIR=""

say() { printf '== %s\n' "$*" >&2; }

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  stop_pgbouncer
  if [ "$KEEP" != 1 ]; then rm -rf "$WORKDIR"; else say "kept $WORKDIR"; fi
}
# stop_pgbouncer stops the pooler PGBOUNCER=1 started, and waits until it has gone: while it runs
# it holds server connections to the database, and the dropdb that follows a run would fail.
stop_pgbouncer() {
  [ -n "$PGBOUNCER_DIR" ] && [ -f "$PGBOUNCER_DIR/pgbouncer.pid" ] || return 0
  local pid
  pid=$(cat "$PGBOUNCER_DIR/pgbouncer.pid")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -rf "$PGBOUNCER_DIR"
}
trap cleanup EXIT

# --- tools -------------------------------------------------------------------------------------
if ! command -v wrk >/dev/null; then
  say "installing wrk (Debian package)"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq >/dev/null && $SUDO apt-get install -y -qq wrk >/dev/null
fi
for t in go curl wrk taskset; do command -v "$t" >/dev/null || { echo "load.sh needs $t" >&2; exit 1; }; done

say "building into $WORKDIR"
go build -o "$WORKDIR/backoffice" ./cmd/backoffice
go build -o "$WORKDIR/bare" ./bench/bare
go build -o "$WORKDIR/gen" ./bench/gen
go build -o "$WORKDIR/durable" ./bench/durable
go build -o "$WORKDIR/idp" ./bench/idp

# --- dataset and import ------------------------------------------------------------------------
say "generating $SAM_LOGS SAM action logs, $LEADS leads with principals, $LINE_ITEMS line items"
"$WORKDIR/gen" -out "$WORKDIR/dataset.json" -targets "$WORKDIR/targets.env" -principals "$WORKDIR/principals.txt" \
  -sam-logs "$SAM_LOGS" -leads "$LEADS" -line-items "$LINE_ITEMS"
# The generator's file goes to the disk now, not while the import syncs its own writes.
sync
# shellcheck disable=SC1091
. "$WORKDIR/targets.env"

export BACKOFFICE_MASTER_KEY
BACKOFFICE_MASTER_KEY=$(head -c 32 /dev/urandom | base64)
export BACKOFFICE_DATABASE_URL="${DATABASE_URL:-sqlite:$WORKDIR/bench.db}"
engine=${BACKOFFICE_DATABASE_URL%%:*}
if [ "${PGBOUNCER:-0}" = 1 ]; then
  case $engine in postgres | postgresql) ;; *) echo "PGBOUNCER=1 needs a postgres:// DATABASE_URL" >&2; exit 1 ;; esac
  # The pooler listens on PGBOUNCER_PORT and forwards to DATABASE_URL's server; the service (and
  # the import) reach the same database through it.
  server=${BACKOFFICE_DATABASE_URL#*@}; server=${server%%/*}
  server_port=${server##*:}; [ "$server_port" != "$server" ] || server_port=5432
  # Its own folder under /tmp: PgBouncer runs as the postgres user, who cannot enter WORKDIR.
  PGBOUNCER_DIR=$(mktemp -d -t backoffice-pgbouncer.XXXXXX)
  say "starting PgBouncer (transaction mode) on 127.0.0.1:${PGBOUNCER_PORT:-16432} in front of 127.0.0.1:$server_port"
  POOL_SIZE=${PGBOUNCER_POOL:-20} .ci/pgbouncer "$PGBOUNCER_DIR" "${PGBOUNCER_PORT:-16432}" "$server_port"
  BACKOFFICE_DATABASE_URL=${BACKOFFICE_DATABASE_URL/@$server\//@127.0.0.1:${PGBOUNCER_PORT:-16432}\/}
  engine="postgres through PgBouncer"
fi

say "importing $(du -h "$WORKDIR/dataset.json" | cut -f1) of JSON"
t0=$(date +%s.%N)
# GNU time, when the host has it, gives the import's peak resident memory (its maximum RSS).
if [ -x /usr/bin/time ]; then
  /usr/bin/time -f %M -o "$WORKDIR/import.rss" "$WORKDIR/backoffice" import "$WORKDIR/dataset.json" >"$WORKDIR/import.out"
else
  "$WORKDIR/backoffice" import "$WORKDIR/dataset.json" >"$WORKDIR/import.out"
fi
t1=$(date +%s.%N)
import_s=$(echo "$t1 - $t0" | bc -l)
imported=$(awk '/^imported/ {print $2}' "$WORKDIR/import.out")
records_per_s=$(echo "$imported / $import_s" | bc -l)
sam_per_s=$(echo "$BENCH_SAM_LOGS / $import_s" | bc -l)

# --- servers -----------------------------------------------------------------------------------
# The rate limits are off: a load run measures the service, not 429s (the limiters' own cost is
# BenchmarkOperations' concern).
# The identity provider answers the service's key fetches only (at start, then every minute): it
# runs beside wrk, off the server's cores.
say "identity provider on 127.0.0.1:$IDP_PORT"
taskset -c "$LOAD_CPUS" "$WORKDIR/idp" -addr "127.0.0.1:$IDP_PORT" -cert "$WORKDIR/idp.pem" -token "$WORKDIR/token.txt" \
  -sub "$BENCH_USER" -audience https://backoffice.bench 2>"$WORKDIR/idp.log" &
pids+=("$!")
for _ in $(seq 1 100); do [ -s "$WORKDIR/token.txt" ] && break; sleep 0.1; done
[ -s "$WORKDIR/token.txt" ] || { echo "the identity provider did not start" >&2; cat "$WORKDIR/idp.log" >&2; exit 1; }

say "serving on 127.0.0.1:$PORT"
BACKOFFICE_ADDR="127.0.0.1:$PORT" BACKOFFICE_RATE_LIMIT=off BACKOFFICE_AUTH_FAILURE_LIMIT=off \
  BACKOFFICE_OAUTH_ISSUER="https://127.0.0.1:$IDP_PORT" BACKOFFICE_OAUTH_AUDIENCE=https://backoffice.bench \
  SSL_CERT_FILE="$WORKDIR/idp.pem" \
  GOMAXPROCS=$SERVER_PROCS taskset -c "$SERVER_CPUS" "$WORKDIR/backoffice" serve 2>"$WORKDIR/serve.log" &
server=$!
pids+=("$server")
for _ in $(seq 1 100); do
  curl -fs "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fs "http://127.0.0.1:$PORT/readyz" >/dev/null || { echo "the service did not become ready" >&2; cat "$WORKDIR/serve.log" >&2; exit 1; }

declare -A path auth
path[acceptance]="/v1/crm/leads/$BENCH_LEAD/service-acceptance"
path[acceptance_session]=${path[acceptance]}
path[acceptance_token]=${path[acceptance]}
path[decrypt]="/v1/crm/leads/$BENCH_LEAD/principals/$BENCH_PRINCIPAL/decrypt/ssn"
# decrypt_many's requests name principals drawn at random (many.lua); this one gives the bare
# server its bytes.
path[decrypt_many]=${path[decrypt]}
path[sam_page_1]="/v1/crm/sam-action-logs/$BENCH_SAM_ENTITY?page=1&size=20"
path[sam_page_50000]="/v1/crm/sam-action-logs/$BENCH_SAM_ENTITY?page=50000&size=20"
for n in "${!path[@]}"; do auth[$n]="Authorization: Api-Key $BENCH_API_KEY"; done
auth[acceptance_session]="Authorization: Bearer $BENCH_SESSION"
auth[acceptance_token]="Authorization: Bearer $(cat "$WORKDIR/token.txt")"
read -r -a names <<<"${CASES:-acceptance acceptance_session acceptance_token decrypt decrypt_many sam_page_1 sam_page_50000}"
for n in "${names[@]}"; do [ -n "${path[$n]:-}" ] || { echo "CASES: no case $n" >&2; exit 1; }; done

# The bare server answers with the service's own bytes for each request.
mkdir -p "$WORKDIR/bodies"
for n in "${names[@]}"; do
  curl -fs -H "${auth[$n]}" "http://127.0.0.1:$PORT${path[$n]}" >"$WORKDIR/bodies/$n.json" ||
    { echo "$n: the service refused the request" >&2; tail -5 "$WORKDIR/serve.log" >&2; exit 1; }
done
if [ "$BENCH_SAM_LOGS" -ge 1000000 ] && [ -s "$WORKDIR/bodies/sam_page_50000.json" ] && ! grep -q '"id"' "$WORKDIR/bodies/sam_page_50000.json"; then
  echo "page 50000 came back empty" >&2; exit 1
fi
GOMAXPROCS=$SERVER_PROCS taskset -c "$SERVER_CPUS" "$WORKDIR/bare" -addr "127.0.0.1:$BARE_PORT" -dir "$WORKDIR/bodies" &
bare=$!
pids+=("$bare")
for _ in $(seq 1 50); do curl -fs "http://127.0.0.1:$BARE_PORT/${names[0]}" >/dev/null 2>&1 && break; sleep 0.1; done

# --- the durable limit (bench/durable), the decrypt cases' baseline -----------------------------
# Same engine and settings as the service: a SQLite file of its own beside the service's, or the
# service's PostgreSQL database (its table in schema bench_durable), through the same pooler.
LIMIT_PORT=${LIMIT_PORT:-18082}
LIMIT_OPS=(decrypt decrypt_many)
case $engine in
  sqlite) limit_db="sqlite:$WORKDIR/limit.db" ;;
  *) limit_db=$BACKOFFICE_DATABASE_URL ;;
esac
# has_limit OP: whether OP is measured against the limit. The limit runs only when such a case does.
has_limit() { local o; for o in "${LIMIT_OPS[@]}"; do [ "$o" != "$1" ] || return 0; done; return 1; }
limited=()
for n in "${names[@]}"; do ! has_limit "$n" || limited+=("$n"); done
if [ "${#limited[@]}" -gt 0 ]; then
  GOMAXPROCS=$SERVER_PROCS taskset -c "$SERVER_CPUS" "$WORKDIR/durable" -addr "127.0.0.1:$LIMIT_PORT" -db "$limit_db" \
    -body "$WORKDIR/bodies/${limited[0]}.json" -actor "$BENCH_USER" -target "$BENCH_PRINCIPAL" 2>"$WORKDIR/durable.log" &
  limit=$!
  pids+=("$limit")
  for _ in $(seq 1 50); do curl -fs "http://127.0.0.1:$LIMIT_PORT/decrypt" >/dev/null 2>&1 && break; sleep 0.1; done
  curl -fs "http://127.0.0.1:$LIMIT_PORT/decrypt" >/dev/null || { echo "bench/durable did not start" >&2; cat "$WORKDIR/durable.log" >&2; exit 1; }
fi
# Each limited case's rounds: their figures, space-separated.
declare -A limit_rates=() limit_p99=() limit_cpu=() svc1_p99=() limit1_p99=() limit1=()
# limit_run OP CONNS THREADS: one run of OP's limit, as run prints it.
limit_run() {
  local out
  out=$(run "http://127.0.0.1:$LIMIT_PORT/$1" "$2" "$3" "$limit" "" "$(spread_form "$1" limit)")
  [ -n "$out" ] && [ "$(field "$out" 1)" != 0 ] || { echo "bench/durable answered nothing" >&2; exit 1; }
  echo "$out"
}
# limit_round OP: one round of OP's limit at $CONNS connections, for the limited cases only.
limit_round() {
  has_limit "$1" || return 0
  local out
  out=$(limit_run "$1" "$CONNS" "$THREADS")
  limit_rates[$1]+=" $(field "$out" 1)"; limit_p99[$1]+=" $(field "$out" 3)"; limit_cpu[$1]+=" $(field "$out" 6)"
}
# one_beside_limit OP: OP and its limit at one connection, in turn, ROUNDS times: svc1[OP]
# and limit1[OP] get the medians (req/s, p50, p99; non-2xx and errors summed). A round's p99 at one
# connection is its slowest hundredth, and wrk counts the requests a steady client would have sent
# during a stall: one stall of the disk or the database server sets it. Rounds in turn with
# medians, as at 32 connections, compare the two and not the moment each round fell on.
one_beside_limit() {
  local out s_r=() s_50=() s_99=() l_r=() l_50=() l_99=() bad=0 e=0
  for _ in $(seq 1 "$ROUNDS"); do
    out=$(run "http://127.0.0.1:$PORT${path[$1]}" 1 1 "$server" "${auth[$1]}" "$(spread_form "$1" service)")
    s_r+=("$(field "$out" 1)"); s_50+=("$(field "$out" 2)"); s_99+=("$(field "$out" 3)")
    bad=$((bad + $(field "$out" 4))); e=$((e + $(field "$out" 5)))
    out=$(limit_run "$1" 1 1)
    l_r+=("$(field "$out" 1)"); l_50+=("$(field "$out" 2)"); l_99+=("$(field "$out" 3)")
  done
  svc1_p99[$1]="${s_99[*]}"; limit1_p99[$1]="${l_99[*]}"
  # run's fields; the last, CPU, is left 0: the table's CPU is taken at $CONNS connections.
  svc1[$1]="$(median "${s_r[@]}") $(median "${s_50[@]}") $(median "${s_99[@]}") $bad $e 0"
  limit1[$1]="$(median "${l_r[@]}") $(median "${l_50[@]}") $(median "${l_99[@]}")"
}

# --- load --------------------------------------------------------------------------------------
rss_kb() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$server/status"; }

# cpu_ticks PID: the user and system CPU time the process has used, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK_US=$((1000000 / $(getconf CLK_TCK)))

# run URL CONNS THREADS PID [HEADER [FORM]]: one bounded wrk run (wrk on LOAD_CPUS) against the
# server PID, sending HEADER if given, its requests spread over every principal in FORM (service
# or limit, bench/many.lua) if given; prints "reqs p50_ms p99_ms non2xx errors cpu_us_per_request".
run() {
  local out t0 t1 header=() script=() script_args=()
  [ -z "${5:-}" ] || header=(-H "$5")
  [ -z "${6:-}" ] || { script=(-s bench/many.lua); script_args=(-- "$6" "$WORKDIR/principals.txt"); }
  t0=$(cpu_ticks "$4")
  out=$(timeout 120 taskset -c "$LOAD_CPUS" wrk -t"$3" -c"$2" -d"$DURATION" --latency "${header[@]}" "${script[@]}" "$1" "${script_args[@]}" 2>&1) || true
  t1=$(cpu_ticks "$4")
  echo "$out" >>"$WORKDIR/wrk.log"
  # A run that measured nothing (wrk or its script failed) fails the benchmark, not a 0 in the table.
  grep -q 'Requests/sec:' <<<"$out" || { echo "wrk measured nothing against $1:" >&2; echo "$out" >&2; exit 1; }
  echo "$out" | awk '
    function ms(v) {
      if (v ~ /us$/) return substr(v, 1, length(v)-2) / 1000
      if (v ~ /ms$/) return substr(v, 1, length(v)-2) + 0
      if (v ~ /s$/)  return substr(v, 1, length(v)-1) * 1000
      return v
    }
    /requests in/ { total = $1 }
    /Requests\/sec:/ { reqs = $2 }
    $1 == "50%" { p50 = ms($2) }
    $1 == "99%" { p99 = ms($2) }
    /Non-2xx or 3xx responses:/ { non2xx = $5 }
    /Socket errors:/ { gsub(",", ""); errs = $4 + $6 + $8 + $10 }
    END { printf "%s %s %s %d %d %.1f\n", reqs + 0, p50 + 0, p99 + 0, non2xx + 0, errs + 0, (total > 0) ? cpu / total : 0 }' cpu=$(((t1 - t0) * TICK_US))
}

field() { echo "$1" | awk -v i="$2" '{print $i}'; }
# spread_form OP FORM: FORM when OP's requests are spread over every principal (decrypt_many).
spread_form() { [ "$1" != decrypt_many ] || echo "$2"; }
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

declare -A svc32 svc1 bare32 bare1 rss_after rates
say "wrk on cores $LOAD_CPUS, server and bare server on cores $SERVER_CPUS (GOMAXPROCS=$SERVER_PROCS)"
say "$DURATION per run, $CONNS connections for throughput ($ROUNDS rounds, medians), 1 for latency"
rss_start=$(rss_kb VmRSS)
for n in "${names[@]}"; do
  say "$n"
  # A short unmeasured run first: the measured ones see warm caches, as a serving process does.
  DURATION=2s run "http://127.0.0.1:$PORT${path[$n]}" "$CONNS" "$THREADS" "$server" "${auth[$n]}" "$(spread_form "$n" service)" >/dev/null
  # Throughput: service and bare server in turn, ROUNDS times; the table takes each figure's
  # median, so that a burst of load from elsewhere on the machine during one run moves neither much.
  svc_rates=(); bare_rates=(); svc_p99=(); bare_p99=(); svc_cpu=(); non2xx=0; errs=0
  for _ in $(seq 1 "$ROUNDS"); do
    out=$(run "http://127.0.0.1:$PORT${path[$n]}" "$CONNS" "$THREADS" "$server" "${auth[$n]}" "$(spread_form "$n" service)")
    svc_rates+=("$(field "$out" 1)"); svc_p99+=("$(field "$out" 3)"); svc_cpu+=("$(field "$out" 6)")
    non2xx=$((non2xx + $(field "$out" 4))); errs=$((errs + $(field "$out" 5)))
    out=$(run "http://127.0.0.1:$BARE_PORT/$n" "$CONNS" "$THREADS" "$bare" "${auth[$n]}")
    bare_rates+=("$(field "$out" 1)"); bare_p99+=("$(field "$out" 3)")
    limit_round "$n"
  done
  # svc32: "req/s p99_ms non2xx errors cpu_us"; bare32: "req/s p99_ms"
  svc32[$n]="$(median "${svc_rates[@]}") $(median "${svc_p99[@]}") $non2xx $errs $(median "${svc_cpu[@]}")"
  bare32[$n]="$(median "${bare_rates[@]}") $(median "${bare_p99[@]}")"
  rates[$n]="${svc_rates[*]} / ${bare_rates[*]}"
  if has_limit "$n"; then
    one_beside_limit "$n"
  else
    svc1[$n]=$(run "http://127.0.0.1:$PORT${path[$n]}" 1 1 "$server" "${auth[$n]}")
  fi
  rss_after[$n]=$(rss_kb VmRSS)
  bare1[$n]=$(run "http://127.0.0.1:$BARE_PORT/$n" 1 1 "$bare" "${auth[$n]}")
done
peak_kb=$(rss_kb VmHWM)

# report_limit prints each limited case beside its durable limit, and the disk's sync latency.
report_limit() {
  local n r l p d lp cpu lcpu sync
  printf '\nbeside the durable limit (bench/durable: one durable, indexed insert per answer, same engine, settings and cores):\n'
  printf '| %-28s | %9s | %9s | %5s | %9s | %9s | %8s | %8s | %8s | %5s |\n' '' 'req/s' 'limit r/s' ratio 'CPU µs/r' 'limit µs' 'p99 @32' 'p99 @1' 'limit @1' ratio
  printf '|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n' -----------------------------: ----------: ----------: ------: ----------: ----------: ---------: ---------: ---------: ------:
  for n in "${limited[@]}"; do
    # The rounds' figures are split into words on purpose (unquoted).
    r=$(field "${svc32[$n]}" 1); l=$(median ${limit_rates[$n]})
    p=$(field "${svc1[$n]}" 3); lp=$(field "${limit1[$n]}" 3)
    cpu=$(field "${svc32[$n]}" 5); lcpu=$(median ${limit_cpu[$n]})
    d=$(field "${svc32[$n]}" 2)
    printf '| %-28s | %9.0f | %9.0f | %5.2f | %9.1f | %9.1f | %8.3f | %8.3f | %8.3f | %5.2f |\n' "$n ($engine)" "$r" "$l" \
      "$(echo "if ($l > 0) $r / $l else 0" | bc -l)" "$cpu" "$lcpu" "$d" "$p" "$lp" "$(echo "if ($lp > 0) $p / $lp else 0" | bc -l)"
  done
  printf 'targets: req/s ratio >= 0.8, p99 @1 ratio <= 1.5\n'
  for n in "${limited[@]}"; do
    printf '%s: limit req/s of each round:%s; limit p99 @32: %s ms (median)\n' "$n" "${limit_rates[$n]}" "$(median ${limit_p99[$n]})"
    printf '%s: p99 @1 of each round in turn, ms (service / limit; the table takes the medians): %s / %s\n' "$n" "${svc1_p99[$n]}" "${limit1_p99[$n]}"
  done
  # The disk, for the record: 2,000 appends of 20 KiB, each followed by fdatasync, in WORKDIR.
  sync=$("$WORKDIR/durable" -sync 2000 -dir "$WORKDIR")
  printf 'disk: write of 20 KiB + fdatasync in %s: p50 %s ms, p99 %s ms (2,000 in a row)\n' "$WORKDIR" "$(field "$sync" 1)" "$(field "$sync" 2)"
}

# --- report ------------------------------------------------------------------------------------
printf '\n'
printf 'backoffice load benchmark (%s): server on cores %s (GOMAXPROCS=%s), wrk on cores %s; %s per run,\n' \
  "$engine" "$SERVER_CPUS" "$SERVER_PROCS" "$LOAD_CPUS" "$DURATION"
printf '%s connections for req/s, CPU and p99 (medians of %s rounds), 1 connection for p50/p99 at 1 (decrypt cases: medians of as many)\n' "$CONNS" "$ROUNDS"
printf 'dataset: %d records (%d SAM action logs on one lead, %d leads with principals, %d line items)\n\n' \
  "$imported" "$BENCH_SAM_LOGS" "$LEADS" "$LINE_ITEMS"
printf '| %-18s | %9s | %9s | %5s | %9s | %8s | %8s | %8s | %8s | %8s | %7s | %7s |\n' \
  operation 'req/s' 'bare r/s' ratio 'CPU µs/r' 'p99 @32' 'bare @32' 'p50 @1' 'p99 @1' 'bare @1' 'non-2xx' 'RSS MiB'
printf '|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n' --------------------: ----------: ----------: ------: ----------: ---------: ---------: ---------: ---------: ---------: --------: --------:
bad=0
for n in "${names[@]}"; do
  r=$(field "${svc32[$n]}" 1); br=$(field "${bare32[$n]}" 1)
  ratio=$(echo "if ($br > 0) $r / $br else 0" | bc -l)
  non2xx=$(( $(field "${svc32[$n]}" 3) + $(field "${svc1[$n]}" 4) ))
  errs=$(( $(field "${svc32[$n]}" 4) + $(field "${svc1[$n]}" 5) ))
  [ "$non2xx" -eq 0 ] && [ "$errs" -eq 0 ] || bad=1
  printf '| %-18s | %9.0f | %9.0f | %5.2f | %9.1f | %8.3f | %8.3f | %8.3f | %8.3f | %8.3f | %7s | %7.0f |\n' \
    "$n" "$r" "$br" "$ratio" "$(field "${svc32[$n]}" 5)" "$(field "${svc32[$n]}" 2)" "$(field "${bare32[$n]}" 2)" \
    "$(field "${svc1[$n]}" 2)" "$(field "${svc1[$n]}" 3)" "$(field "${bare1[$n]}" 3)" \
    "$non2xx${errs:+/$errs}" "$(echo "${rss_after[$n]} / 1024" | bc -l)"
done
printf '\nCPU µs/r: the server process'"'"'s user+system CPU time over the requests wrk completed (32 connections)\n'
printf 'server memory: %.0f MiB resident after start-up, peak %.0f MiB (VmHWM)\n' \
  "$(echo "$rss_start / 1024" | bc -l)" "$(echo "$peak_kb / 1024" | bc -l)"
printf 'import: %d records in %.1f s = %.0f records/s, %.0f SAM action logs/s (whole command: read, check, insert, commit)\n' \
  "$imported" "$import_s" "$records_per_s" "$sam_per_s"
if [ -s "$WORKDIR/import.rss" ]; then
  printf 'import memory: peak %.0f MiB resident (/usr/bin/time)\n' "$(echo "$(tail -1 "$WORKDIR/import.rss") / 1024" | bc -l)"
fi
printf 'non-2xx column: non-2xx answers/socket errors, all runs of the service\n'
printf 'req/s of each round (service / bare):\n'
for n in "${names[@]}"; do printf '  %-18s %s\n' "$n" "${rates[$n]}"; done
[ "${#limited[@]}" = 0 ] || report_limit
printf 'wrk output: %s/wrk.log; server log: %s/serve.log\n' "$WORKDIR" "$WORKDIR"
[ "$bad" -eq 0 ] || { echo "some requests failed or answered non-2xx" >&2; exit 1; }
