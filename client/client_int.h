/*
 * client/client_int.h - libweir internals shared by the client/ sources.
 *
 * DESIGN. A struct weir_fs holds one net_conn to the MDS and one net_conn
 * per distinct OSS address (opened lazily on first use, shared by every OST
 * that OSS serves). The cluster map (OST index -> OSS) is refetched from the
 * MDS when a layout names an OST index the map does not know. Nothing here
 * starts threads of its own (the lease thread aside): the calling thread
 * starts its RPCs, waits for them (and, waiting, reads replies: net/rpc.c)
 * and post-processes them.
 *
 * Locks (order: fs_lock -> os_lock; f_pos_lock is taken before either):
 *   fs_lock    the cluster map (fs_osts), the OSS list, the open file and
 *              directory lists;
 *   os_lock    lazy connect of one OSS;
 *   f_pos_lock the file position of one handle (weir_read/weir_write/lseek).
 * Internal non-static functions are named wc_* so libweir.so exports only
 * weir_* (client/libweir.map).
 */
#ifndef WEIR_CLIENT_INT_H
#define WEIR_CLIENT_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <weir/weir.h>

#include "common/fid.h"
#include "common/layout.h"
#include "net/net.h"
#include "weir.pb-c.h"

#include "mdc.h"

/** Protocol version sent in MDS_CONNECT. */
#define WC_PROTO_VERSION 1
/** st_dev reported for every Weir file. */
#define WC_ST_DEV 0x57e1
/** Longest path / name accepted (bytes, without the NUL). */
#define WC_PATH_MAX 4095
#define WC_NAME_MAX 255
/** Most supplementary groups sent in a Cred (the MDS looks at 64). */
#define WC_MAX_GROUPS 64
/** Entries asked per MDS_READDIR page. */
#define WC_READDIR_PAGE 1024
/** Object chunks (iovecs) per data RPC. */
#define WC_RPC_MAX_IOV (NET_MAX_BULK_IOV - 1)

/** A server target as recovery names it (client/recover.c). */
struct wc_target {
	char t_name[16];             /* "MDT0000", "OST0003" */
	char t_addr[64];             /* "HOST:PORT" */
	_Atomic uint64_t t_down_ns;  /* weir_now_ns() when it went away; 0: up */
	_Atomic uint64_t t_up_ns;    /* weir_now_ns() when it was last seen back */
};

/** A call's wait for recovery (wc_recover_wait); zero before the first. */
struct wc_wait {
	uint64_t w_start_ns;         /* the call's first transport failure */
	uint32_t w_delay_ms;         /* the last backoff */
};

/** One OSS: its address and the connection to it (opened on first use). */
struct wc_oss {
	char os_addr[64];            /* "HOST:PORT" */
	pthread_mutex_t os_lock;     /* guards os_conn creation */
	struct net_conn *os_conn;    /* NULL until first used */
	_Atomic uint64_t os_ping_ok_ns; /* monotonic: its last answered create check (file.c) */
	struct wc_target os_tgt;     /* named after the first OST seen on it */
	struct wc_oss *os_next;
};

/** One OST as the cluster map describes it. */
struct wc_ost {
	uint32_t ost_index;
	int ost_state;              /* Weir__TargetState */
	struct wc_oss *ost_oss;     /* never freed before umount */
};

struct wc_capa_tab;

/* ---- replay.c (the kept list; its functions are below) */

/** Most bytes of kept requests per mount before the client asks for a sync. */
#define WC_REPLAY_CAP_BYTES (64ULL << 20)

/** One kept request (replay.c). */
struct wc_kept {
	struct wc_kept *wk_next;
	uint64_t wk_transno;
	uint16_t wk_op;            /* weir.WireOp */
	bool wk_has_fid;           /* a create: the FID its reply gave */
	struct weir_fid wk_fid;
	struct weir_xid_hdr wk_xid; /* its replay prefix, as sent */
	uint32_t wk_gen;           /* rp_gen when kept: an MDS restart sends one generation */
	size_t wk_len;             /* bytes of the request in wk_body */
	size_t wk_lo_len;          /* a create's layout (packed Weir.Layout) after them; 0: none */
	uint8_t wk_body[];         /* the packed request message, then the layout */
};

/**
 * Copies of MDS requests applied (reply transno) and not yet synced (the
 * reply's last_committed below it), in transno order; nothing replays
 * them yet (client/replay.c).
 */
struct wc_replay {
	pthread_mutex_t rp_lock;           /* a leaf */
	struct wc_kept *rp_head, *rp_tail; /* in transno order */
	uint64_t rp_last_committed;        /* newest last_committed seen */
	uint64_t rp_bytes;                 /* bytes held by the list */
	uint64_t rp_cap_bytes;             /* over it: ask for a sync */
	uint64_t rp_nr;                    /* requests kept now */
	uint64_t rp_peak;                  /* most kept at once */
	uint64_t rp_nr_total;              /* requests ever kept */
	uint64_t rp_syncs;                 /* syncs asked for by the cap */
	uint32_t rp_gen;                   /* bumped when a restart's replay takes the list */
	uint64_t rp_resent;                /* requests sent again after MDS restarts */
	uint64_t rp_lost;                  /* kept requests dropped unreplayed (evicted) */
};

/**
 * A connection to MDT k > 0 (client/mdt.c, docs/dne.md step 2): made the
 * first time a call reaches that MDT, kept until umount.
 */
struct wc_mdt {
	uint32_t md_index;
	char md_addr[64];              /* "HOST:PORT" of its MDS */
	struct net_conn *md_conn;
	struct wc_target md_tgt;       /* recovery's record: "MDT000k" */
	pthread_mutex_t md_sess_lock;  /* md_session; held across its MDS_CONNECT */
	uint64_t md_session;           /* this mount's session on it; 0: none yet */
	atomic_uint md_epoch;          /* +1 each time that session is lost: handles opened on
					* the MDT before are stale (-EIO) */
};

struct weir_fs {
	struct net_conn *fs_mds;
	struct wc_capa_tab *fs_capa;  /* OST capabilities held (capa.c) */
	uint32_t fs_capa_ttl_s;       /* their lifetime (ConnectRep); 0: the MDS issues none */
	struct net_auth *fs_auth;  /* this mount's keys (every connection's handshake) */
	char fs_mds_addr[64];      /* "HOST:PORT" */
	struct weir_fid fs_root;
	char fs_name[32];
	uint32_t fs_rpc_timeout_ms;
	uint32_t fs_rpc_max_bytes;   /* object bytes per data RPC */
	uint32_t fs_max_inflight;    /* data RPCs in flight per call */
	uint32_t fs_uid;
	uint32_t fs_gid;
	uint32_t fs_groups[WC_MAX_GROUPS];
	size_t fs_nr_groups;
	char fs_client_name[64];
	uint8_t fs_client_uuid[16];   /* random, made at mount: the MDS knows the mount by it */

	pthread_mutex_t fs_lock;
	struct wc_ost *fs_osts;      /* the cluster map, fs_nr_osts entries */
	size_t fs_nr_osts;
	uint64_t fs_map_gen;
	struct wc_oss *fs_oss;       /* every OSS ever seen */
	struct weir_file *fs_files;  /* open files */
	struct weir_dir *fs_dirs;    /* open directory streams */

	/* session, lease and locks (lease.c, lock.c) */
	pthread_mutex_t fs_sess_lock; /* the three below; held across a reconnect */
	uint64_t fs_session;          /* MDS session id (MDS_CONNECT) */
	uint64_t fs_boot_ns;          /* the MDS boot that session belongs to */
	uint32_t fs_lease_ms;         /* the MDS's lease time */
	atomic_uint fs_epoch;         /* +1 each time this mount is evicted */
	atomic_uint_fast64_t fs_lock_token; /* last lock request token */
	uint64_t fs_sess_replayed;    /* a session of a restarted MDS into which this mount
				       * replayed its opens and locks (under fs_sess_lock) */
	struct mds_lockmgr *fs_locks; /* the locks this mount holds, as the MDS granted them
				       * (lock.c), for the replay after an MDS restart */
	pthread_mutex_t fs_lease_lock; /* fs_lease_stop and its condition */
	pthread_cond_t fs_lease_cond;
	bool fs_lease_stop;
	bool fs_lease_running;
	bool fs_sess_closed;          /* umount sent MDS_DISCONNECT: no more reconnects
				       * (under fs_sess_lock) */
	pthread_t fs_lease_thread;

	/* recovery and replay (recover.c) */
	uint32_t fs_recovery_ms;      /* how long a call waits for a server; 0: forever */
	atomic_bool fs_umounting;     /* umount: calls no longer wait */
	struct wc_target fs_mdt;      /* MDT0000 */
	uint8_t fs_uuid[16];          /* this mount's replay identity */
	atomic_uint_fast64_t fs_xid;  /* the next request id */
	pthread_mutex_t fs_slot_lock; /* fs_slot_busy; a leaf */
	pthread_cond_t fs_slot_cond;
	uint64_t fs_slot_busy;        /* reply-cache slots in use, one bit each */
	struct wc_replay fs_replay;   /* requests kept for replay (replay.c) */

	/* metadata cache under MDS leases (mdl.c); NULL: none */
	uint32_t fs_mdl_max;          /* ConnectRep.mdl_max: leases the MDS lets a session hold */
	struct wc_mdl *fs_mdl;
	bool fs_md_paths;	      /* path lookups walk the cache (wmo_md_no_paths unset) */

	/* the other MDTs (mdt.c), under fs_lock */
	struct wc_mdt *fs_mdts[WEIR_MDT_MAX];   /* [0] unused (MDT0 is fs_mds); NULL: not yet */
	char fs_mdt_addr[WEIR_MDT_MAX][64];     /* from the cluster map; "": not known */
	atomic_bool fs_multi_mdt;               /* an MDT other than MDT0 is known: calls
						 * are routed from the name cache (mdc.c) */
};

/** A file's attributes as the MDS sent them. */
struct wc_attr {
	struct weir_fid a_fid;
	uint32_t a_mode;      /* st_mode */
	uint32_t a_uid;
	uint32_t a_gid;
	uint32_t a_nlink;
	uint64_t a_size;      /* bytes, last known to the MDS */
	uint64_t a_blocks;    /* 512-byte blocks */
	int64_t a_atime_ns;
	int64_t a_mtime_ns;
	int64_t a_ctime_ns;
	uint32_t a_flags;     /* Weir__AttrFlag bits (AF_RELEASED: HSM, data in S3; see hsm.c) */
	uint32_t a_blksize;
	uint64_t a_rdev;      /* character and block devices */
	uint64_t a_size_epoch; /* files open for writing: the truncate epoch (weir.proto Attr) */
};

struct weir_file {
	struct weir_fs *f_fs;
	struct weir_fid f_fid;
	uint64_t f_handle;           /* MDS open handle */
	int f_flags;                 /* O_* as opened */
	bool f_read;
	bool f_write;
	bool f_append;
	bool f_is_dir;
	struct weir_fid f_dir_parent; /* a directory: ".." as the open's reply told (zero: not) */
	bool f_created;              /* this open made the file: f_open_attr is its state then */
	struct wc_attr f_open_attr;  /* the open reply's attributes */
	struct weir_layout f_layout; /* lo_stripe_count 0 for directories */
	/* objects known to exist (Layout.objects at open) and written by this handle
	 * (reported at close and fsync): bit i, byte i/8, for stripe i */
	uint8_t f_objs_known[WEIR_LAYOUT_MAX_STRIPES / 8];
	_Atomic uint8_t f_objs_written[WEIR_LAYOUT_MAX_STRIPES / 8];
	pthread_mutex_t f_pos_lock;
	uint64_t f_pos;              /* bytes */
	unsigned f_epoch;            /* fs_epoch at open: stale (-EIO) once it differs */
	_Atomic int64_t f_mtime_ns;  /* wall clock of this handle's last data change; 0: none */
	atomic_bool f_kill_suid;     /* the first write must drop setuid/setgid (SA_KILL_SUID) */
	bool f_hsm;                  /* wc_hsm_open() (OF_HSM): no restore waits, no reports */
	atomic_bool f_released;      /* AF_RELEASED at open, not yet seen wholly restored */
	_Atomic uint64_t f_rel_size; /* bytes: the MDS size of the released file */
	_Atomic uint64_t f_size_hint; /* bytes: where the end of file probably is (the
					  size at open or at this handle's last size
					  lookup); UINT64_MAX: unknown. Only a hint:
					  weir_pread asks the MDS before trusting it */
	struct weir_file *f_prev, *f_next; /* fs_files */
};

/* A directory's names from the cache, in cookie order (wc_mdl_dir_snap()). */
struct wc_dsnap_ent {
	uint64_t se_cookie;	/* weir_name_cookie() of se_name */
	struct weir_fid se_fid;
	uint8_t se_type;	/* DT_* */
	const char *se_name;	/* in s_names */
};
struct wc_dsnap {
	struct wc_dsnap_ent *s_ents; /* NULL: no snapshot */
	char *s_names;
	size_t s_nr, s_idx;	     /* entries; the next one to return */
	uint64_t s_t0;		     /* the clock when it was taken */
};

struct weir_dir {
	struct weir_fs *d_fs;
	struct weir_fid d_fid;
	struct weir_fid d_parent;    /* for ".." */
	int d_dots;                  /* 0: "." next, 1: ".." next, 2: entries */
	struct wc_mdc_dirpage d_page; /* current page (dp_rep NULL: none) */
	size_t d_idx;                /* next entry in d_page */
	uint64_t d_cookie;           /* of the last entry returned */
	bool d_eof;                  /* the MDS said no more pages */
	bool d_plus;                 /* readdirplus pages (weir_dir_plus()) */
	bool d_read_ok;              /* the MDS let this stream read the directory (a page it
				      * sent, or weir_fdopendir()'s open): pages may come
				      * from the cache (d_snap) */
	struct wc_dsnap d_snap;      /* entries from the cache, after d_cookie */
	bool d_whole;                /* readdirplus pages from the start, in order: at the
				      * end the cache may know the directory completely */
	bool d_snap_refused;         /* the cache could not list it (a name without type or
				      * attributes): ask it again only after a seek */
	uint64_t d_whole_t0;         /* wc_mdl_stamp() before the first of them */
	uint32_t d_whole_drops;      /* wc_mdl_dir_drops() then */
	struct weir_dir *d_prev, *d_next; /* fs_dirs */
};

/** Per-object arguments and result of wc_obj_run(). */
struct wc_objop {
	uint64_t oo_size;     /* in: OST_TRUNCATE size; out (GETATTR, FALLOCATE): object size */
	uint64_t oo_if_size;  /* in: OST_TRUNCATE: nonzero = only shrink, only from this size */
	uint64_t oo_blocks;   /* out (GETATTR, FALLOCATE) */
	uint64_t oo_off;      /* in: OST_FALLOCATE, OST_SEEK object offset; out (SEEK, found) */
	uint64_t oo_len;      /* in: OST_FALLOCATE length, bytes */
	uint32_t oo_flags;    /* in: OST_FSYNC flags, OST_FALLOCATE FallocFlag bits, OST_SEEK whence */
	bool oo_skip;         /* in: no RPC for this object (its extent is empty) */
	bool oo_exists;       /* out (GETATTR, FALLOCATE, SEEK) */
	bool oo_found;        /* out (SEEK): oo_off holds the offset found */
	int oo_rc;            /* out: 0 or the raw RPC error */
};

/* ---- mount.c */

/**
 * Fill \a c with the calling thread's credentials if weir_fid_cred_set() set
 * them, else the mount's (groups point into \a fs or thread-local storage).
 */
void wc_cred_init(struct weir_fs *fs, Weir__Cred *c);

/* capa.c: OST capabilities */
/** A capability to attach to an object request, and the storage it points into. */
struct wc_capa_buf {
	Weir__Capa cb_capa;
	Weir__Fid cb_fid;
	uint8_t cb_mac[32];
	bool cb_set;          /* false: send none (the MDS issues none) */
};
int wc_capa_init(struct weir_fs *fs);
void wc_capa_fini(struct weir_fs *fs);
/** Keep capability \a c from an MDS reply (\a handle: the open it came with, or 0). */
void wc_capa_note(struct weir_fs *fs, const Weir__Capa *c, uint64_t handle);
/** An OSS refused the capability of \a fid: the next wc_capa_get() renews it. */
void wc_capa_forget(struct weir_fs *fs, const struct weir_fid *fid);
/**
 * A capability of \a fid with rights \a need (WEIR_CAPA_*) into \a b, renewed
 * from the MDS when none is held or it is due.
 * \return 0 (b->cb_set false when the MDS issues none), or the renewal's
 *         error (-EACCES: the caller may not; the MDS's errors).
 */
int wc_capa_get(struct weir_fs *fs, const struct weir_fid *fid, uint32_t need,
		struct wc_capa_buf *b);
/**
 * One MDS RPC: send \a req, wait, unpack the reply as \a rep_d into \a rep
 * (when \a rep_d is not NULL; free with protobuf_c_message_free_unpacked;
 * \a rep NULL: the reply is checked against \a rep_d and dropped).
 * Idempotent operations are retried once after -ECONNRESET.
 * \return 0, the remote -errno, a transport error, or -EPROTO (bad reply).
 */
int wc_mds_call(struct weir_fs *fs, uint16_t op, const ProtobufCMessage *req,
		const ProtobufCMessageDescriptor *rep_d, void **rep);
/**
 * wc_mds_call() to the MDS of MDT \a mdt (0: MDT0, the mount's MDS; k > 0:
 * client/mdt.c's connection, made on first use). A call to MDT k is not
 * kept for replay (client/mdt.c says what MDT k lacks). \return as
 * wc_mds_call(), or wc_mdt_get()'s errors.
 */
int wc_mds_call_mdt(struct weir_fs *fs, uint32_t mdt, uint16_t op, const ProtobufCMessage *req,
		    const ProtobufCMessageDescriptor *rep_d, void **rep);
/** wc_mds_call_xid() to the MDS of MDT \a mdt (as wc_mds_call_mdt()). */
int wc_mds_call_xid_mdt(struct weir_fs *fs, uint32_t mdt, uint16_t op,
			const ProtobufCMessage *req, const ProtobufCMessageDescriptor *rep_d,
			void **rep, const struct weir_xid_hdr *x);
/**
 * One request to MDT \a mdt > 0 with its own timeout (\a timeout_ms), no
 * resend and no wait for recovery (session renewals and disconnects).
 * \return 0, the remote -errno, a transport error, or -EPROTO.
 */
int wc_mds_call_mdt_tmo(struct weir_fs *fs, uint32_t mdt, uint16_t op,
			const ProtobufCMessage *req, const ProtobufCMessageDescriptor *rep_d,
			void **rep, uint32_t timeout_ms);
/** wc_mds_oneway() to the MDS of MDT \a mdt. */
int wc_mds_oneway_mdt(struct weir_fs *fs, uint32_t mdt, uint16_t op, const ProtobufCMessage *req);

/* ------------------------------------------------------------ other MDTs (mdt.c) */

/** Note MDT \a index's MDS address from the cluster map (index 0 and bad ones ignored). */
void wc_mdt_addr_set(struct weir_fs *fs, uint32_t index, const char *addr);
/**
 * The connection to MDT \a index (1 .. WEIR_MDT_MAX - 1), made on first use
 * from the cluster map (fetched again when the MDT is not in it).
 * \return 0, -EINVAL, -EHOSTDOWN (not in the map), -ENOMEM, or a connect
 *         error. Thread-safe; the entry lives until umount.
 */
int wc_mdt_get(struct weir_fs *fs, uint32_t index, struct wc_mdt **out);
/**
 * wc_mdt_get() that waits for an MDT whose MDS cannot be reached, as any
 * call waits for a server that is away (client/recover.c: backoff, the
 * mount's recovery limit -ETIMEDOUT, a signal -EINTR; not at umount), the
 * cluster map fetched again meanwhile (a failover). An MDT not in the map
 * (-EHOSTDOWN) is not waited for. Thread-safe.
 */
int wc_mdt_get_wait(struct weir_fs *fs, uint32_t index, struct wc_mdt **out);
/**
 * This mount's session on MDT \a index (MDT0's for 0), made on first use;
 * \a epoch (may be NULL) gets the MDT's eviction count (wc_mdt_epoch()).
 * \return 0, or wc_mdt_get()'s and MDS_CONNECT's errors.
 */
int wc_mdt_session(struct weir_fs *fs, uint32_t index, uint64_t *session, unsigned *epoch);
/**
 * \a session on MDT \a index was answered -ESTALE: make a new one (once,
 * whatever the number of threads) and mark the handles of the old one stale
 * (wc_session_lost() for MDT0). \return 0 or -errno.
 */
int wc_mdt_session_lost(struct weir_fs *fs, uint32_t index, uint64_t session);
/** How many sessions MDT \a index has lost (fs_epoch for MDT0). */
unsigned wc_mdt_epoch(struct weir_fs *fs, uint32_t index);
/**
 * Renew the sessions on MDTs k > 0 (the lease thread), in \a budget_ms at
 * most in all (one try each; an MDT whose session an opener is making is
 * skipped; those not reached in time wait for the next pass).
 */
void wc_mdt_renew_all(struct weir_fs *fs, uint32_t budget_ms);
/** End the sessions on MDTs k > 0 (umount). */
void wc_mdt_disconnect_all(struct weir_fs *fs, uint32_t timeout_ms);
/** Close the connections to MDTs k > 0 (umount, after every thread stopped). */
void wc_mdt_fini(struct weir_fs *fs);

/**
 * Send one MDS request one-way (net_call_send_oneway()): the MDS handles it
 * in order before this client's later MDS calls and sends no reply. For requests
 * whose outcome the caller could not act on (a failure is logged by the
 * MDS, not here).
 * \return 0 when queued on the connection, or a transport error (nothing
 *         was sent).
 */
int wc_mds_oneway(struct weir_fs *fs, uint16_t op, const ProtobufCMessage *req);
/**
 * The connection to the OSS serving OST \a ost_index, refetching the
 * cluster map when the index is unknown. The connection lives until umount.
 * \a tgt (may be NULL) gets recovery's record of that OSS (client/recover.c),
 * also when the connect fails.
 * \return 0, -EIO (no such OST even after a refetch), or a connect error.
 */
int wc_ost_conn(struct weir_fs *fs, uint32_t ost_index, struct net_conn **conn,
		struct wc_target **tgt);
/** Recovery's record of the OSS serving OST \a ost_index; NULL when unknown. */
struct wc_target *wc_ost_target(struct weir_fs *fs, uint32_t ost_index);
/** Fetch the cluster map from the MDS and replace fs_osts. \return 0 or -errno. */
int wc_map_refresh(struct weir_fs *fs);
/** Number of OSTs in the cluster map (refetched first). \return >= 0 or -errno. */
int wc_map_nr_osts(struct weir_fs *fs);

/* ---- meta.c */

/**
 * Check a path: \return 0, -EINVAL (NULL), -ENOENT (empty),
 * -ENAMETOOLONG (path over 4095 bytes or a component over 255).
 */
int wc_path_check(const char *path);
/** Copy a wire Fid. \a pf may be NULL (zero FID). */
void wc_fid_from_pb(const Weir__Fid *pf, struct weir_fid *fid);
/** Point \a pf (initialised here) at \a fid's values. */
void wc_fid_to_pb(const struct weir_fid *fid, Weir__Fid *pf);
/* wc_lookup, wc_lookup_at, wc_getattr: thin wrappers of wc_mdc_lookup and
 * wc_mdc_getattr (mdc.c), for the many callers that need no target. */
/** MDS_LOOKUP of \a path. \a lo may be NULL. \return 0 or -errno. */
int wc_lookup(struct weir_fs *fs, const char *path, struct wc_attr *a, struct weir_layout *lo);
/**
 * MDS_LOOKUP of \a path from directory \a at (NULL: the root), with
 * PathFlag bits \a pflags (PF_NOFOLLOW: lstat). \return 0 or -errno.
 */
int wc_lookup_at(struct weir_fs *fs, const struct weir_fid *at, const char *path,
		 uint32_t pflags, struct wc_attr *a, struct weir_layout *lo);
/** MDS_GETATTR of \a fid. \a lo may be NULL. \return 0 or -errno. */
int wc_getattr(struct weir_fs *fs, const struct weir_fid *fid, struct wc_attr *a,
	       struct weir_layout *lo);
/**
 * The exact size and blocks of a file from its attributes: glimpses the
 * OSTs when AF_SIZE_STALE is set (or \a force), else takes the MDS's.
 * An HSM-released file (AF_RELEASED) without \a force: the MDS's size and
 * 0 blocks (its objects are absent or partly restored).
 * \return 0 or -errno.
 */
int wc_attr_size(struct weir_fs *fs, const struct wc_attr *a, const struct weir_layout *lo,
		 bool force, uint64_t *size, uint64_t *blocks);
/**
 * Fill \a st from attributes, with the exact size (wc_attr_size(), not
 * forced: glimpses a stale size). \return 0 or -errno.
 */
int wc_attr_stat(struct weir_fs *fs, const struct wc_attr *a, const struct weir_layout *lo,
		 struct stat *st);
/** Fill \a st from attributes and an exact size. */
void wc_attr_to_stat(const struct wc_attr *a, const struct weir_layout *lo, uint64_t size,
		     uint64_t blocks, struct stat *st);
/** Unlink every open directory stream from \a fs and free it (umount). */
void wc_dirs_close_all(struct weir_fs *fs);

/* ---- fidops.c */

/**
 * Fill \a c with the calling thread's credentials from weir_fid_cred_set().
 * \return false (c untouched) when the thread has none.
 */
bool wc_cred_thread(Weir__Cred *c);

/* ---- file.c */

/**
 * weir_open() of \a path from directory \a at (NULL: the root; an absolute
 * path ignores it): the open of weir_openat(). The empty path with \a at
 * set opens \a at itself (weir_fid_open()). \return as weir_open().
 */
int wc_file_open_at(struct weir_fs *fs, const struct weir_fid *at, const char *path, int flags,
		    mode_t mode, struct weir_file **fhp);

/** Close every open file of \a fs. \return 0 or the first close error. */
int wc_files_close_all(struct weir_fs *fs);
/**
 * Glimpse: OST_GETATTR of every object; size = max(\a base_size, file size
 * implied by each object), blocks = sum of object blocks.
 * \return 0 or -errno (-EIO when an OST failed).
 */
int wc_glimpse(struct weir_fs *fs, const struct weir_fid *fid, const struct weir_layout *lo,
	       uint64_t base_size, uint64_t *size, uint64_t *blocks);
/**
 * The current exact size of an open file (MDS_GETATTR, glimpse if stale).
 * \param[out] epoch  May be NULL; the file's truncate epoch read before the
 *                    glimpse, which a size report to the MDS must carry.
 */
int wc_file_size(struct weir_file *fh, uint64_t *size, uint64_t *blocks, uint64_t *epoch);

/* ---- io.c */

/**
 * Run one object RPC (OST_GETATTR, OST_TRUNCATE or OST_FSYNC) on every
 * object of \a lo in parallel; \a ops has lo_stripe_count entries.
 * -ENOENT from an OST means "no object yet" and is not an error.
 * \return 0 or the first error, mapped (-EIO for OST-side failures).
 */
int wc_obj_run(struct weir_fs *fs, const struct weir_fid *fid, const struct weir_layout *lo,
	       uint16_t op, struct wc_objop *ops);
/** Map an OST RPC error to what the API promises. */
int wc_io_errno(int rc, bool write);
/** Record that \a fh changed the file's data now (its mtime at close and fsync). */
void wc_file_touch(struct weir_file *fh);
/**
 * lseek SEEK_DATA / SEEK_HOLE (\a whence) from file offset \a off: OST_SEEK on
 * every object, mapped back through the layout.
 * \param[out] res  The file offset found.
 * \return 0, -ENXIO (\a off at or past the end of file; SEEK_DATA: no data
 *         after it), or -errno.
 */
int wc_file_seek(struct weir_file *fh, uint64_t off, int whence, uint64_t *res);

/* ---- lease.c: the session and its lease */

/**
 * Start the lease thread ("weir-lease": renews the session every lease/3,
 * reconnects when the MDS says the session is gone). \return 0 or -errno.
 */
int wc_lease_start(struct weir_fs *fs);
/**
 * Stop the thread and end the session on the MDS (its locks go at once);
 * no thread reconnects after it (wc_session_lost() returns -ESHUTDOWN).
 * What other threads may still use (the lock record) stays until
 * wc_lease_fini().
 */
void wc_lease_stop(struct weir_fs *fs);
/**
 * Free what wc_lease_start() set up. Only once every thread that may call
 * wc_session_lost() (the lease poll thread of mdl.c too) has stopped.
 */
void wc_lease_fini(struct weir_fs *fs);
/**
 * Tests only (NULL otherwise): called by wc_session_lost() between the
 * reconnect and the replay, outside every lock, with the new session.
 */
extern void (*wc_session_lost_hook)(struct weir_fs *fs, uint64_t new_session);
/** The current session id; \a epoch (may be NULL) gets fs_epoch. */
uint64_t wc_session_get(struct weir_fs *fs, unsigned *epoch);
/**
 * The MDS refused \a session (-ESTALE): unless another thread already did,
 * MDS_CONNECT for a new session. If the MDS is the same boot, this mount
 * was evicted: fs_epoch is bumped, so older handles turn stale.
 * \return 0, -ESHUTDOWN once umount ended the session, or the connect error.
 */
int wc_session_lost(struct weir_fs *fs, uint64_t session);
/**
 * The MDS answered -EINPROGRESS (its recovery window after a restart): make
 * sure this mount has reconnected and replayed (once per call: \a *checked,
 * false before the first), then sleep as wc_recover_backoff() does, on the
 * call's \a w (the one its transport failures wait on, if any: one limit
 * for the whole call).
 * \return 0: send the request again; -ETIMEDOUT once the mount's recovery
 *         limit (fs_recovery_ms) has passed since the call first waited;
 *         -EINTR when a signal handler ran on this thread or its cancel point
 *         was cancelled (weir_cancel()); -EINPROGRESS itself while the mount
 *         is being unmounted (umount does not wait for the window).
 */
int wc_recovery_wait(struct weir_fs *fs, struct wc_wait *w, bool *checked);
/** Did this mount replay its opens and locks into \a session (an MDS restart)? */
bool wc_session_replayed(struct weir_fs *fs, uint64_t session);
/** True when \a fh was opened before an eviction of its mount. */
bool wc_file_stale(const struct weir_file *fh);
/**
 * One MDS RPC with its own timeout, no retry after a transport failure
 * (see wc_mds_call); the MDS's recovery window is waited on (wc_recovery_wait).
 * \return 0, the remote -errno, a transport error, -EPROTO, or
 *         wc_recovery_wait()'s -ETIMEDOUT, -EINTR, -EINPROGRESS.
 */
int wc_mds_call_tmo(struct weir_fs *fs, uint16_t op, const ProtobufCMessage *req,
		    const ProtobufCMessageDescriptor *rep_d, void **rep, uint32_t timeout_ms);

/* ---- mdl.c: the metadata cache under MDS leases (docs/leases.md) */

struct wc_mdl;
/**
 * Start the cache and its callback thread ("weir-mdl") when the MDS grants
 * leases (\a mdl_max > 0) and WEIR_MD_CACHE is not "0". \a names: serve
 * names too (the caller checks search permission itself). \return 0 or -errno.
 */
int wc_mdl_start(struct weir_fs *fs, uint32_t mdl_max, bool names);
/** Umount, before the session ends: the callback thread stops at its poll's answer. */
void wc_mdl_stopping(struct weir_fs *fs);
/** Umount, after the session ended: join the thread, free the cache. */
void wc_mdl_stop(struct weir_fs *fs);
/** The clock, before a request whose reply may be cached (0: no cache). */
uint64_t wc_mdl_stamp(struct weir_fs *fs);
/** The lease bits to ask for (PathReq/FidReq.lease_want) and the session (0: none). */
uint32_t wc_mdl_want(struct weir_fs *fs, uint64_t *session);
/** Cached attributes of \a fid (ATTR leased), and its layout when \a lo. \return true on a hit. */
bool wc_mdl_attr_get(struct weir_fs *fs, const struct weir_fid *fid, struct wc_attr *a,
		     struct weir_layout *lo);
/**
 * Cache \a a (and \a lo, may be NULL) with the \a bits granted to
 * \a session, unless an event since \a t0 makes it doubtful (or the mount
 * has another session now).
 */
void wc_mdl_attr_put(struct weir_fs *fs, uint64_t t0, uint64_t session, uint32_t bits,
		     const struct wc_attr *a, const struct weir_layout *lo);
/** A reader closed \a fid: what is cached of it goes if it was unlinked (the last close destroys it). */
void wc_mdl_closed(struct weir_fs *fs, const struct weir_fid *fid);
/** True when the mount caches names (weir_mount_opts.wmo_md_cache) and leases are granted. */
bool wc_mdl_names(struct weir_fs *fs);
/**
 * This mount changed \a a's FID (a close that reported what it wrote) and
 * the reply leased it \a bits on the result \a a (\a lo): drop what was
 * cached of it (and replies in flight, as wc_mdl_changed()), then cache \a a
 * when nothing touched the FID since \a t0 (wc_mdl_stamp() before the
 * request) and \a session is still the mount's.
 */
void wc_mdl_changed_put(struct weir_fs *fs, uint64_t t0, uint64_t session, uint32_t bits,
			const struct wc_attr *a, const struct weir_layout *lo);
/**
 * This mount made directory \a dir (MKDIR sent after \a t0, wc_mdl_stamp())
 * and the reply leased it LOOKUP (cached with wc_mdl_attr_put() first): it
 * is empty, so every name not cached in it is absent until a callback (or
 * a name this mount cannot keep) ends that.
 */
void wc_mdl_dir_made(struct weir_fs *fs, uint64_t t0, const struct weir_fid *dir);
/**
 * A cached name in \a dir (its LOOKUP leased). \return 0 (\a fid set),
 * -ENOENT (known absent, or not there in a directory known completely),
 * -EAGAIN (not cached: ask the MDS).
 */
int wc_mdl_name_get(struct weir_fs *fs, const struct weir_fid *dir, const char *name,
		    struct weir_fid *fid);
/* One directory a path went through, as the MDS walked it (AttrRep.walk). */
struct wc_walk_step {
	struct wc_attr ws_dir;	/* the directory */
	uint32_t ws_bits;	/* the leases granted on it */
	const char *ws_name;	/* the name found in it */
	struct weir_fid ws_child;
	uint8_t ws_child_type;	/* its DT_* (0: not known) */
};
/**
 * Cache a path the MDS walked for credentials \a cred_key (a hash of uid,
 * gid and groups, mdc.c): each directory's attributes, leases and name, and
 * that these credentials may search it (the walk succeeded), under the
 * rules of wc_mdl_attr_put() (\a t0, \a session). Kept until the
 * directory's lease is called back (a chmod of it, a change of its names).
 */
void wc_mdl_walk_put(struct weir_fs *fs, uint64_t t0, uint64_t session, uint64_t cred_key,
		     const struct wc_walk_step *steps, size_t nr);
/**
 * Resolve \a path from \a at (NULL: the root) in the cache alone, for
 * credentials \a cred_key: every directory on the way leased (LOOKUP and
 * ATTR) and known searchable by them, every name cached, no ".", "..",
 * trailing '/' or symlink to follow (the last component is followed unless
 * \a nofollow). \return 0 (\a a, and \a lo when not NULL, filled from the
 * object's leased entry), -ENOENT (a name known absent), -EAGAIN (ask the
 * MDS). \a count: a lookup of the caller's, counted as a hit or a miss
 * (weir_md_stats()); false for the directory part of a change (mdc.c).
 * \a remote_dir (with \a lo NULL): a last name that is a directory of
 * another MDT than MDT0 (which grants no leases) answers 0 with \a a
 * holding its FID and S_IFDIR only, from the name's lease alone: for the
 * directory part of a call, sent then to that MDT (docs/dne.md, step 2).
 * Thread-safe.
 */
int wc_mdl_walk(struct weir_fs *fs, uint64_t cred_key, const struct weir_fid *at,
		const char *path, bool nofollow, bool count, bool remote_dir, struct wc_attr *a,
		struct weir_layout *lo);
/**
 * Cache \a name in \a dir as \a fid (NULL: absent) of DT_* \a type (0: not
 * known), under the rules of wc_mdl_attr_put().
 */
void wc_mdl_name_put(struct weir_fs *fs, uint64_t t0, const struct weir_fid *dir,
		     const char *name, const struct weir_fid *fid, uint8_t type);
/** How many names of \a dir the cache dropped so far (wc_mdl_dir_listed()). */
uint32_t wc_mdl_dir_drops(struct weir_fs *fs, const struct weir_fid *dir);
/**
 * A listing of \a dir read from its start to its end, as readdirplus pages
 * whose names were cached with wc_mdl_name_put() (the first sent after
 * \a t0 = wc_mdl_stamp(), when \a dir's names dropped were \a drops =
 * wc_mdl_dir_drops()): if its LOOKUP lease was held since before \a t0 and
 * nothing touched \a dir since, the cache knows every name of \a dir.
 */
void wc_mdl_dir_listed(struct weir_fs *fs, const struct weir_fid *dir, uint64_t t0,
		       uint32_t drops);
/**
 * The names of \a dir with a cookie above \a after, sorted by cookie (then
 * name), when the cache knows \a dir completely (it made it, or listed it
 * whole) and each name's type, and with \a plus each entry's attributes.
 * \return 0 (\a snap filled; free it with wc_mdl_dir_snap_free()), or
 *         -EAGAIN (ask the MDS; \a snap empty).
 */
int wc_mdl_dir_snap(struct weir_fs *fs, const struct weir_fid *dir, uint64_t after, bool plus,
		    struct wc_dsnap *snap);
/** Is \a snap of \a dir still what the cache knows (no callback, change or drop since)? */
bool wc_mdl_dir_snap_ok(struct weir_fs *fs, const struct weir_fid *dir, const struct wc_dsnap *snap);
/** Free what \a snap holds and empty it. Accepts an empty one. */
void wc_mdl_dir_snap_free(struct wc_dsnap *snap);
/** This mount changes \a fid (NULL: something it cannot name): drop, and distrust replies in flight. */
void wc_mdl_changed(struct weir_fs *fs, const struct weir_fid *fid);
/**
 * This mount changed the entry \a name of \a dir (a create, an unlink, a
 * rename...): drop the name and \a dir's attributes (its other names stay:
 * the MDS did not call back the changer's lease), and with \a child the
 * object the name led to (everything when it is not known here). With
 * \a now (not NULL), what the name is after the change (a zero FID: no
 * such name), cached under \a dir's LOOKUP lease when nothing touched
 * \a dir since \a t0 (wc_mdl_stamp() before the request was sent). With
 * \a parent (not NULL, its FID \a dir's), \a dir's attributes after the
 * change from the reply, which replace the cached ones under the same
 * conditions and \a dir's ATTR lease, instead of dropping them. With
 * \a child and \a victim (not NULL nor zero: the object the name led to,
 * from the reply), a name not cached here costs only that object, not
 * everything.
 */
void wc_mdl_changed_name(struct weir_fs *fs, const struct weir_fid *dir, const char *name,
			 bool child, uint64_t t0, const struct weir_fid *now,
			 const struct wc_attr *parent, const struct weir_fid *victim);
/** The lease bits this mount holds on \a fid now (0: none, or not trusted); \a valid_ms as weir_md_leased(). */
uint32_t wc_mdl_held(struct weir_fs *fs, const struct weir_fid *fid, uint32_t *valid_ms);

/* ---- hsm.c: the S3 tier (restore waits, the copytool's open) */

/** True when attributes \a a say the file's data is in S3 only (HSM released). */
static inline bool wc_attr_released(const struct wc_attr *a)
{
	return (a->a_flags & WEIR__ATTR_FLAG__AF_RELEASED) != 0;
}

/**
 * Open \a fid for the HSM copytool: MDS_OPEN by FID with OF_HSM and root
 * credentials (uid 0, gid 0). On that handle weir_pread/weir_pwrite/
 * weir_fsync/weir_fstat work as usual but never wait for a restore (they
 * read and write the OST objects as they are), the file is not marked dirty
 * and its data version does not change (the MDS's rule for OF_HSM), no
 * setuid bit is dropped, weir_fsync syncs the objects only, and weir_close
 * reports no size or mtime to the MDS. Release with weir_close().
 * \param[in] flags  O_RDONLY, O_WRONLY or O_RDWR (other bits are ignored).
 * \return 0, or as weir_fid_open() (-EPERM when the MDS refuses OF_HSM).
 * Thread safety: as weir_fid_open().
 */
int wc_hsm_open(struct weir_fs *fs, const struct weir_fid *fid, int flags, weir_file_t **out);

/**
 * Wait until [\a off, \a off + \a len) of released file \a fid is restored
 * (\a len 0: to the end of the file): MDS_HSM_RESTORE_WAIT (which queues the
 * restore), polled with backoff 1 ms doubling to 100 ms. Transport errors
 * (MDS restarting) are retried for up to 60 s in a row.
 * \param[in]  whole     Wait until the file is not released any more (the
 *                       restore is complete and the MDS cleared RELEASED:
 *                       before a write or size change), not just the range.
 * \param[out] released  false: the MDS says the file is whole on the OSTs.
 * \return 0 (ready, or not released), the MDS's error (-EIO: the archive
 *         copy is lost or the restore failed), -ETIMEDOUT (the limit of
 *         WEIR_RESTORE_TIMEOUT, in seconds, ran out; logged), or -errno.
 */
int wc_hsm_wait_range(struct weir_fs *fs, const struct weir_fid *fid, uint64_t off,
		      uint64_t len, bool whole, bool *released);
/**
 * Before weir_pread() of [\a off, \a off + \a len) on a handle with
 * f_released: wait for the part of it below the file's MDS size.
 * \param[out] nbytes  When the file is still released: the bytes the read
 *                     returns (0 at or past the end of file); read exactly
 *                     those from the objects (short objects are zeros).
 *                     UINT64_MAX: the file is whole again, read as usual.
 * \return 0 or as wc_hsm_wait_range().
 */
int wc_hsm_read_prep(struct weir_file *fh, uint64_t off, uint64_t len, uint64_t *nbytes);
/**
 * Before a write, fallocate or non-zero truncate through \a fh: when it
 * has f_released, wait for the whole file (then clear the flag).
 * \return 0 or as wc_hsm_wait_range().
 */
int wc_hsm_write_prep(struct weir_file *fh);
/**
 * Backoff of an MDS call answered -EAGAIN (an O_TRUNC open or a truncate to
 * 0 of a released file whose objects are still being destroyed): sleep
 * *\a delay_ms (first call: set it to 0; 10 ms doubling to 200 ms).
 * \param[in] start_ns  weir_now_ns() of the first attempt.
 * \return true to try again, false once 60 s have passed.
 */
bool wc_hsm_again(uint64_t start_ns, uint32_t *delay_ms);

/* ---- replay.c: MDS requests kept until the MDS synced them */

/** A snapshot of a mount's kept list, for tests and logs. */
struct wc_replay_stats {
	uint64_t rs_nr_kept;        /* requests kept now */
	uint64_t rs_bytes;          /* their bytes */
	uint64_t rs_peak;           /* most kept at once */
	uint64_t rs_nr_total;       /* ever kept */
	uint64_t rs_syncs;          /* syncs asked for by the cap */
	uint64_t rs_last_committed; /* newest last_committed seen */
	uint64_t rs_transno_max;    /* transno of the newest kept; 0: none */
	uint64_t rs_resent;         /* sent again in MDS recovery windows */
	uint64_t rs_lost;           /* dropped unreplayed: evicted, or no window */
};

void wc_replay_init(struct weir_fs *fs);
/** Free every kept request. */
void wc_replay_fini(struct weir_fs *fs);
/**
 * Note the answer to an MDS call: keep a copy of the request when its
 * reply prefix says applied and not synced (transno > last_committed), then
 * free what the reply's last_committed covers. A call whose reply had no
 * prefix changes nothing.
 * \param[in] x      The request's replay prefix (NULL: never kept).
 * \param[in] rep_d  The reply's type and \a rep its unpacked message (both
 *                   may be NULL): a create's FID is kept from it.
 * \return true when the list is over its cap: call wc_replay_sync_if_full().
 */
bool wc_replay_note(struct weir_fs *fs, const struct net_call *call,
		    const struct weir_xid_hdr *x, const ProtobufCMessageDescriptor *rep_d,
		    const void *rep);
/** Over the cap: send MDS_SYNC (whole MDT) so the MDS syncs and the list drains. */
void wc_replay_sync_if_full(struct weir_fs *fs);
void wc_replay_stats(struct weir_fs *fs, struct wc_replay_stats *st);
/** Set the cap (bytes); for tests. */
void wc_replay_set_cap(struct weir_fs *fs, uint64_t cap_bytes);
/**
 * After a restart of the MDS that opened a recovery window for this mount:
 * send every kept request (MDS_REPLAY txns, in transno order, the last
 * request with txns_last) and wait until the MDS re-ran them all; then they
 * are freed. Requests kept from now on are a new generation.
 * \param session      this mount's new session; \a old_session the one before.
 * \return 0, -ESTALE (the session is unknown: the MDS restarted again, or
 *         its window is over; the requests stay kept for the next
 *         reconnect), or another -errno (they are dropped, with an error
 *         line, and counted in rs_lost).
 */
int wc_replay_resend(struct weir_fs *fs, uint64_t session, uint64_t old_session);
/**
 * Drop every kept request, logging how many: the MDS restarted and will not
 * take them (this mount was evicted, or the MDS opened no window).
 */
void wc_replay_forget(struct weir_fs *fs, const char *why);

/* ---- recover.c: waiting for servers, the replay identity */

/**
 * Set up recovery: the limit (mount option seconds \a opt_s; \a opt_flag < 0:
 * forever; else WEIR_RECOVERY_TIMEOUT; else forever), the uuid, the slots.
 */
int wc_recover_init(struct weir_fs *fs, uint32_t opt_s, int32_t opt_flag);
void wc_recover_fini(struct weir_fs *fs);
/** Name \a t "<kind><index as 4 hex digits>" at \a addr, up. */
void wc_target_init(struct wc_target *t, const char *kind, uint32_t index, const char *addr);
/** A transport error from which a call waits and is sent again. */
bool wc_recover_retryable(int rc);
/**
 * Mark \a t away (one WARN line at the change), unless it was seen back
 * after the failed call was sent at \a sent_ns (a stale failure).
 */
void wc_target_down(struct weir_fs *fs, struct wc_target *t, int rc, uint64_t sent_ns);
void wc_target_up_slow(struct wc_target *t, uint64_t sent_ns);
/**
 * \a t answered a call sent at \a sent_ns (weir_now_ns()): mark it up (one
 * NOTICE line at the change), unless it went away after that call was sent
 * (a late answer from before the outage says nothing about now).
 */
static inline void wc_target_up(struct wc_target *t, uint64_t sent_ns)
{
	if (atomic_load_explicit(&t->t_down_ns, memory_order_relaxed))
		wc_target_up_slow(t, sent_ns);
}
/**
 * A call to target \a t (may be NULL), sent at \a sent_ns, failed with \a rc: wait before it is
 * sent again (see the DESIGN of recover.c).
 * \return 0: send it again; \a rc itself when it is not a transport error
 *         (or the mount is being unmounted); -ETIMEDOUT once the mount's
 *         recovery limit has passed since the first failure of \a w;
 *         -EINTR when a signal handler ran on this thread or its cancel
 *         point was cancelled (weir_cancel()).
 */
int wc_recover_wait(struct weir_fs *fs, struct wc_target *t, struct wc_wait *w, int rc,
		    uint64_t sent_ns);
/**
 * The sleep of wc_recover_wait() and wc_recovery_wait(): start \a w's clock
 * on its first wait, then sleep its next backoff (10 ms doubling to 1 s, cut
 * to what is left of the mount's limit). \a name (the target) and \a rc
 * (the failure) and \a what (prose) are for the log line.
 * \return 0: send the call again; -ETIMEDOUT once fs_recovery_ms (when not
 *         0) has passed since \a w's first wait; -EINTR as wc_recover_wait().
 */
int wc_recover_backoff(struct weir_fs *fs, struct wc_wait *w, const char *name, int rc,
		       const char *what);
/**
 * A new request id in \a x, with a reply-cache slot when \a slot (may wait
 * for one); the xid is taken after the slot, so it is greater than that of
 * every request that held the slot before.
 */
void wc_xid_new(struct weir_fs *fs, bool slot, struct weir_xid_hdr *x);
/** Give back \a x's slot (after its answer). */
void wc_xid_put(struct weir_fs *fs, struct weir_xid_hdr *x);
/**
 * wc_mds_call() with the caller's replay id \a x (wc_xid_new(); the caller
 * puts it), so that a caller sending the same request again after an error
 * it handles (-ESTALE: a new session) keeps the request's identity.
 */
int wc_mds_call_xid(struct weir_fs *fs, uint16_t op, const ProtobufCMessage *req,
		    const ProtobufCMessageDescriptor *rep_d, void **rep,
		    const struct weir_xid_hdr *x);
/** True when MDS operation \a op changes nothing (no reply-cache slot). */
bool wc_op_readonly(uint16_t op);

/* ---- lock.c */

/**
 * weir_write() on an O_APPEND handle: under the file's append lock on the
 * MDS, glimpse the size, write there, unlock. Called with f_pos_lock held;
 * sets f_pos to the end of what was written.
 * \return as weir_pwrite(), or -ENOLCK / -EIO (the session was lost),
 *         -EINTR (weir_cancel() during the lock wait: nothing written).
 */
ssize_t wc_append_write(struct weir_file *fh, const void *buf, size_t len);
/**
 * Whether the calling thread's armed cancel point was cancelled
 * (weir_cancel()): for waits to check between polls.
 * \return -EINTR when it was, else 0.
 */
int wc_cancel_check(void);
/** The mount's own lock record (fs_locks): make it, free it, empty it. */
int wc_lock_self_init(struct weir_fs *fs);
void wc_lock_self_fini(struct weir_fs *fs);
void wc_lock_self_reset(struct weir_fs *fs);
/** \a fh closes: the locks the MDS drops with it leave the record too. */
void wc_lock_self_close(struct weir_file *fh);
/**
 * Replay the mount's locks into session \a session of a restarted MDS in
 * its recovery window: append them to \a req (ReplayLock, allocated here;
 * free with wc_lock_replay_free()). \return 0 or -ENOMEM.
 */
struct wc_replay_locks;
int wc_lock_replay_fill(struct weir_fs *fs, struct wc_replay_locks **out, Weir__ReplayLock ***locks,
			size_t *nr);
void wc_lock_replay_free(struct wc_replay_locks *rl);

#endif /* WEIR_CLIENT_INT_H */
