#!/usr/bin/env bash
# Installs what usher's tests need, when it is missing: arguments are
# COMMAND:PACKAGE pairs (the Debian package that provides the command).
# Run as root on a fresh Debian machine (CI); elsewhere it only reports
# what is missing.
set -euo pipefail
need=()
for pair in "$@"; do
	cmd=${pair%%:*}
	pkg=${pair#*:}
	command -v "$cmd" >/dev/null 2>&1 || need+=("$pkg")
done
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "missing: ${need[*]} (run as root to install them with apt-get)" >&2
	exit 1
fi
echo "installing ${need[*]}" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
