#!/usr/bin/env bash
# The 20 checks of plan.hcl as a user would script them with OpenSSH: one
# `ssh` call per check, all through one ControlMaster connection
# (ControlPath=$CONTROL_PATH, opened by the caller before timing), in the
# same order as the plan's steps. Exits non-zero at the first failed check.
#
# usage: steps.sh (reads SSH_PORT SSH_USER SSH_KEY KNOWN_HOSTS CONTROL_PATH
#                  LISTEN_PORT FILE FILE_SIZE FILE_SHA256 from the environment)
set -euo pipefail

: "${SSH_PORT:?}" "${SSH_USER:?}" "${SSH_KEY:?}" "${KNOWN_HOSTS:?}" "${CONTROL_PATH:?}"
: "${LISTEN_PORT:?}" "${FILE:?}" "${FILE_SIZE:?}" "${FILE_SHA256:?}"

box() {
	ssh -o ControlMaster=auto -o ControlPath="$CONTROL_PATH" -o ControlPersist=60 \
		-o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$KNOWN_HOSTS" \
		-i "$SSH_KEY" -p "$SSH_PORT" -l "$SSH_USER" 127.0.0.1 "$@"
}
fail() { echo "steps.sh: $*" >&2; exit 1; }

# A run step: the command must exit 0; with a second argument, its output
# must equal it.
run() {
	local out
	out=$(box "$1") || fail "$1: exit $?"
	[ $# -lt 2 ] || [ "$out" = "$2" ] || fail "$1: printed '$out', want '$2'"
}

# A wait step: poll every 100ms until the host accepts a connection on
# LISTEN_PORT, for up to 30s (the port is open: one call, as in the plan).
wait_port() {
	local deadline=$((SECONDS + 30))
	until box "exec 3<>/dev/tcp/127.0.0.1/$LISTEN_PORT" 2>/dev/null; do
		[ $SECONDS -lt $deadline ] || fail "port $LISTEN_PORT not open after 30s"
		sleep 0.1
	done
}

# An assert step: the file exists with the size and SHA-256 expected, in
# one call.
check_file() {
	local q
	q=$(printf '%q' "$FILE")
	box "test -e $q && test \"\$(stat -c %s $q)\" = $FILE_SIZE && test \"\$(sha256sum < $q | cut -c1-64)\" = $FILE_SHA256" ||
		fail "$FILE: missing, or not $FILE_SIZE bytes with sha256 $FILE_SHA256"
}

run true
run 'echo hello' hello
wait_port
check_file
run 'test -d /tmp'
run 'uname -s' Linux
wait_port
check_file
run 'id -un' "$SSH_USER"
run "ls $(printf '%q' "$FILE")"
wait_port
check_file
run 'printf %.1s "$HOME"' /
run 'date +%s'
wait_port
check_file
wait_port
check_file
wait_port
check_file
