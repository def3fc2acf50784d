#!/usr/bin/env bash
# memory/vector: exact search next to the HNSW graph at 10k and 100k
# vectors of 384 dimensions (and 1M when ASLRUN_LONG=1): build time, query
# latency p50/p99, recall@10 against the exact answers, and memory per
# vector. Prints the date and the machine with the figures; extra
# arguments go to the program (go run ./bench/vector -h lists them).
set -euo pipefail
cd "$(dirname "$0")/../.."
sizes=10000,100000
if [ -n "${ASLRUN_LONG:-}" ]; then sizes=$sizes,1000000; fi
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -m), $(go version | cut -d' ' -f3)"
go run ./bench/vector -n "$sizes" "$@"
