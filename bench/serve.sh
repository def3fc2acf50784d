#!/usr/bin/env bash
# Starts per second over HTTP and the p50/p99 of a start call, on bbolt:
# `aslrun serve`'s handler behind a real HTTP server (httptest), a
# two-state workflow, as many clients at once as GOMAXPROCS. Prints the
# date and the machine with the figures, so that they can be quoted.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -m), $(go version | cut -d' ' -f3)"
go test -run '^$' -bench 'StartOverHTTP' -benchtime "${BENCHTIME:-3s}" -count "${COUNT:-3}" ./server | grep -E '^Benchmark'
