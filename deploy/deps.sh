#!/bin/sh
# deploy/deps.sh - install the Debian 12 packages Weir builds and tests with.
#
# Usage: deploy/deps.sh [--check]
#   --check   only report missing packages; exit 1 if any are missing.
#
# Installs only what is missing (dpkg-query), so a second run is a no-op and
# takes well under a second. Needs root (or sudo) when something is missing.
# Also: node and npm (Debian's nodejs and npm, when no node is on PATH), and
# the S3 test server s3rver 3.7.x from npm into .deps/node_modules of the
# repository (npm install --prefix; nothing global). S3RVER_VERSION overrides.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEPS_DIR=$ROOT/.deps
S3RVER_VERSION=${S3RVER_VERSION:-3.7.1}

PKGS="build-essential pkg-config
librocksdb-dev liburing-dev
libprotobuf-c-dev protobuf-c-compiler
libcunit1-dev
libibverbs-dev librdmacm-dev
libcurl4-openssl-dev libssl-dev libxml2-dev
libfuse3-dev fuse3
libinih-dev zlib1g-dev
clang libclang-rt-14-dev
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
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	missing="$missing nodejs npm"
fi

# s3rver (for the S3 tier tests) into $DEPS_DIR, when missing or another version
s3rver_ok() {
	[ -f "$DEPS_DIR/node_modules/s3rver/package.json" ] &&
		grep -q "\"version\": \"$S3RVER_VERSION\"" "$DEPS_DIR/node_modules/s3rver/package.json"
}
install_s3rver() {
	s3rver_ok && return 0
	if [ "${1:-}" = "--check" ]; then
		echo "deps.sh: missing: s3rver@$S3RVER_VERSION in $DEPS_DIR"
		return 1
	fi
	echo "deps.sh: installing s3rver@$S3RVER_VERSION into $DEPS_DIR"
	mkdir -p "$DEPS_DIR"
	npm install --prefix "$DEPS_DIR" --no-audit --no-fund --loglevel=error \
		"s3rver@$S3RVER_VERSION"
}

if [ -z "$missing" ]; then
	install_s3rver "${1:-}"
	[ "${1:-}" = "--check" ] || echo "deps.sh: all build and test packages are installed"
	exit 0
fi

if [ "${1:-}" = "--check" ]; then
	echo "deps.sh: missing:$missing"
	install_s3rver --check || true
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
install_s3rver
echo "deps.sh: done"
