#!/usr/bin/env bash
# tests/bench/peer-moosefs.sh - `make bench PEER=moosefs`: W6 (W1 and W4
# through POSIX calls, weir-bench --posix-dir) on a real peer, MooseFS from
# Debian's packages, in the same `make bench` as Weir's FUSE figures.
# Installs moosefs-master, moosefs-chunkserver and moosefs-client with apt-get
# when they are missing; runs mfsmaster and two mfschunkservers (one copy of
# each chunk: goal MOOSEFS_GOAL, default 1, as Weir keeps one; trash time 0)
# in the network namespace weir-mfs, reached over a veth pair with private
# addresses (MooseFS refuses 127.x master addresses), config and data under
# BUILD/bench/moosefs; mounts it from the root namespace with mfsmount and
# runs weir-bench --posix-dir MNT/w6-moosefs --label moosefs --json
# BUILD/bench/results-moosefs.json with the arguments given (run.sh passes the
# W6 ones: --ref-json, --quick, --runs). Unmounts, stops the daemons and
# deletes the namespace and veth at exit, and first clears what an earlier
# run left. Never fails the bench: prints "W6 moosefs: skipped (reason)".
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # repository root; BUILD, OUT
DIR=$OUT/moosefs
MNT=$DIR/mnt
LOG=$DIR/setup.log
NS=weir-mfs
VETH=weir-mfs0 # root side; weir-mfs1 in the namespace
HOST_IP=10.231.7.1
NS_IP=10.231.7.2
rm -f "$OUT/results-moosefs.json"

skip() {
	echo "W6 moosefs: skipped ($*)"
	exit 0
}

# Run "$@" in the namespace, output to the log; false on failure.
nsrun() {
	ip netns exec "$NS" "$@" >>"$LOG" 2>&1
}

cleanup() {
	if grep -qs " $MNT " /proc/mounts; then
		umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
	fi
	if ip netns list 2>/dev/null | grep -qw "^$NS"; then
		local cfg pid
		for cfg in cs2 cs1 master; do
			[ -f "$DIR/$cfg.cfg" ] || continue
			if [ "$cfg" = master ]; then
				nsrun timeout 30 mfsmaster -c "$DIR/$cfg.cfg" stop || true
			else
				nsrun timeout 30 mfschunkserver -c "$DIR/$cfg.cfg" stop || true
			fi
		done
		# whatever is left in the namespace is ours (an earlier run's daemons)
		for pid in $(ip netns pids "$NS" 2>/dev/null); do
			kill -9 "$pid" 2>/dev/null || true
		done
		ip netns del "$NS" 2>/dev/null || true
	fi
	ip link del "$VETH" 2>/dev/null || true
	rm -rf "$DIR/cs1/hdd" "$DIR/cs2/hdd" # chunks (the logs and configs stay)
}

command -v ip >/dev/null || skip "no ip command (iproute2)"
[ "$(id -u)" = 0 ] || skip "needs root: network namespace, mount"
mkdir -p "$DIR"
: >"$LOG"
cleanup # an earlier run's mount, daemons, namespace and veth
trap cleanup EXIT

if ! command -v mfsmaster >/dev/null || ! command -v mfschunkserver >/dev/null ||
	! command -v mfsmount >/dev/null; then
	echo "W6 moosefs: installing moosefs-master, moosefs-chunkserver, moosefs-client (apt-get)"
	pkgs=(moosefs-master moosefs-chunkserver moosefs-client)
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >>"$LOG" 2>&1; then
		apt-get update -qq >>"$LOG" 2>&1 || true
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >>"$LOG" 2>&1 ||
			skip "apt-get install ${pkgs[*]} failed: $(tail -n 1 "$LOG")"
	fi
fi

# ---- the namespace and its link
rm -rf "$DIR/master" "$DIR/cs1" "$DIR/cs2" "$MNT"
ip netns add "$NS" >>"$LOG" 2>&1 || skip "ip netns add $NS failed, see $LOG"
{
	ip link add "$VETH" type veth peer name weir-mfs1 &&
		ip link set weir-mfs1 netns "$NS" &&
		ip addr add "$HOST_IP/24" dev "$VETH" &&
		ip link set "$VETH" up &&
		ip netns exec "$NS" ip addr add "$NS_IP/24" dev weir-mfs1 &&
		ip netns exec "$NS" ip link set weir-mfs1 up &&
		ip netns exec "$NS" ip link set lo up
} >>"$LOG" 2>&1 || skip "veth $VETH to $NS failed, see $LOG"

# ---- master and two chunkservers, in the namespace
mkdir -p "$DIR/master" "$DIR/cs1/hdd" "$DIR/cs2/hdd" "$MNT"
cp /var/lib/mfs/metadata.mfs.empty "$DIR/master/metadata.mfs" 2>>"$LOG" ||
	skip "no /var/lib/mfs/metadata.mfs.empty"
echo "*	/	rw,alldirs,admin,maproot=0:0" >"$DIR/mfsexports.cfg"
: >"$DIR/mfstopology.cfg"
cat >"$DIR/master.cfg" <<EOF
WORKING_USER = root
WORKING_GROUP = root
SYSLOG_IDENT = weir-mfsmaster
NICE_LEVEL = 0
DATA_PATH = $DIR/master
EXPORTS_FILENAME = $DIR/mfsexports.cfg
TOPOLOGY_FILENAME = $DIR/mfstopology.cfg
MATOML_LISTEN_HOST = $NS_IP
MATOCS_LISTEN_HOST = $NS_IP
MATOCL_LISTEN_HOST = $NS_IP
EOF
for i in 1 2; do
	echo "$DIR/cs$i/hdd" >"$DIR/cs$i/mfshdd.cfg"
	cat >"$DIR/cs$i.cfg" <<EOF
WORKING_USER = root
WORKING_GROUP = root
SYSLOG_IDENT = weir-mfscs$i
NICE_LEVEL = 0
DATA_PATH = $DIR/cs$i
HDD_CONF_FILENAME = $DIR/cs$i/mfshdd.cfg
HDD_LEAVE_SPACE_DEFAULT = 64MiB
BIND_HOST = $NS_IP
MASTER_HOST = $NS_IP
CSSERV_LISTEN_HOST = $NS_IP
CSSERV_LISTEN_PORT = $((9412 + 10 * i))
EOF
done
nsrun mfsmaster -c "$DIR/master.cfg" start || skip "mfsmaster did not start, see $LOG"
for i in 1 2; do
	nsrun mfschunkserver -c "$DIR/cs$i.cfg" start || skip "mfschunkserver $i did not start, see $LOG"
done
# both chunkservers registered: two connections to the master's port 9420
for ((t = 0; t < 60; t++)); do
	n=$(ip netns exec "$NS" ss -Htn state established '( sport = :9420 )' 2>/dev/null | wc -l)
	[ "$n" -ge 2 ] && break
	sleep 0.5
done
[ "$n" -ge 2 ] || skip "$n of 2 chunkservers registered in 30 s, see $LOG"

# ---- the client, from the root namespace
mfsmount "$MNT" -H "$NS_IP" -P 9421 >>"$LOG" 2>&1 || skip "mfsmount $NS_IP failed: $(tail -n 1 "$LOG")"
mkdir -p "$MNT/w6-moosefs"
mfssetgoal -r "${MOOSEFS_GOAL:-1}" "$MNT/w6-moosefs" >>"$LOG" 2>&1 || true
mfssettrashtime -r 0 "$MNT/w6-moosefs" >>"$LOG" 2>&1 || true
echo "W6 moosefs: MooseFS $(mfsmaster -v 2>/dev/null | sed -n 's/^version: *\([^ ;]*\).*/\1/Ip' | head -1):" \
	"master and 2 chunkservers in netns $NS ($NS_IP), mfsmount from the root namespace," \
	"goal ${MOOSEFS_GOAL:-1}, data under $DIR"
"$BUILD/bin/weir-bench" --posix-dir "$MNT/w6-moosefs" --label moosefs \
	--json "$OUT/results-moosefs.json" "$@" || echo "W6 moosefs: failed"
rm -rf "$MNT/w6-moosefs"
