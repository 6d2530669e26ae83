#!/bin/sh
# deploy/deps.sh - install the Debian 12 packages Weir builds and tests with.
#
# Usage: deploy/deps.sh [--check]
#   --check   only report missing packages; exit 1 if any are missing.
#
# Installs only what is missing (dpkg-query), so a second run is a no-op and
# takes well under a second. Needs root (or sudo) when something is missing.
set -eu

PKGS="build-essential pkg-config
librocksdb-dev liburing-dev
libprotobuf-c-dev protobuf-c-compiler
libcunit1-dev
libibverbs-dev librdmacm-dev
libcurl4-openssl-dev libssl-dev libxml2-dev
libfuse3-dev fuse3
libinih-dev zlib1g-dev
iproute2 procps coreutils
rsync sqlite3 git python3"

case "${1:-}" in
-h|--help)
	sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
	exit 0 ;;
esac

missing=""
for p in $PKGS; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$st" in
	*"install ok installed"*) ;;
	*) missing="$missing $p" ;;
	esac
done

if [ -z "$missing" ]; then
	[ "${1:-}" = "--check" ] || echo "deps.sh: all build and test packages are installed"
	exit 0
fi

if [ "${1:-}" = "--check" ]; then
	echo "deps.sh: missing:$missing"
	exit 1
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
		echo "deps.sh: need root to install:$missing" >&2; exit 1
	fi
fi

echo "deps.sh: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
echo "deps.sh: done"
