# tests/bench/lib.sh - sourced by the bench scripts (run.sh, dne.sh,
# recovery.sh, sec.sh, peer-moosefs.sh) after `set -euo pipefail`: moves to
# the repository root and sets BUILD (default build) and OUT, the absolute
# path of BUILD/bench, made when missing.
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BUILD=${BUILD:-build}
OUT=$BUILD/bench
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
