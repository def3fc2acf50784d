#!/usr/bin/env bash
# A Distributed Map over a CSV file of -rows rows (default 1,000,000) in
# batches of 100, each batch a child execution, its results written by a
# ResultWriter: on bbolt batched, bbolt strict and PostgreSQL (strict, a
# fresh database made for the run and dropped after it; skipped when no
# server answers at $ASLRUN_BENCH_SERVER, default
# postgres://postgres@127.0.0.1:5432). Prints the date, the machine and one
# JSON line per store: time, rows per second, peak RSS, the database's size
# and its bytes per row, bytes written to disk.
#
#   bash bench/distmap.sh [-rows N] [-batch N] [-concurrency N]
#
# The CSV file, results and bbolt databases go to $TMPDIR (default /tmp).
set -euo pipefail
cd "$(dirname "$0")/.."
server=${ASLRUN_BENCH_SERVER:-postgres://postgres@127.0.0.1:5432}
dir=$(mktemp -d "${TMPDIR:-/tmp}/distmap-XXXXXX")
db=aslrun_distmap_$$
cleanup() {
	rm -rf "$dir"
	psql -X -q "$server/postgres?sslmode=disable" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
}
trap cleanup EXIT
go build -o "$dir/distmap" ./bench/distmap
echo "date: $(date -u +%Y-%m-%dT%H:%MZ), aslrun $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -m), $(go version | cut -d' ' -f3)"
"$dir/distmap" -dir "$dir" -store bolt -durability batched "$@"
"$dir/distmap" -dir "$dir" -store bolt -durability strict "$@"
if psql -X -q -v ON_ERROR_STOP=1 "$server/postgres?sslmode=disable" -c "CREATE DATABASE $db" >/dev/null 2>&1; then
	"$dir/distmap" -dir "$dir" -store postgres -durability strict -postgres "$server/$db?sslmode=disable" "$@"
else
	echo "no PostgreSQL server at $server: its run is skipped" >&2
fi
