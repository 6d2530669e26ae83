#!/usr/bin/env bash
# tests/bench/hsm.sh - the S3 tier benchmark (`make bench ONLY=hsm`; run by
# tests/bench/run.sh when ONLY is empty or names hsm).
#
# Starts its own s3rver (from .deps/, as the tests do), a local cluster
# (deploy/weir-local, 1 MDS + OSS x OST_PER_OSS) and one weir-hsmd with
# THREADS workers, then measures for NR files of SIZE bytes each (striped
# over every OST):
#   S3 reference  curl PUT and curl GET of NR objects of SIZE bytes, THREADS
#                 curl processes at once (as many streams as the copytool's
#                 workers), SigV4-signed like the copytool's requests;
#   archive       `weir hsm archive` of the NR files (waits until all are
#                 archived and verified);
#   restore       `weir hsm release`, then `weir hsm restore` (prefetch);
#   read-restore  release again, then THREADS `weir cat FILE >/dev/null` at
#                 once: restore on first access.
# Each Weir figure is MB/s of file bytes over the wall time of the command,
# with the curl figure of the same direction as its reference and the ratio.
# The CLI polls the queue every 200 ms, so a figure can lose up to 200 ms.
# One file is read back and compared with its source after each restore.
#
# Results: printed, and added to BUILD/bench/results.json (created when
# absent or when FRESH=1; run.sh sets FRESH=1 when only hsm runs).
# Environment: BUILD (build), QUICK=1 (4 x 16 MiB instead of 8 x 64 MiB),
# NR, SIZE (bytes), THREADS (4), OSS (2), OST_PER_OSS (2), WEIR_S3RVER.
# Needs node and s3rver (deploy/deps.sh), curl >= 7.75 (--aws-sigv4), jq.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
REPO=$(pwd)
BUILD=${BUILD:-build}
BUILD=$(cd "$BUILD" && pwd)
OUT=$BUILD/bench
mkdir -p "$OUT"
W=$OUT/hsm
DIR=$W/cluster
JSON=$OUT/results.json
QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
	NR=${NR:-4}
	SIZE=${SIZE:-$((16 << 20))}
else
	NR=${NR:-8}
	SIZE=${SIZE:-$((64 << 20))}
fi
THREADS=${THREADS:-4}
BUCKET=weir-bench
MIB=$((SIZE >> 20))
LABEL="${NR}x${MIB}MiB"
WEIR=$BUILD/bin/weir

for tool in node curl jq; do
	command -v "$tool" >/dev/null || { echo "hsm bench: skipped: $tool is not installed"; exit 0; }
done
S3RVER_JS=${WEIR_S3RVER:-$REPO/.deps/node_modules/s3rver/bin/s3rver.js}
if [ ! -f "$S3RVER_JS" ]; then
	echo "hsm bench: skipped: s3rver is not installed under .deps/ (run deploy/deps.sh)"
	exit 0
fi
[ -x "$BUILD/bin/weir-hsmd" ] || { echo "hsm bench: no $BUILD/bin/weir-hsmd (make first)" >&2; exit 1; }

s3pid=
hsmdpid=
cleanup() {
	set +e
	[ -n "$hsmdpid" ] && kill "$hsmdpid" 2>/dev/null && wait "$hsmdpid" 2>/dev/null
	deploy/weir-local down --dir "$DIR" >/dev/null 2>&1
	[ -n "$s3pid" ] && kill "$s3pid" 2>/dev/null && wait "$s3pid" 2>/dev/null
	rm -rf "$W/s3data" "$W/src" "$W/back"
	true
}
trap cleanup EXIT
deploy/weir-local down --dir "$DIR" >/dev/null 2>&1 || true
rm -rf "$W"
mkdir -p "$W/s3data"

now() { date +%s.%N; }
# MB/s of $1 bytes in the seconds between $2 and $3
mbps() { awk -v b="$1" -v t0="$2" -v t1="$3" 'BEGIN { printf "%.3f", b / 1e6 / (t1 - t0) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", (b > 0 ? a / b : 0) }'; }

# ---- s3rver on a free port
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
	echo $((20000 + RANDOM % 20000)))
NODE_OPTIONS=--openssl-legacy-provider node "$S3RVER_JS" -d "$W/s3data" -a 127.0.0.1 -p "$port" \
	--silent >"$W/s3rver.log" 2>&1 &
s3pid=$!
EP=http://127.0.0.1:$port
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
S3CURL=(curl -sS --fail --aws-sigv4 "aws:amz:us-east-1:s3" --user S3RVER:S3RVER
	-H "x-amz-content-sha256: UNSIGNED-PAYLOAD")
for _ in $(seq 1 200); do
	curl -s -o /dev/null "$EP/" && break
	sleep 0.1
done
"${S3CURL[@]}" -X PUT "$EP/$BUCKET" >/dev/null

# ---- cluster (without a copytool of its own) and our copytool
eval "$(env -u AWS_ENDPOINT_URL deploy/weir-local up --dir "$DIR" --oss "${OSS:-2}" \
	--ost-per-oss "${OST_PER_OSS:-2}" 2>/dev/null)"
export WEIR_MDS
AWS_ENDPOINT_URL=$EP "$BUILD/bin/weir-hsmd" --mds "$WEIR_MDS" --threads "$THREADS" \
	--log "$W/hsmd.log" >>"$W/hsmd.log" 2>&1 &
hsmdpid=$!
export AWS_ENDPOINT_URL=$EP
"$WEIR" mkdir -p /hsmb
"$WEIR" setstripe -c $((${OSS:-2} * ${OST_PER_OSS:-2})) -S 1M /hsmb
"$WEIR" dra create /hsmb "s3://$BUCKET/weir" >/dev/null
echo "hsm bench: $LABEL, $THREADS copytool workers and curl streams; s3rver $EP;" \
	"cluster $DIR; copytool log $W/hsmd.log"

# ---- source data: one random file, written NR times
mkdir -p "$W/src" "$W/back"
head -c "$SIZE" /dev/urandom >"$W/src/data"
files=()
for i in $(seq 0 $((NR - 1))); do
	files+=("/hsmb/f$i")
done
for f in "${files[@]}"; do
	"$WEIR" put "$W/src/data" "$f"
done
BYTES=$((NR * SIZE))

# ---- S3 reference: curl, THREADS streams
t0=$(now)
seq 0 $((NR - 1)) | xargs -P "$THREADS" -I{} "${S3CURL[@]}" -T "$W/src/data" \
	"$EP/$BUCKET/curl/f{}" -o /dev/null
t1=$(now)
curl_put=$(mbps "$BYTES" "$t0" "$t1")
t0=$(now)
seq 0 $((NR - 1)) | xargs -P "$THREADS" -I{} "${S3CURL[@]}" "$EP/$BUCKET/curl/f{}" -o /dev/null
t1=$(now)
curl_get=$(mbps "$BYTES" "$t0" "$t1")

# ---- archive
t0=$(now)
"$WEIR" hsm archive "${files[@]}" 2>"$W/archive.out" || { cat "$W/archive.out" >&2; exit 1; }
t1=$(now)
archive=$(mbps "$BYTES" "$t0" "$t1")

check_one() { # $1: what; compare /hsmb/f0 with the source
	"$WEIR" get "/hsmb/f0" "$W/back/f0"
	cmp -s "$W/src/data" "$W/back/f0" || { echo "hsm bench: $1: /hsmb/f0 differs from its source" >&2; exit 1; }
	rm -f "$W/back/f0"
}

# ---- restore (prefetch)
"$WEIR" hsm release "${files[@]}"
sleep 2 # let the MDS destroy the released objects first: restores wait for that
t0=$(now)
"$WEIR" hsm restore "${files[@]}" 2>"$W/restore.out" || { cat "$W/restore.out" >&2; exit 1; }
t1=$(now)
restore=$(mbps "$BYTES" "$t0" "$t1")
check_one restore

# ---- restore on first read
"$WEIR" hsm release "${files[@]}"
sleep 2
t0=$(now)
printf '%s\n' "${files[@]}" | xargs -P "$THREADS" -I{} sh -c '"$0" cat "$1" >/dev/null' "$WEIR" {}
t1=$(now)
readrestore=$(mbps "$BYTES" "$t0" "$t1")
check_one read-restore

printf '%-40s %10s MB/s\n' "S3 curl PUT $LABEL ${THREADS} streams" "$curl_put" \
	"S3 curl GET $LABEL ${THREADS} streams" "$curl_get"
printf '%-40s %10s MB/s  (%s of curl PUT)\n' "HSM archive $LABEL" "$archive" \
	"$(ratio "$archive" "$curl_put")"
printf '%-40s %10s MB/s  (%s of curl GET)\n' "HSM restore $LABEL" "$restore" \
	"$(ratio "$restore" "$curl_get")" "HSM restore on read $LABEL" "$readrestore" \
	"$(ratio "$readrestore" "$curl_get")"

# ---- results.json
entry() { # name value reference reference_value
	jq -n --arg n "$1" --argjson v "$2" --arg r "$3" --argjson rv "$4" \
		'{name: $n, unit: "MB/s", value: $v, reference: $r, reference_value: $rv,
		  ratio: (if $rv > 0 then (($v / $rv) * 10000 | round) / 10000 else 0 end),
		  min: $v, max: $v, runs: 1}'
}
new=$(jq -s . <(entry "S3 curl PUT $LABEL" "$curl_put" "-" 0) \
	<(entry "S3 curl GET $LABEL" "$curl_get" "-" 0) \
	<(entry "HSM archive $LABEL" "$archive" "curl PUT $THREADS streams" "$curl_put") \
	<(entry "HSM restore $LABEL" "$restore" "curl GET $THREADS streams" "$curl_get") \
	<(entry "HSM restore on read $LABEL" "$readrestore" "curl GET $THREADS streams" "$curl_get"))
if [ "${FRESH:-0}" = 1 ] || [ ! -s "$JSON" ] || ! jq -e .results "$JSON" >/dev/null 2>&1; then
	jq -n --argjson q "$([ "$QUICK" = 1 ] && echo true || echo false)" --argjson r "$new" \
		'{quick: $q, results: $r}' >"$JSON.tmp"
else
	jq --argjson r "$new" '.results = ([.results[] | select(.name | test("^(S3 curl|HSM) ") | not)] + $r)' \
		"$JSON" >"$JSON.tmp"
fi
# one result per line, "key": value, as weir-bench writes it (W6's --ref-json reads that)
jq -r '"{\n  \"quick\": \(.quick),\n  \"results\": [\n" +
	([.results[] | "    {" + ([to_entries[] | "\(.key | tojson): \(.value | tojson)"] |
	join(", ")) + "}"] | join(",\n")) + "\n  ]\n}"' "$JSON.tmp" >"$JSON"
rm -f "$JSON.tmp"
echo "hsm results: $JSON"
