# tests/lib/netns.sh - the shell twin of tests/lib/netns.h: several hosts on
# this machine, made of network namespaces joined by veth pairs to a bridge,
# for shell tests (source it; bash).
#
#   netns_require          exit 77 with the reason when this machine cannot
#                          (not root, no iproute2, no namespaces, veth or bridge)
#   netns_up [HOST]...     make the switch namespace (bridge br0) and one
#                          namespace per host (default: mds oss0 oss1 client0
#                          client1 outsider) with loopback up and eth0 at
#                          10.213.0.11, .12, ... /24 in that order; nothing is
#                          made in the machine's own namespace
#   netns_ip HOST          the host's address
#   netns_name HOST        its namespace (/run/netns/NAME; `ip -n NAME ...`)
#   netns_exec HOST CMD... run CMD on the host (nsenter --net: unlike
#                          `ip netns exec`, it keeps the mount namespace, so a
#                          weir-fuse mount made on a host is seen by the test)
#   netns_spawn HOST LOG CMD...
#                          start CMD on the host in the background, stdout and
#                          stderr to LOG; its pid is in $NETNS_PID
#   netns_down             kill what runs on the hosts (SIGTERM, SIGKILL after
#                          10 s), delete the namespaces; status 1 (and a message)
#                          when one of them is still there
#
# Names are weirt-<pid of the shell>-sh-<host>, the scheme of netns.h, so
# the C harness and this file sweep each other's leftovers: netns_up first
# deletes the namespaces of test processes that are gone. Making and deleting
# namespaces hold flock(/tmp/weir-netns.lock), as netns.c does. netns_up
# sets an EXIT trap calling netns_down when the test has none; a test with
# its own cleanup calls netns_down there.

NETNS_PREFIX=10.213.0
NETNS_TAG="weirt-$$-sh"
NETNS_HOSTS=()
NETNS_PIDS=()
NETNS_LOCK=/tmp/weir-netns.lock
NETNS_IP=$(command -v ip || echo /usr/sbin/ip)

netns_require() {
	local why=""
	if [ "$(id -u)" -ne 0 ]; then
		why="not root: network namespaces and veth links need CAP_SYS_ADMIN and CAP_NET_ADMIN"
	elif [ ! -x "$NETNS_IP" ]; then
		why="iproute2's ip is not installed"
	elif ! command -v unshare >/dev/null || ! command -v flock >/dev/null ||
		! command -v nsenter >/dev/null; then
		why="util-linux's unshare, nsenter or flock is missing"
	else
		why=$(unshare -n sh -c "'$NETNS_IP' link add wprobe0 type veth peer name wprobe1 &&
			'$NETNS_IP' link add wprobebr type bridge" 2>&1) && why=""
		[ -z "$why" ] || why="cannot make a network namespace with veth and bridge links: $why"
	fi
	if [ -n "$why" ]; then
		echo "SKIP: needs network namespaces: $why"
		exit 77
	fi
}

netns_name() { echo "$NETNS_TAG-$1"; }

netns_ip() {
	local i
	for i in "${!NETNS_HOSTS[@]}"; do
		[ "${NETNS_HOSTS[$i]}" = "$1" ] && { echo "$NETNS_PREFIX.$((11 + i))"; return 0; }
	done
	echo "netns_ip: no host $1" >&2
	return 1
}

netns_exec() {
	local h=$1
	shift
	nsenter --net="/run/netns/$(netns_name "$h")" -- "$@"
}

netns_spawn() {
	local h=$1 log=$2
	shift 2
	nsenter --net="/run/netns/$(netns_name "$h")" -- "$@" >>"$log" 2>&1 </dev/null &
	NETNS_PID=$!
	NETNS_PIDS+=("$NETNS_PID")
}

# Delete the namespaces of test processes (C or shell) that are gone.
_netns_sweep() {
	local n pid
	for n in $("$NETNS_IP" netns list | awk '{print $1}'); do
		case "$n" in weirt-*-*) ;; *) continue ;; esac
		pid=${n#weirt-}
		pid=${pid%%-*}
		case "$pid" in '' | *[!0-9]*) continue ;; esac
		kill -0 "$pid" 2>/dev/null && continue
		echo "netns: deleting namespace $n, left by dead test pid $pid" >&2
		"$NETNS_IP" netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null
		"$NETNS_IP" netns del "$n" 2>/dev/null
	done
}

netns_up() {
	local hosts=("$@") h i sw
	[ ${#hosts[@]} -gt 0 ] || hosts=(mds oss0 oss1 client0 client1 outsider)
	NETNS_HOSTS=("${hosts[@]}")
	sw=$(netns_name sw)
	if [ -z "$(trap -p EXIT)" ]; then
		trap 'netns_down' EXIT
		trap 'exit 143' TERM
		trap 'exit 130' INT
		trap 'exit 129' HUP
	fi
	(
		flock 9
		_netns_sweep
		"$NETNS_IP" netns add "$sw" &&
			"$NETNS_IP" -n "$sw" link add br0 type bridge &&
			"$NETNS_IP" -n "$sw" link set br0 up || exit 1
		for i in "${!hosts[@]}"; do
			h=${hosts[$i]}
			"$NETNS_IP" netns add "$(netns_name "$h")" &&
				"$NETNS_IP" -n "$(netns_name "$h")" link set lo up &&
				"$NETNS_IP" -n "$sw" link add "v-$h" type veth peer name eth0 \
					netns "$(netns_name "$h")" &&
				"$NETNS_IP" -n "$sw" link set "v-$h" master br0 up &&
				"$NETNS_IP" -n "$(netns_name "$h")" addr add "$NETNS_PREFIX.$((11 + i))/24" dev eth0 &&
				"$NETNS_IP" -n "$(netns_name "$h")" link set eth0 up || exit 1
		done
	) 9>>"$NETNS_LOCK" || { echo "netns_up: could not make host namespaces" >&2; return 1; }
}

netns_down() {
	local p n i left=0
	for p in "${NETNS_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for i in $(seq 100); do
		n=0
		for p in "${NETNS_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && n=1; done
		[ $n -eq 0 ] && break
		sleep 0.1
	done
	for p in "${NETNS_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	NETNS_PIDS=()
	(
		flock 9
		for n in $("$NETNS_IP" netns list | awk '{print $1}' | grep "^$NETNS_TAG-"); do
			"$NETNS_IP" netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null
			"$NETNS_IP" netns del "$n"
		done
	) 9>>"$NETNS_LOCK"
	for n in $("$NETNS_IP" netns list | awk '{print $1}' | grep "^$NETNS_TAG-"); do
		echo "netns_down: namespace $n is left" >&2
		left=1
	done
	return $left
}
