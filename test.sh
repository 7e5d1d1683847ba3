#!/usr/bin/env bash
# The test command of the README: every test, and a closing line that says whether the
# PostgreSQL half ran. Arguments go to `go test` (e.g. ./test.sh -race, ./test.sh -count=1).
set -uo pipefail
cd "$(dirname "$0")"
go test "$@" ./...
status=$?
if [ -n "${BACKOFFICE_TEST_POSTGRES_URL:-}" ]; then
  echo "PostgreSQL tests ran against BACKOFFICE_TEST_POSTGRES_URL."
else
  echo "PostgreSQL tests skipped: set BACKOFFICE_TEST_POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable) to run them."
fi
exit $status
