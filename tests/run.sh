#!/usr/bin/env bash
# tests/run.sh - run Weir's test binaries (used by `make test`, `make unit`,
# `make integration`, `make posix`).
#
# Usage: BUILD=build tests/run.sh [FILTER...]
#   FILTER  "unit", "integration", "posix", or a test name ("test_rpc",
#           "rpc", "net/test_rpc", "posix/test_px_open"); none runs all.
# Runs BUILD/tests/unit/*/test_*, then BUILD/tests/integration/test_*, then
# the POSIX conformance suite BUILD/tests/posix/test_*, each under a time
# limit (UNIT_TIMEOUT, default 120 s; INTEGRATION_TIMEOUT and POSIX_TIMEOUT,
# default 300 s), printing its output. Exit code 77 from a test = skipped.
# The last line is "N passed, N failed, N skipped" (counting binaries); the
# exit status is 1 when any test failed or none was found.
# TEST_JOBS=N runs up to N integration (then N posix) tests at once
# (default 1), each one's output printed when it ends.
set -u

BUILD=${BUILD:-build}
UNIT_TIMEOUT=${UNIT_TIMEOUT:-120}
INTEGRATION_TIMEOUT=${INTEGRATION_TIMEOUT:-300}
POSIX_TIMEOUT=${POSIX_TIMEOUT:-300}
TEST_JOBS=${TEST_JOBS:-1}

case "${1:-}" in
-h|--help)
	sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
	exit 0 ;;
esac

if [ ! -d "$BUILD/tests" ]; then
	echo "run.sh: no $BUILD/tests: build first (make all, or make BUILD=... all)" >&2
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
BUILD=$(cd "$BUILD" && pwd)
export BUILD

# The harness looks for servers in $BUILD/bin; sanitizer runs should stop at
# the first report and print where it came from.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

want_unit=0
want_integ=0
want_posix=0
names=()
if [ $# -eq 0 ]; then
	want_unit=1
	want_integ=1
	want_posix=1
fi
for a in "$@"; do
	case "$a" in
	unit) want_unit=1 ;;
	integration) want_integ=1 ;;
	posix) want_posix=1 ;;
	*) names+=("$a") ;;
	esac
done

# Does test binary $1 match a name filter?
matches() {
	local path=$1 rel base n
	rel=${path#"$BUILD"/tests/}
	base=$(basename "$path")
	for n in "${names[@]}"; do
		n=${n%.c}
		case "$n" in
		"$base" | "test_$n" | "$rel" | "unit/$n" | "integration/$n" | "posix/$n") return 0 ;;
		esac
		[[ "$rel" == */"$n" || "$rel" == */"test_$n" ]] && return 0
	done
	return 1
}

unit_tests=()
integ_tests=()
for t in "$BUILD"/tests/unit/*/test_*; do
	[ -f "$t" ] && [ -x "$t" ] || continue
	case "$t" in *.d | *.o) continue ;; esac
	if [ $want_unit -eq 1 ] || { [ ${#names[@]} -gt 0 ] && matches "$t"; }; then
		unit_tests+=("$t")
	fi
done
for t in "$BUILD"/tests/integration/test_*; do
	[ -f "$t" ] && [ -x "$t" ] || continue
	case "$t" in *.d | *.o) continue ;; esac
	if [ $want_integ -eq 1 ] || { [ ${#names[@]} -gt 0 ] && matches "$t"; }; then
		integ_tests+=("$t")
	fi
done

posix_tests=()
for t in "$BUILD"/tests/posix/test_*; do
	[ -f "$t" ] && [ -x "$t" ] || continue
	case "$t" in *.d | *.o) continue ;; esac
	if [ $want_posix -eq 1 ] || { [ ${#names[@]} -gt 0 ] && matches "$t"; }; then
		posix_tests+=("$t")
	fi
done

total=$((${#unit_tests[@]} + ${#integ_tests[@]} + ${#posix_tests[@]}))
if [ "$total" -eq 0 ]; then
	echo "run.sh: no test binaries match${*:+ '$*'} under $BUILD/tests" >&2
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi

passed=0
failed=0
skipped=0
failed_names=()
skipped_names=()
start_all=$(date +%s)

# Record the result of test $1 that exited with $2 after $3 seconds (limit $4).
record() {
	local name=$1 rc=$2 secs=$3 limit=$4
	if [ "$rc" -eq 0 ]; then
		passed=$((passed + 1))
		echo "PASS: $name (${secs}s)"
	elif [ "$rc" -eq 77 ]; then
		skipped=$((skipped + 1))
		skipped_names+=("$name")
		echo "SKIP: $name (${secs}s)"
	elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		failed=$((failed + 1))
		failed_names+=("$name (timeout ${limit}s)")
		echo "FAIL: $name: killed after the ${limit}s time limit"
	else
		failed=$((failed + 1))
		if [ "$rc" -gt 128 ]; then
			failed_names+=("$name (signal $((rc - 128)))")
			echo "FAIL: $name: died of signal $((rc - 128)) (${secs}s)"
		else
			failed_names+=("$name (exit $rc)")
			echo "FAIL: $name: exit status $rc (${secs}s)"
		fi
	fi
}

# Run test $1 with time limit $2, output to stdout.
run_one() {
	local t=$1 limit=$2 name rc t0 t1
	name=${t#"$BUILD"/tests/}
	echo
	echo "===== $name"
	t0=$(date +%s)
	# SIGTERM first (the harness then kills its servers and cleans up),
	# SIGKILL 10 s later.
	timeout -k 10 "$limit" "$t"
	rc=$?
	t1=$(date +%s)
	record "$name" "$rc" $((t1 - t0)) "$limit"
}

for t in "${unit_tests[@]}"; do
	run_one "$t" "$UNIT_TIMEOUT"
done

# Run tests $2... with time limit $1: one after the other, or TEST_JOBS at once.
run_group() {
	local limit=$1 t i next running n
	shift
	local tests=("$@")
	if [ "$TEST_JOBS" -le 1 ] || [ ${#tests[@]} -le 1 ]; then
		for t in "${tests[@]}"; do
			run_one "$t" "$limit"
		done
		return
	fi
	# Parallel: each test's output goes to a file, printed when it ends.
	outdir=$(mktemp -d /tmp/weir-run-XXXXXX)
	trap 'rm -rf "${outdir:-}"' EXIT
	declare -A pid_of=()
	declare -A t0_of=()
	i=0
	next=0
	running=0
	n=${#tests[@]}
	while [ $next -lt $n ] || [ $running -gt 0 ]; do
		while [ $running -lt "$TEST_JOBS" ] && [ $next -lt $n ]; do
			t=${tests[$next]}
			( timeout -k 10 "$limit" "$t" >"$outdir/$next.out" 2>&1
			  echo $? >"$outdir/$next.rc" ) &
			pid_of[$next]=$!
			t0_of[$next]=$(date +%s)
			next=$((next + 1))
			running=$((running + 1))
		done
		wait -n 2>/dev/null || sleep 0.2
		for ((i = 0; i < next; i++)); do
			[ -n "${pid_of[$i]:-}" ] || continue
			[ -f "$outdir/$i.rc" ] || continue
			wait "${pid_of[$i]}" 2>/dev/null
			t=${tests[$i]}
			echo
			echo "===== ${t#"$BUILD"/tests/}"
			cat "$outdir/$i.out"
			record "${t#"$BUILD"/tests/}" "$(cat "$outdir/$i.rc")" \
				$(($(date +%s) - t0_of[$i])) "$limit"
			unset "pid_of[$i]"
			running=$((running - 1))
		done
	done
	rm -rf "$outdir"
}

run_group "$INTEGRATION_TIMEOUT" "${integ_tests[@]}"
run_group "$POSIX_TIMEOUT" "${posix_tests[@]}"

echo
echo "===== summary ($(($(date +%s) - start_all))s)"
for n in "${skipped_names[@]}"; do
	echo "  skipped: $n"
done
for n in "${failed_names[@]}"; do
	echo "  FAILED:  $n"
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
