/*
 * oss/oss_int.h - private to oss/: the server state, the OST directory
 * (obj.c), the per-loop io_uring (uring.c), registration (reg.c) and the
 * request handlers (svc.c). Threads and ownership: see oss/main.c.
 */
#ifndef WEIR_OSS_INT_H
#define WEIR_OSS_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "common/capa.h"
#include "common/fid.h"
#include "net/net.h"
#include "oss.h"
#include "weir.pb-c.h"

/* ------------------------------------------------------------ OST directory */

/** Hex digits of an OST UUID (128 random bits). */
#define OSS_UUID_HEX 32
/** Largest OST index accepted from the MDS or DIR/ost.index (Lustre's limit). */
#define OSS_OST_INDEX_MAX 65535
/** Bytes of an OST's secret (DIR/ost.secret holds them as hex). */
#define OSS_SECRET_LEN 32
/** Room for an object's path relative to the OST directory, with its NUL. */
#define OSS_OBJ_NAME_MAX 64

/** One OST: a directory on a local filesystem (disk format in obj.c). */
struct oss_ost {
	char *ot_dir;                     /* path as given on the command line */
	int ot_dirfd;                     /* O_DIRECTORY fd of ot_dir; objects are opened at it */
	char ot_uuid[OSS_UUID_HEX + 1];   /* from DIR/ost.uuid */
	uint8_t ot_secret[OSS_SECRET_LEN]; /* from DIR/ost.secret: proves this is the OST */
	int ot_lockfd;                    /* DIR/ost.lock, flock()ed for this process's life */
	_Atomic int32_t ot_index;         /* -1 until known; written by oss-reg, read by loops */
	_Atomic uint32_t ot_throttle_ms;  /* HSM backpressure from the MDS (oss/throttle.c), 0 none */
	struct oss_fdc *ot_fdc;           /* open segment cache (fdcache.c), shared; NULL: none */
};

/**
 * Open or create the OST directory \a dir: check it is a writable
 * directory, lock it (DIR/ost.lock: one weir-oss per OST directory), create
 * DIR/ost.uuid, DIR/ost.secret and DIR/O/00..ff on first use, load
 * DIR/ost.index if present. Start-up only.
 * \param[out] ot  Filled; release with oss_ost_fini() (also on failure).
 * \return 0, -ENOTDIR, -EACCES, -EBUSY (another process serves it), -EEXIST
 *         (this process already serves it: the directory given twice), -EIO
 *         (corrupt ost.uuid/ost.secret/ost.index) or -errno; logged.
 */
int oss_ost_init(struct oss_ost *ot, const char *dir);
/** Close and free what oss_ost_init() set up; also after it failed. */
void oss_ost_fini(struct oss_ost *ot);
/** Persist \a index in DIR/ost.index (atomic write). \return 0 or -errno. */
int oss_ost_index_store(struct oss_ost *ot, uint32_t index);

/** Space and inode totals of an OST's filesystem, in bytes and inodes. */
struct oss_statfs {
	uint64_t sf_total_bytes;
	uint64_t sf_free_bytes;
	uint64_t sf_avail_bytes;
	uint64_t sf_files;
	uint64_t sf_files_free;
	uint64_t sf_fs_id; /* st_dev of the OST directory + 1: its filesystem on this host */
};
/** statvfs(2) (and the device) of the OST directory. \return 0 or -errno. */
int oss_ost_statfs(const struct oss_ost *ot, struct oss_statfs *sf);

/* ------------------------------------------------------------------ objects */

/*
 * An object is stored as segment files of OSS_SEG_SIZE bytes (disk format
 * v2, oss/obj.c): segment k holds object bytes [k << 40, (k + 1) << 40).
 * Segment 0 is the object's plain v1 name and exists whenever the object
 * does; segments 1.. live in a directory of their own next to it, created on
 * first need. A missing segment, or bytes past a segment file's end, are holes.
 */
/** log2 of the segment size: 1 TiB, well under ext4's 16 TiB file limit. */
#define OSS_SEG_SHIFT 40
#define OSS_SEG_SIZE (1ULL << OSS_SEG_SHIFT)
/** Highest segment index: the one holding object byte 2^63 - 2. */
#define OSS_SEG_MAX ((uint64_t)INT64_MAX >> OSS_SEG_SHIFT)

/** Segment holding object byte \a off. */
static inline uint64_t oss_seg_of(uint64_t off)
{
	return off >> OSS_SEG_SHIFT;
}

/** Offset of object byte \a off inside its segment. */
static inline uint64_t oss_seg_off(uint64_t off)
{
	return off & (OSS_SEG_SIZE - 1);
}

/** One object, as a request names it (checked by the caller). */
struct oss_obj {
	const struct oss_ost *ob_ost;
	struct weir_fid ob_fid;
	uint32_t ob_stripe;       /* object index within the file's layout */
};

/** What oss_obj_getattr() finds. */
struct oss_obj_attr {
	bool oa_exists;           /* segment 0 is there */
	uint64_t oa_size;         /* bytes: end of the data of the highest non-empty segment */
	uint64_t oa_blocks;       /* 512-byte blocks allocated, summed over the segments */
	int64_t oa_mtime_ns;      /* latest st_mtim of the segments */
};

/**
 * The path of segment 0 relative to the OST directory:
 * "O/<hh>/<seq hex>-<oid hex>-<stripe dec>". \a buf has OSS_OBJ_NAME_MAX bytes.
 */
void oss_obj_name(const struct weir_fid *fid, uint32_t stripe, char *buf);
/**
 * The path of segment \a seg (0..OSS_SEG_MAX) relative to the OST directory:
 * segment 0 as oss_obj_name(), others "<segment 0 path>.d/<seg dec>".
 */
void oss_obj_seg_name(const struct oss_obj *ob, uint64_t seg, char *buf);
/**
 * open(2) segment \a seg with \a flags (O_CLOEXEC added; mode 0644 on create).
 * With O_CREAT and \a seg >= 1, segment 0 and the segment directory are
 * created first when missing, so an object with data always has segment 0.
 * \param[out] fd  The descriptor; the caller closes it.
 * \return 0 or -errno (-ENOENT: no such segment and no O_CREAT).
 */
int oss_obj_seg_open(const struct oss_obj *ob, uint64_t seg, int flags, int *fd);
/** open(2) the directory of segments 1.. (O_RDONLY). \return 0 or -errno (-ENOENT: none). */
int oss_obj_seg_dir_open(const struct oss_obj *ob, int *fd);
/**
 * The segments >= 1 that exist, ascending.
 * \param[out] segs  malloc'd array (NULL when none); the caller frees it.
 * \param[out] nr    Entries.
 * \return 0 or -errno. Names in the segment directory that are not segment
 *         numbers are skipped with a warning.
 */
int oss_obj_segs_list(const struct oss_obj *ob, uint64_t **segs, size_t *nr);
/**
 * Size, blocks and mtime of an object: one fstatat(2) of segment 0 and one
 * failed open of the segment directory for an object below 1 TiB, a listing
 * of that directory otherwise. \return 0 (oa_exists false when there is no
 * object) or -errno.
 */
int oss_obj_getattr(const struct oss_obj *ob, struct oss_obj_attr *oa);
/**
 * Set the object's size to \a size (creating the object): removes the
 * segments wholly past it and sets the length of the segment holding byte
 * size - 1 (segment 0 for size 0). \return 0, -EFBIG (over 2^63-1) or -errno.
 */
int oss_obj_truncate(const struct oss_obj *ob, uint64_t size);
/**
 * Remove everything in the segment directory, the directory, then segment 0.
 * \return 0 (also when the object is absent) or -errno.
 */
int oss_obj_destroy(const struct oss_obj *ob);
/**
 * lseek(2) SEEK_DATA (\a hole false) or SEEK_HOLE (\a hole true) in the
 * object: the first data byte / hole byte at or after \a off, with the
 * block granularity of a local file of the whole object: a missing segment
 * is a hole, and the bytes from a segment file's end (the object's end
 * included) to the end of its last block are data when that block holds
 * data. So a hole may be found up to a block past the object's size, and
 * SEEK_HOLE always finds one (at \a off itself when past the data).
 * \param[out] res  The object offset found.
 * \param[out] oa   The object's attributes (size) when it was asked.
 * \return 0, -ENXIO (no such object; SEEK_DATA: no data at or after \a off),
 *         or -errno.
 */
int oss_obj_seek(const struct oss_obj *ob, uint64_t off, bool hole, uint64_t *res,
		 struct oss_obj_attr *oa);

/* ------------------------------------------------------- open segment cache */

/*
 * A bounded cache of open segment files (oss/fdcache.c), one per OSS, shared
 * by its OSTs and loop threads (sharded locks). Keyed by (OST, FID, stripe,
 * segment, mode); reads get O_RDONLY fds, writes O_WRONLY | O_CREAT ones.
 * oss_obj_destroy() and oss_obj_truncate() invalidate an object's entries
 * (through ot_fdc) before they unlink anything. Every function accepts a
 * NULL cache: then fds are opened and closed per call.
 */
struct oss_fdc;
struct oss_fdc_ent;

/** Default and largest number of cached fds per OSS (--fd-cache). */
#define OSS_FDC_DEFAULT 1024
#define OSS_FDC_MAX (1U << 20)

/**
 * A cache of at most \a max fds (0: no cache, *\a out NULL).
 * \return 0 or -ENOMEM.
 */
int oss_fdc_new(uint32_t max, struct oss_fdc **out);
/** Close every cached fd and free; none may be in use. Accepts NULL. */
void oss_fdc_free(struct oss_fdc *c);
/**
 * An fd of segment \a seg of \a ob, for writing (\a write: opened
 * O_WRONLY | O_CREAT, so a write creates the object) or reading (O_RDONLY),
 * from the cache or opened (and cached when no destroy or truncate of the
 * object ran meanwhile). Give it back with oss_fdc_put(); never close it.
 * Any thread.
 * \param[out] ent  The entry holding \a fd, or NULL (an uncached fd).
 * \param[out] fd   The descriptor.
 * \return 0 or oss_obj_seg_open()'s -errno (-ENOENT: no such segment, read).
 */
int oss_fdc_get(struct oss_fdc *c, const struct oss_obj *ob, uint64_t seg, bool write,
		struct oss_fdc_ent **ent, int *fd);
/** One more reference to \a ent (from oss_fdc_get()), released by its own oss_fdc_put(). */
void oss_fdc_hold(struct oss_fdc *c, struct oss_fdc_ent *ent);
/** Release what oss_fdc_get() gave (closes an uncached fd, or a dropped entry's). */
void oss_fdc_put(struct oss_fdc *c, struct oss_fdc_ent *ent, int fd);
/**
 * Before removing any file of \a ob: drop its cached fds and refuse to cache
 * fds of it (and of opens that started before) until oss_fdc_inval_end().
 */
void oss_fdc_inval_begin(struct oss_fdc *c, const struct oss_obj *ob);
/** After the removal: drop its fds again, allow caching of opens started from now. */
void oss_fdc_inval_end(struct oss_fdc *c, const struct oss_obj *ob);
/** Entries cached now (for tests and logs). */
uint32_t oss_fdc_count(struct oss_fdc *c);
/** The most fds \a c keeps (its size after any RLIMIT_NOFILE cut). Thread-safe. */
uint32_t oss_fdc_capacity(const struct oss_fdc *c);

/* ------------------------------------------------------------------ server */

struct oss {
	char *o_mds;                    /* "HOST:PORT" of the MDS */
	char o_addr[256];               /* "<advertise host>:<port>" sent to the MDS */
	char o_listen[256];
	uint32_t o_nr_threads;
	uint32_t o_heartbeat_ms;
	bool o_test_no_destroy_batch;   /* WEIR_OSS_TEST_NO_DESTROY_BATCH: play an OSS from
					 * before OST_DESTROY_BATCH (tests of the MDS's fallback) */
	struct oss_ost o_osts[OSS_MAX_OSTS];
	uint32_t o_nr_osts;
	struct net_server *o_srv;
	uint16_t o_port;
	/* registration thread (reg.c) */
	pthread_t o_reg_thread;
	bool o_reg_started;
	pthread_mutex_t o_reg_lock;     /* protects o_reg_stop */
	pthread_cond_t o_reg_cond;      /* signalled on stop */
	bool o_reg_stop;
	struct oss_throttle *o_throttle; /* held write replies (throttle.c); NULL: none */
	struct oss_fdc *o_fdc;          /* open segment cache (fdcache.c); NULL: none */
	uint64_t o_writeback_min;       /* writes this long start their writeback; 0 off */
	struct oss_slow *o_slow;        /* truncate/destroy off the loops (slow.c); NULL: inline */
	/* OST capabilities (capa.c) */
	pthread_mutex_t o_capa_lock;    /* serialises key changes (oss-reg) and o_capa_keys */
	/* the key the MDS sent last; NULL: none yet. Published once filled, never
	 * changed or freed before oss_stop: the loops read it without a lock */
	struct weir_capa_key *_Atomic o_capa_key;
	struct oss_capa_keyent *o_capa_keys; /* every key received, newest first */
	bool o_capa_off;                /* --insecure: nothing checked */
};

/* capa.c: OST capabilities */
/** Set up (off when the process runs --insecure). */
void oss_capa_init(struct oss *oss);
/** Wipe and free the keys (after the loops and the slow threads stopped). */
void oss_capa_fini(struct oss *oss);
/**
 * The key of the MDS's registration reply (WEIR_CAPA_KEY_LEN bytes, else
 * ignored with a log line), with generation \a gen. A key different from the
 * current one (bytes or generation) replaces it and voids every loop's cache
 * of checked capabilities. Any thread.
 */
void oss_capa_set_key(struct oss *oss, const uint8_t *key, size_t len, uint32_t gen);
/**
 * Check a request's capability \a c for \a need (WEIR_CAPA_*) on \a fid:
 * it names \a fid, holds \a need, has not expired (this host's wall clock),
 * is of the current key generation and its MAC verifies (computed once per
 * capability and thread: a small cache). Nothing is checked when the OSS runs
 * --insecure.
 * \return 0, or with \a *why set:
 * \retval -EACCES  no capability, or not one for this request
 * \retval -EAGAIN  no key from the MDS yet (the OSS has not registered since it
 *                  started): the requester may retry shortly
 * Thread safety: any thread (loops, oss-slow).
 */
int oss_capa_check(struct oss *oss, const Weir__Capa *c, const struct weir_fid *fid,
		   uint32_t need, const char **why);

/* slow.c: OST_TRUNCATE and OST_DESTROY run on "oss-slow" threads */
/** Start the threads (a failure to start leaves the requests on the loops). \return 0 or -ENOMEM. */
int oss_slow_start(struct oss *oss);
/**
 * Run \a fn(\a rq) (a handler that replies) on an oss-slow thread; inline
 * when there is none or it is stopping. Any thread.
 */
void oss_slow_run(struct oss *oss, void (*fn)(struct net_req *rq), struct net_req *rq);
/** Run what is queued, stop and free the threads (after net_server_stop). Safe when never started. */
void oss_slow_stop(struct oss *oss);

/* throttle.c: HSM backpressure on writers */
/** Start the "oss-throttle" thread (without it, replies are simply not held). */
void oss_throttle_start(struct oss *oss);
/**
 * Send every held reply, stop the thread; later oss_throttle_defer() calls
 * reply at once. Safe when never started. The state stays for the loops.
 */
void oss_throttle_stop(struct oss *oss);
/** Free the state, once no loop can call oss_throttle_defer() (after net_server_stop). */
void oss_throttle_fini(struct oss *oss);
/** Call \a fn(\a arg) after \a ms (<= 100) from the throttle thread; at once when 0 or stopped. */
void oss_throttle_defer(struct oss *oss, uint32_t ms, void (*fn)(void *arg), void *arg);
/** The MDS's throttle for \a ot (heartbeat reply); logs changes. */
void oss_throttle_set(struct oss_ost *ot, uint32_t ms);

/** The OST with index \a index, or NULL when none has (yet) that index. Any thread. */
struct oss_ost *oss_ost_find(struct oss *oss, uint32_t index);

/** Set up the registration lock and condition variable (before oss_reg_start()). */
void oss_reg_init(struct oss *oss);
/** Undo oss_reg_init() (after oss_reg_stop()). */
void oss_reg_fini(struct oss *oss);
/** Start the "oss-reg" thread. \return 0 or -errno. */
int oss_reg_start(struct oss *oss);
/** Stop and join it (waits out a registration call in flight, at most ~5 s). */
void oss_reg_stop(struct oss *oss);

/** The net server callbacks: request dispatch and per-loop io_uring set-up. */
void oss_svc_ops(struct oss *oss, struct net_server_ops *ops);

/* ------------------------------------------------ request handlers (svc*.c) */

/** What an object request names, once checked by oss_svc_target(). */
struct oss_target {
	struct oss_obj tg_obj;
	uint32_t tg_ost_idx;
	bool tg_has_fid;          /* the request had a fid (tg_obj.ob_fid is it; for logs) */
};

/**
 * Check the (ost, fid, stripe) of an object request, find the OST, and check
 * the request's capability \a capa for the rights \a need (WEIR_CAPA_*) its
 * opcode needs (oss_capa_check()).
 * \return 0, or the status to reply (-EPROTO no fid, -EINVAL zero fid or
 *         stripe out of range, -ENODEV no such OST here, -EACCES no valid
 *         capability, -EAGAIN no capability key yet) with \a why set.
 */
int oss_svc_target(struct net_req *rq, uint32_t ost, const Weir__Fid *fid, uint32_t stripe,
		   const Weir__Capa *capa, uint32_t need,
		   struct oss_target *t, const char **why);
/**
 * Log one failed request (WARN for the requester's mistakes, ERROR for the
 * server's own failures) and reply \a rc, which frees \a rq. \a t may be NULL.
 */
void oss_svc_fail(struct net_req *rq, const char *op, const struct oss_target *t, int rc,
		  const char *why);
/** OST_READ, OST_WRITE, OST_FSYNC, OST_FALLOCATE (oss/svc_io.c): reply from the ring. */
void oss_svc_read(struct net_req *rq);
void oss_svc_write(struct net_req *rq);
void oss_svc_fsync(struct net_req *rq);
void oss_svc_fallocate(struct net_req *rq);

/* ------------------------------------------------------------------ io_uring */

/** Queue depth (submission entries) of each loop's ring. */
#define OSS_URING_DEPTH 128

enum oss_io_kind {
	OSS_IO_READ = 1,
	OSS_IO_WRITE,
	OSS_IO_FSYNC,
	OSS_IO_FALLOCATE,
	OSS_IO_WRITEBACK,     /* sync_file_range(SYNC_FILE_RANGE_WRITE): start writeback only */
};

/**
 * One data I/O on a ring. The caller fills the "in" fields and owns the
 * struct (usually embedded in a request) until io_cb runs.
 */
struct oss_io {
	/* in */
	enum oss_io_kind io_kind;
	int io_fd;
	uint8_t *io_buf;      /* READ/WRITE: io_len bytes */
	uint64_t io_len;      /* bytes; FALLOCATE: length of the range */
	uint64_t io_off;      /* file offset of io_buf[0] (FALLOCATE: of the range), bytes */
	bool io_datasync;     /* FSYNC: fdatasync instead of fsync */
	/* WRITEBACK: io_off and io_len name the range (io_buf unused) */
	int io_mode;          /* FALLOCATE: fallocate(2) mode (FALLOC_FL_* bits) */
	/**
	 * Completion, on the ring's loop thread: \a rc is 0 or a negative errno;
	 * io_done holds the bytes transferred (less than io_len only at EOF of
	 * a read, or on error; FSYNC and FALLOCATE leave it 0).
	 */
	void (*io_cb)(struct oss_io *io, int rc);
	/* out */
	uint64_t io_done;     /* bytes */
	/* private to uring.c */
	struct oss_io *io_next;
};

struct oss_uring;

/**
 * Create a ring of OSS_URING_DEPTH entries for loop \a lp, with an eventfd
 * watched by the loop; completions are reaped and their io_cb called on
 * that loop's thread. Call on the loop thread (so_loop_init).
 * \return 0 or -errno (-ENOSYS/-EPERM: no io_uring here).
 */
int oss_uring_new(struct net_loop *lp, struct oss_uring **out);
/** Finish every queued and in-flight I/O (callbacks run), then free. Loop thread. Accepts NULL. */
void oss_uring_free(struct oss_uring *u);
/**
 * Queue \a io; it is sent to the kernel now if the ring has room, else
 * when earlier I/O completes. Short reads and writes are resubmitted for
 * the rest. io_cb never runs before this returns. Loop thread only.
 */
void oss_uring_submit(struct oss_uring *u, struct oss_io *io);
/**
 * Count one more early writeback on this loop's ring, unless
 * OSS_URING_MAX_WRITEBACKS are already in flight (they are hints: over the
 * cap the kernel's own writeback does the work). Loop thread only.
 * \return true when counted (then oss_uring_writeback_end() once it completes).
 */
bool oss_uring_writeback_begin(struct oss_uring *u);
/** One early writeback of this ring completed. Loop thread only. */
void oss_uring_writeback_end(struct oss_uring *u);
/**
 * Run the callbacks of the I/O that has completed by now (a read of cached
 * pages completes inside the submit), without waiting for the eventfd; then
 * refill the ring. Loop thread only, and not from inside an io_cb.
 */
void oss_uring_poll(struct oss_uring *u);

#endif /* WEIR_OSS_INT_H */
