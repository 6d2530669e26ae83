#!/usr/bin/env bash
# tests/fuzz/run.sh - run the libFuzzer harnesses of tests/fuzz/ (used by `make fuzz`
# and .ci/run); see docs/fuzzing.md.
#
# Usage: BUILD=build-fuzz FUZZ_S=10 FUZZ_JOBS=1 tests/fuzz/run.sh [HARNESS...]
#   HARNESS   frame net_server net_client auth mds oss s3_xml config (default: all)
# Each harness runs FUZZ_S seconds (-max_total_time) from its seeds in
# tests/fuzz/corpus/<harness>/ (read only) and what earlier runs found in
# $BUILD/corpus/<harness>/ (where new inputs go), FUZZ_JOBS harnesses at a
# time. FUZZ_ARGS adds libFuzzer options to every run.
# Output: one line per harness (runs, execs/s, coverage, corpus size); the
# full libFuzzer log of a failing harness, the crashing input as a hex dump
# and base64 (so the CI log alone reproduces it), and where it was saved
# ($BUILD/artifacts/); each harness's whole log is kept in $BUILD/logs/.
# Exit status: 1 when any harness failed.
# Reproduce: $BUILD/fuzz/fuzz_<harness> FILE (docs/fuzzing.md).
# run.sh --list prints the harnesses' names.
set -u

BUILD=${BUILD:-build-fuzz}
FUZZ_S=${FUZZ_S:-10}
FUZZ_JOBS=${FUZZ_JOBS:-1}
FUZZ_ARGS=${FUZZ_ARGS:-}
ALL="frame net_server net_client auth mds oss s3_xml config"

case "${1:-}" in
-h|--help)
	sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
	exit 0 ;;
--list)
	echo $ALL
	exit 0 ;;
esac

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD=$(cd "$BUILD" && pwd) || exit 1
harnesses=${*:-$ALL}

# per-harness options: input size bound; the servers keep state between inputs,
# so libFuzzer's per-input leak check (which runs an input twice when it
# allocated more than it freed) is off for them: LeakSanitizer still checks at exit
opts_of() {
	case "$1" in
	frame) echo "-max_len=4096" ;;
	net_server) echo "-max_len=40000" ;;
	net_client) echo "-max_len=8192" ;;
	auth) echo "-max_len=4096" ;;
	mds) echo "-max_len=8192 -detect_leaks=0" ;;
	oss) echo "-max_len=8192 -detect_leaks=0" ;;
	s3_xml) echo "-max_len=16384" ;;
	config) echo "-max_len=4096" ;;
	esac
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:halt_on_error=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

work=$(mktemp -d "${TMPDIR:-/tmp}/weir-fuzz-run-XXXXXX")
trap 'rm -rf "$work"' EXIT

run_one() {
	local h=$1 bin=$BUILD/fuzz/fuzz_$1 log=$work/$1.log
	local corpus=$BUILD/corpus/$h seeds=$SRC/corpus/$h
	mkdir -p "$corpus" "$BUILD/artifacts" "$work/tmp-$h"
	if [ ! -x "$bin" ]; then
		echo "fuzz $h: no $bin (make fuzz-build)" > "$log"
		echo 1 > "$work/$h.rc"
		return
	fi
	# TMPDIR: the harness's scratch directory (MDT, OST) goes there and is removed
	# with it even when the harness crashes
	TMPDIR=$work/tmp-$h "$bin" $(opts_of "$h") -max_total_time="$FUZZ_S" -timeout=25 \
		-rss_limit_mb=4096 -print_final_stats=1 \
		-artifact_prefix="$BUILD/artifacts/$h-" $FUZZ_ARGS \
		"$corpus" "$seeds" > "$log" 2>&1
	echo $? > "$work/$h.rc"
	rm -rf "$work/tmp-$h"
	mkdir -p "$BUILD/logs" && cp "$log" "$BUILD/logs/$h.log"
}

summary() {
	local h=$1 log=$work/$1.log
	local runs rate cov ft units
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	units=$(ls "$BUILD/corpus/$h" 2>/dev/null | wc -l)
	printf 'fuzz %-11s %6ss  runs %-9s exec/s %-6s cov %-6s ft %-6s corpus %s\n' "$h" \
		"$FUZZ_S" "${runs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$units"
}

report_failure() {
	local h=$1 log=$work/$1.log art
	echo "################ fuzz $h FAILED (rc $(cat "$work/$h.rc")): its log"
	cat "$log"
	art=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
	if [ -n "$art" ] && [ -f "$art" ]; then
		echo "################ fuzz $h: the input ($art, $(stat -c %s "$art") bytes)"
		od -A d -t x1 -v "$art" | head -200
		echo "base64:"
		base64 -w 76 "$art" | head -400
		echo "Reproduce: $BUILD/fuzz/fuzz_$h $art  (or: base64 -d > crash; ...fuzz_$h crash)"
	fi
}

start=$SECONDS
running=0
for h in $harnesses; do
	case " $ALL " in
	*" $h "*) ;;
	*) echo "run.sh: unknown harness '$h' (known: $ALL)" >&2; exit 2 ;;
	esac
	run_one "$h" &
	running=$((running + 1))
	if [ "$running" -ge "$FUZZ_JOBS" ]; then
		wait -n
		running=$((running - 1))
	fi
done
wait

failed=0
for h in $harnesses; do
	summary "$h"
	if [ "$(cat "$work/$h.rc" 2>/dev/null)" != 0 ]; then
		report_failure "$h"
		failed=1
	fi
done
echo "fuzz: $(echo $harnesses | wc -w) harnesses in $((SECONDS - start)) s:" \
	"$([ $failed = 0 ] && echo passed || echo FAILED)"
exit $failed
