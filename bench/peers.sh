#!/usr/bin/env bash
# peers.sh: install the field's LLM benchmark clients that
# bench/llm-peers.sh runs beside lockstep, each in a venv of its own (they
# pull different versions of the same libraries), from PyPI, once:
# ${LOCKSTEP_BENCH_CACHE:-~/.cache/lockstep-bench}/venv-NAME. A venv is
# made again only when its pinned version changes. .ci/run calls it too.
#
# usage: bench/peers.sh
set -euo pipefail

cache=${LOCKSTEP_BENCH_CACHE:-$HOME/.cache/lockstep-bench}
mkdir -p "$cache"

# venv NAME SPEC
venv() {
	local name=$1 spec=$2 v=$cache/venv-$1
	[ -e "$v/.installed-$spec" ] && return
	echo "peers: installing $spec into $v" >&2
	rm -rf "$v"
	python3 -m venv "$v"
	"$v/bin/pip" install -q --disable-pip-version-check "$spec"
	touch "$v/.installed-$spec"
}

venv aiperf aiperf==0.13.0
venv guidellm guidellm==0.8.1
