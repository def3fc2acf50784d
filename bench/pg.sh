#!/usr/bin/env bash
# aslrun on PostgreSQL next to bbolt: commit latency (p50, p99) and state
# transitions per second on the loop workflow of bench/workflows, strict
# and batched, one execution at a time and 16 at once (bench/pg -mode
# latency); with -mode bytes, the WAL and table bytes PostgreSQL writes
# per step of one execution of the loop, 2000 turns, strict (measure on a
# quiet server: the server's WAL is every database's). Needs a
# PostgreSQL server: $ASLRUN_BENCH_SERVER, by default
# postgres://postgres@127.0.0.1:5432; a fresh database is made for the run
# and dropped after it. Prints the date and the machine with the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
server=${ASLRUN_BENCH_SERVER:-postgres://postgres@127.0.0.1:5432}
db=aslrun_bench_$$
psql -X -q -v ON_ERROR_STOP=1 "$server/postgres?sslmode=disable" -c "CREATE DATABASE $db"
trap 'psql -X -q "$server/postgres?sslmode=disable" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true' EXIT
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -m), $(go version | cut -d' ' -f3), $(psql -X -At "$server/postgres?sslmode=disable" -c 'SHOW server_version' | cut -d' ' -f1) PostgreSQL on the same machine"
go run ./bench/pg -db "$server/$db?sslmode=disable" "$@"
