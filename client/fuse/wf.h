/*
 * client/fuse/wf.h - weir-fuse internals: the FUSE low-level daemon that
 * serves a Weir filesystem through /dev/fuse, over libweir's FID-based calls.
 *
 * Threads: libfuse's worker threads (fuse_session_loop_mt) run every
 * operation; each sets the caller's credentials (weir_fid_cred_set) and
 * calls libweir, whose calls read their own replies (net/rpc.c). Nothing
 * else runs. State shared between workers: the node table (wn_lock, a leaf
 * lock: no libweir call is made under it) and the read-only configuration.
 *
 * Permissions: by default the kernel checks them (`default_permissions`),
 * on attributes it fetches with a GETATTR per directory walked and per
 * open, since with the default timeouts of 0 it caches none; the MDS checks
 * every call again with the caller's uid, gid and groups. With
 * `-o permissions=mds` (only with timeouts of 0, where the kernel sends a
 * LOOKUP for every path component, so the MDS sees every step) the mount
 * goes without `default_permissions` and those GETATTRs: the MDS's checks
 * are the checks, and the few the VFS makes that no MDS call covers are made
 * here on fresh attributes: access(2) and chdir (wf_access), truncate by
 * path. (An exec's open, with FMODE_EXEC, is WEIR_O_EXEC: the MDS checks
 * execute instead of read; opendir is an MDS open, which checks read.) One
 * difference remains
 * (README): the kernel resolves "." and ".." itself, so "dir/." and
 * "dir/.." pass through a directory without search permission.
 */
#ifndef WEIR_FUSE_WF_H
#define WEIR_FUSE_WF_H

#define FUSE_USE_VERSION 312

#include <fuse_lowlevel.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <weir/weir.h>

/** Largest read or write the kernel sends us (bytes): 1 MiB. */
#define WF_MAX_IO (1024 * 1024)

/** -o soft: the recovery limit (seconds) unless recovery_timeout= is given. */
#define WF_SOFT_RECOVERY_S 30

/** Options (the -o list). */
struct wf_conf {
	char *co_mds;		    /* mds=HOST:PORT, else $WEIR_MDS */
	char *co_key_file;	    /* key_file=FILE, else $WEIR_KEY_FILE, else the default */
	int co_insecure;	    /* insecure given */
	int co_direct_io;	    /* direct_io: no page cache for file data */
	int co_writeback;	    /* writeback_cache: the kernel buffers writes */
	double co_attr_timeout;	    /* seconds the kernel caches attributes; default 0 */
	double co_entry_timeout;    /* seconds the kernel caches names; default 0 */
	double co_negative_timeout; /* seconds the kernel caches "no such name"; default 0 */
	int co_readdirplus;	    /* 1 (default): attributes with directory listings */
	unsigned co_max_threads;    /* worker threads; default 16 */
	char *co_readahead_str;	    /* readahead=SIZE as given */
	uint64_t co_readahead;	    /* the kernel's readahead (bytes); default WF_READAHEAD */
	int co_default_perms;	    /* -o default_permissions given */
	int co_mds_perms;	    /* -o permissions=mds given */
	char *co_perms_bad;	    /* the value of any -o permissions= (checked) */
	char *co_fsname;	    /* fsname=NAME, else "weir:" co_mds */
	char *co_subtype;	    /* subtype=NAME, else "weir" */
	int co_overmount;	    /* overmount: mount on a mount point too */
	int co_recovery_timeout;    /* recovery_timeout=SECS; -1 not given, 0 forever */
	int co_soft;		    /* soft: 1, hard: 0, neither: -1 */
	int co_local_locks;	    /* local_locks: fcntl locks stay in the kernel (this mount only) */
	bool co_kperm;		    /* the kernel checks permissions (see the top) */
};

/**
 * Default readahead (bytes): 4 requests of WF_MAX_IO in flight, so a
 * sequential reader keeps 4 OSTs busy (one 1 MiB stripe each with the usual
 * layout) instead of waiting on one at a time.
 */
#define WF_READAHEAD (4 * WF_MAX_IO)

/** One inode the kernel knows: nodeid <-> FID, with the kernel's lookup count. */
struct wf_node {
	weir_fid_t wn_fid;
	uint64_t wn_nlookup;	      /* lookups the kernel has not forgotten */
	_Atomic uint64_t wn_nocap_ns; /* monotonic ns until which "no security.capability"
				       * is taken as known (see wf_getxattr); 0: ask */
	uint64_t wn_fresh_ns;	      /* monotonic ns of a reply that gave the kernel this
				       * node, new to it, with an attribute timeout (under
				       * wf_lock; see wf_md_inval); 0: none */
	struct wf_node *wn_hnext;     /* hash chain */
};

/** The daemon. */
struct wf {
	weir_fs_t *wf_fs;
	weir_fid_t wf_root; /* FUSE_ROOT_ID */
	struct wf_conf wf_conf;
	pthread_mutex_t wf_lock;  /* the node table */
	struct wf_node **wf_hash; /* wf_nr_buckets chains */
	size_t wf_nr_buckets;
	size_t wf_nr_nodes;
	char wf_mnt[PATH_MAX];	/* the mount point */
	struct fuse_session *_Atomic wf_se; /* for the kernel notifications (metadata callbacks) */
	atomic_bool wf_ra_done; /* wf_readahead_raise() was called */
	struct wf_knames *wf_kn; /* the names the kernel keeps (knames.c) */
};

/* ---- nodes.c */

/** Set up the node table. \return 0 or -ENOMEM. */
int wf_nodes_init(struct wf *wf);
/** Free every node (at unmount). */
void wf_nodes_fini(struct wf *wf);
/**
 * The nodeid of \a fid, adding one lookup (FUSE_ROOT_ID for the root, which
 * is never counted). \a fresh: a reply about to go gives the kernel the
 * node with an attribute timeout, and the kernel may make a new inode from
 * it: note when (wn_fresh_ns, wf_node_fresh()). \return the nodeid, or 0
 * when out of memory.
 */
fuse_ino_t wf_node_get(struct wf *wf, const weir_fid_t *fid, bool fresh);
/** The nodeid the kernel knows \a fid by, without taking a lookup; 0: none. */
fuse_ino_t wf_node_find(struct wf *wf, const weir_fid_t *fid);
/** Drop \a nlookup lookups of \a ino; the node goes at zero. */
void wf_node_forget(struct wf *wf, fuse_ino_t ino, uint64_t nlookup);
/** The FID of nodeid \a ino (the kernel guarantees it is alive). */
void wf_node_fid(struct wf *wf, fuse_ino_t ino, weir_fid_t *fid);
/** The node of \a ino, or NULL for the root (which has none). */
struct wf_node *wf_node_of(fuse_ino_t ino);
/**
 * When a reply last gave the kernel \a fid's node new (wf_node_get() with fresh),
 * if its nodeid is still \a ino; 0 otherwise (forgotten, or never).
 */
uint64_t wf_node_fresh(struct wf *wf, const weir_fid_t *fid, fuse_ino_t ino);

/* ---- knames.c: the names the kernel keeps under the MDS's leases */

/** Set up the tables and the invalidation thread. \return 0, -ENOMEM or -EAGAIN. */
int wf_knames_init(struct wf *wf);
/** Stop the thread (after what is queued) and free the tables. */
void wf_knames_fini(struct wf *wf);
/**
 * The entry timeout (seconds; 0: none) for the kernel's name \a name of
 * \a dir, answered \a fid (NULL: "no such name"): positive only while
 * libweir's cache holds the same answer under the directory's lease; the
 * name is then recorded, so a callback of the directory reaches it. Call
 * just before the reply. Thread safety: any.
 */
double wf_kname_tmo(struct wf *wf, const weir_fid_t *dir, const char *name, const weir_fid_t *fid);
/**
 * This mount renamed \a from of \a from_dir (nodeid \a from_parent) to \a to
 * of \a to_dir (\a to_parent), and the other way with \a exchange: the
 * kernel moved the name with its timeout, the record follows it; into a
 * directory this mount holds no LOOKUP lease on (no callback would come),
 * the kernel is told to forget the name once the rename is replied. Call
 * before the reply. Thread safety: any.
 */
void wf_kname_moved(struct wf *wf, const weir_fid_t *from_dir, fuse_ino_t from_parent,
		    const char *from, const weir_fid_t *to_dir, fuse_ino_t to_parent,
		    const char *to, bool exchange);
/**
 * A callback of \a dir's names: the kernel drops every name recorded
 * under it (\a parent: its nodeid; 0: the kernel does not know the
 * directory, the records just go). Waits for the kernel at most a
 * moment (knames.c). Runs on libweir's callback thread.
 */
void wf_knames_inval(struct wf *wf, const weir_fid_t *dir, fuse_ino_t parent);

/* ---- main.c */

/**
 * Set the kernel's readahead of the mount at \a mnt to \a bytes (rounded to
 * KiB), so buffered reads come in WF_MAX_IO requests, several in flight: the
 * connection's backing device is "0:MINOR" in /sys/class/bdi, its numbers
 * from /proc/self/mountinfo. Call after FUSE_INIT was answered (the kernel
 * sets the readahead from it) -- at the first request -- and as root;
 * otherwise the kernel's default (128 KiB) stays.
 */
void wf_readahead_raise(const char *mnt, uint64_t bytes);

/* ---- ops.c */

/** The low-level operations table. */
extern const struct fuse_lowlevel_ops wf_ops;

/**
 * libweir's metadata callback hook (weir_md_inval_set): the kernel forgets
 * \a fid's attributes and cached pages. Runs on libweir's callback thread.
 */
void wf_md_inval(void *arg, const weir_fid_t *fid, unsigned bits);

#endif /* WEIR_FUSE_WF_H */
