#!/usr/bin/env bash
# The test command of the README: every test, with a line up front that says whether the
# PostgreSQL half runs. Arguments go to `go test` (e.g. ./test.sh -race, ./test.sh -count=1).
set -euo pipefail
cd "$(dirname "$0")"
if [ -n "${BACKOFFICE_TEST_POSTGRES_URL:-}" ]; then
  echo "PostgreSQL tests run against BACKOFFICE_TEST_POSTGRES_URL."
  if [ -n "${BACKOFFICE_TEST_PGBOUNCER_URL:-}" ]; then
    echo "They run again through the pooler at BACKOFFICE_TEST_PGBOUNCER_URL."
  else
    echo "Their run through a transaction-mode pooler is skipped: set BACKOFFICE_TEST_PGBOUNCER_URL (.ci/run starts PgBouncer and sets it)."
  fi
else
  echo "PostgreSQL tests skipped: set BACKOFFICE_TEST_POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable) to run them."
fi
# -timeout 30m: the API package's tests (generated clients compiled, node checks, three engines)
# take several minutes, more than go test's default 10 on a busy machine; a -timeout given as an
# argument comes later and wins.
exec go test -timeout 30m "$@" ./...
