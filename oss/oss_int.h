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

#include "common/fid.h"
#include "net/net.h"
#include "oss.h"

/* ------------------------------------------------------------ OST directory */

/** Hex digits of an OST UUID (128 random bits). */
#define OSS_UUID_HEX 32
/** Largest OST index accepted from the MDS or DIR/ost.index (Lustre's limit). */
#define OSS_OST_INDEX_MAX 65535
/** Room for an object's path relative to the OST directory, with its NUL. */
#define OSS_OBJ_NAME_MAX 64

/** One OST: a directory on a local filesystem (disk format in obj.c). */
struct oss_ost {
	char *ot_dir;                     /* path as given on the command line */
	int ot_dirfd;                     /* O_DIRECTORY fd of ot_dir; objects are opened at it */
	char ot_uuid[OSS_UUID_HEX + 1];   /* from DIR/ost.uuid */
	_Atomic int32_t ot_index;         /* -1 until known; written by oss-reg, read by loops */
};

/**
 * Open or create the OST directory \a dir: check it is a writable
 * directory, create DIR/ost.uuid and DIR/O/00..ff on first use, load
 * DIR/ost.index if present. Start-up only.
 * \param[out] ot  Filled; release with oss_ost_fini() (also on failure).
 * \return 0, -ENOTDIR, -EACCES, -EIO (corrupt ost.uuid/ost.index) or -errno; logged.
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
};
/** statvfs(2) of the OST directory. \return 0 or -errno. */
int oss_ost_statfs(const struct oss_ost *ot, struct oss_statfs *sf);

/**
 * The object's path relative to the OST directory:
 * "O/<hh>/<seq hex>-<oid hex>-<stripe dec>". \a buf has OSS_OBJ_NAME_MAX bytes.
 */
void oss_obj_name(const struct weir_fid *fid, uint32_t stripe, char *buf);
/**
 * open(2) an object with \a flags (O_CLOEXEC added; mode 0644 on create).
 * \param[out] fd  The descriptor; the caller closes it.
 * \return 0 or -errno (-ENOENT: no such object and no O_CREAT).
 */
int oss_obj_open(const struct oss_ost *ot, const struct weir_fid *fid, uint32_t stripe, int flags,
		 int *fd);
/** stat(2) an object. \return 0 or -errno (-ENOENT: no such object). */
int oss_obj_stat(const struct oss_ost *ot, const struct weir_fid *fid, uint32_t stripe,
		 struct stat *st);
/** unlink(2) an object. \return 0 or -errno (-ENOENT: no such object). */
int oss_obj_unlink(const struct oss_ost *ot, const struct weir_fid *fid, uint32_t stripe);
/** fstat(2) as 0 / -errno. */
int oss_fd_stat(int fd, struct stat *st);
/** ftruncate(2) as 0 / -errno. */
int oss_fd_truncate(int fd, uint64_t size);
/** st_mtim in nanoseconds since the epoch. */
int64_t oss_stat_mtime_ns(const struct stat *st);

/* ------------------------------------------------------------------ server */

struct oss {
	char *o_mds;                    /* "HOST:PORT" of the MDS */
	char o_addr[256];               /* "<advertise host>:<port>" sent to the MDS */
	char o_listen[256];
	uint32_t o_nr_threads;
	uint32_t o_heartbeat_ms;
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
};

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

/* ------------------------------------------------------------------ io_uring */

/** Queue depth (submission entries) of each loop's ring. */
#define OSS_URING_DEPTH 128

enum oss_io_kind {
	OSS_IO_READ = 1,
	OSS_IO_WRITE,
	OSS_IO_FSYNC,
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
	uint64_t io_len;      /* bytes */
	uint64_t io_off;      /* file offset of io_buf[0], bytes */
	bool io_datasync;     /* FSYNC: fdatasync instead of fsync */
	/**
	 * Completion, on the ring's loop thread: \a rc is 0 or a negative errno;
	 * io_done holds the bytes transferred (less than io_len only at EOF of
	 * a read, or on error).
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

#endif /* WEIR_OSS_INT_H */
