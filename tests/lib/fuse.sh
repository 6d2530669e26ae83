# tests/lib/fuse.sh - weir-fuse mounts for shell tests (source it; bash).
#
#   fuse_mount MNT ERRFILE OPTIONS
#                          start $BIN/weir-fuse on MNT in the foreground (-f
#                          -o OPTIONS, stderr to ERRFILE), in the background:
#                          its pid in $FUSE_MOUNT_PID, for the test's cleanup
#                          to stop; wait up to 10 s for the mount. Returns 0
#                          once MNT is mounted, 1 if it is not by then.

fuse_mount() {
	local mnt=$1 err=$2 opts=$3 i
	"$BIN/weir-fuse" "$mnt" -f -o "$opts" 2>"$err" &
	FUSE_MOUNT_PID=$!
	for ((i = 0; i < 100; i++)); do
		grep -q " $mnt fuse.weir " /proc/mounts && return 0
		sleep 0.1
	done
	return 1
}
