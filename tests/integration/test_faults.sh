#!/usr/bin/env bash
# tests/integration/test_faults.sh - the short form of the fault test
# (tests/fault/faults.sh; `make faults` runs the long one): 8 application
# processes (libweir, FUSE and the shim) while the MDS and each OSS are
# kill -9'd and restarted once and the MDS and an OSS are paused past the
# lease and OST timeouts; no call may fail, no byte may be wrong, the
# fcntl lock must stay exclusive.
#
# Installed by the Makefile as BUILD/tests/integration/test_faults.
# Exit 0 = pass, 1 = fail, 77 = skipped (FUSE cannot be mounted here).
set -u
SRCDIR=${WEIR_SRCDIR:-@SRCDIR@}
case "$SRCDIR" in @*) SRCDIR=$(cd "$(dirname "$0")/../.." && pwd) ;; esac
BUILD=${BUILD:-$SRCDIR/build}
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }
# a sanitizer build's shim cannot be preloaded into programs built without
# it (as test_preload): its two shim workers become libweir ones there
shim=(--api 3 --shim 2)
if ldd "$BUILD/lib/libweir-preload.so" 2>/dev/null | grep -q libasan; then
	echo "test_faults: sanitizer build: no shim workers (5 libweir, 3 FUSE)"
	shim=(--api 5 --shim 0)
fi
BUILD=$BUILD exec "$SRCDIR/tests/fault/faults.sh" --rounds 1 --settle 2 "${shim[@]}"
