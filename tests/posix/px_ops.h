/*
 * tests/posix/px_ops.h - the filesystem operations of the POSIX conformance
 * suite, as a vtable every case calls through.
 *
 * Every operation returns what the matching Linux call returns on success
 * (0, a byte count, a new position, a descriptor) or a negative errno; errno
 * is never used. Descriptors ("fd", "dh") are small non-negative integers
 * private to the backend that made them.
 *
 * Backends:
 *  - libweir (px_ops_libweir.c): libweir on a running cluster. Each process
 *    mounts lazily at its first call, so a case may fork client processes
 *    (px_clients_run) and each child is a separate client with its own
 *    mount. Operations libweir does not have yet are NULL (see px_need()).
 *  - local (px_ops_local.c): libc on a directory of a local filesystem,
 *    -1/errno turned into -errno. The reference: Linux defines the expected
 *    behaviour. The same backend pointed at a FUSE mount of Weir, or run
 *    under the LD_PRELOAD shim with its root below the shim's prefix, is how
 *    the suite checks those later (PX_SUBJECT_ROOT, see README.md).
 *
 * Paths given to every operation are absolute within the filesystem under
 * test ("/case/a/b"): the local backend either chroot()s into its root
 * directory (PX_BE_ROOTED: then "/.." is the root and absolute symlinks
 * resolve inside it, exactly as in Weir) or prefixes its root to each path.
 *
 * Thread safety: none; one thread per process.
 */
#ifndef WEIR_TESTS_PX_OPS_H
#define WEIR_TESTS_PX_OPS_H

#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <time.h>

/** One directory entry from po_readdir(). */
struct px_dirent {
	char pd_name[256];     /**< NUL-terminated */
	unsigned char pd_type; /**< DT_REG, DT_DIR, ... (DT_UNKNOWN when the backend cannot tell) */
};

/** Lock kinds of po_lock(). */
enum px_lock_kind {
	PX_LK_POSIX = 1, /**< fcntl F_SETLK / F_SETLKW / F_GETLK (process-owned) */
	PX_LK_OFD,       /**< fcntl F_OFD_SETLK / F_OFD_SETLKW / F_OFD_GETLK (open-file-owned) */
	PX_LK_FLOCK,     /**< flock(2): fl_type F_RDLCK = LOCK_SH, F_WRLCK = LOCK_EX, F_UNLCK = LOCK_UN */
};

/** Backend properties, po_flags. */
#define PX_BE_ROOTED 0x1u /**< "/" is the filesystem's root (".." of "/" is "/") */
#define PX_BE_WEIR 0x2u   /**< the libweir backend (Weir-only checks may run) */
#define PX_BE_CREDS 0x4u  /**< po_set_cred works */

/**
 * The operations. A NULL entry is an operation the backend does not have
 * (for libweir: the weir.h function has not landed yet); cases test for it
 * with px_need() and are reported as skipped.
 */
struct px_ops {
	const char *po_name; /**< "libweir", "local" */
	unsigned po_flags;   /**< PX_BE_* */
	void *po_priv;       /**< the backend's state */

	/* ---- files */
	/** open(2): a new fd >= 0 or -errno. */
	int (*po_open)(const struct px_ops *o, const char *path, int flags, mode_t mode);
	int (*po_close)(const struct px_ops *o, int fd);
	ssize_t (*po_read)(const struct px_ops *o, int fd, void *buf, size_t len);
	ssize_t (*po_write)(const struct px_ops *o, int fd, const void *buf, size_t len);
	ssize_t (*po_pread)(const struct px_ops *o, int fd, void *buf, size_t len, int64_t off);
	ssize_t (*po_pwrite)(const struct px_ops *o, int fd, const void *buf, size_t len,
			     int64_t off);
	int64_t (*po_lseek)(const struct px_ops *o, int fd, int64_t off, int whence);
	int (*po_fsync)(const struct px_ops *o, int fd);
	int (*po_fdatasync)(const struct px_ops *o, int fd);
	int (*po_ftruncate)(const struct px_ops *o, int fd, int64_t size);
	int (*po_truncate)(const struct px_ops *o, const char *path, int64_t size);
	int (*po_fstat)(const struct px_ops *o, int fd, struct stat *st);
	/** fallocate(2): mode 0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE|FALLOC_FL_KEEP_SIZE. */
	int (*po_fallocate)(const struct px_ops *o, int fd, int mode, int64_t off, int64_t len);
	/** openat(2) relative to \a dirfd, an fd of a directory from po_open(O_DIRECTORY). */
	int (*po_openat)(const struct px_ops *o, int dirfd, const char *path, int flags,
			 mode_t mode);

	/* ---- namespace */
	int (*po_stat)(const struct px_ops *o, const char *path, struct stat *st);
	int (*po_lstat)(const struct px_ops *o, const char *path, struct stat *st);
	int (*po_mkdir)(const struct px_ops *o, const char *path, mode_t mode);
	int (*po_rmdir)(const struct px_ops *o, const char *path);
	int (*po_unlink)(const struct px_ops *o, const char *path);
	int (*po_rename)(const struct px_ops *o, const char *oldpath, const char *newpath);
	/** renameat2(2) flags: RENAME_NOREPLACE, RENAME_EXCHANGE. */
	int (*po_rename2)(const struct px_ops *o, const char *oldpath, const char *newpath,
			  unsigned flags);
	int (*po_link)(const struct px_ops *o, const char *oldpath, const char *newpath);
	int (*po_symlink)(const struct px_ops *o, const char *target, const char *linkpath);
	/** readlink(2): bytes placed (not NUL-terminated) or -errno. */
	ssize_t (*po_readlink)(const struct px_ops *o, const char *path, char *buf, size_t len);
	int (*po_mknod)(const struct px_ops *o, const char *path, mode_t mode, dev_t dev);

	/* ---- attributes */
	int (*po_chmod)(const struct px_ops *o, const char *path, mode_t mode);
	int (*po_chown)(const struct px_ops *o, const char *path, uid_t uid, gid_t gid);
	/** utimensat(2) without flags: ts[0] atime, ts[1] mtime; UTIME_NOW, UTIME_OMIT. */
	int (*po_utimens)(const struct px_ops *o, const char *path, const struct timespec ts[2]);
	/** access(2): F_OK or R_OK|W_OK|X_OK, checked with the current credentials. */
	int (*po_access)(const struct px_ops *o, const char *path, int mode);
	ssize_t (*po_getxattr)(const struct px_ops *o, const char *path, const char *name,
			       void *buf, size_t len);
	/** setxattr(2) flags: 0, XATTR_CREATE, XATTR_REPLACE. */
	int (*po_setxattr)(const struct px_ops *o, const char *path, const char *name,
			   const void *val, size_t len, int flags);
	ssize_t (*po_listxattr)(const struct px_ops *o, const char *path, char *buf, size_t len);
	int (*po_removexattr)(const struct px_ops *o, const char *path, const char *name);

	/* ---- directories */
	/** A directory stream >= 0 or -errno. */
	int (*po_opendir)(const struct px_ops *o, const char *path);
	/** 1 with \a ent filled, 0 at the end, or -errno. "." and ".." are entries too. */
	int (*po_readdir)(const struct px_ops *o, int dh, struct px_dirent *ent);
	int (*po_closedir)(const struct px_ops *o, int dh);
	/** telldir(3): an opaque position >= 0, or -errno. */
	int64_t (*po_telldir)(const struct px_ops *o, int dh);
	int (*po_seekdir)(const struct px_ops *o, int dh, int64_t pos);

	/* ---- locks */
	/**
	 * Byte-range or whole-file lock. \a cmd is F_SETLK, F_SETLKW or F_GETLK
	 * (for PX_LK_OFD the matching F_OFD_* is used; for PX_LK_FLOCK F_GETLK is
	 * invalid and F_SETLK means LOCK_NB). \return 0 or -errno (-EAGAIN when
	 * a non-blocking lock conflicts); F_GETLK fills \a fl.
	 */
	int (*po_lock)(const struct px_ops *o, int fd, enum px_lock_kind kind, int cmd,
		       struct flock *fl);

	/* ---- filesystem */
	int (*po_statfs)(const struct px_ops *o, const char *path, struct statvfs *sv);
	/**
	 * Make later calls (not descriptors already open) run as \a uid / \a gid
	 * with no supplementary groups; (0, 0) returns to root. Only with
	 * PX_BE_CREDS.
	 */
	int (*po_set_cred)(const struct px_ops *o, uid_t uid, gid_t gid);
	/**
	 * Weir only (NULL elsewhere): default layout of the existing directory
	 * \a path, like weir_setstripe(); count (uint32_t)-1 = every OST.
	 */
	int (*po_stripe_dir)(const struct px_ops *o, const char *path, uint32_t count,
			     uint64_t size);
	/**
	 * Drop every connection and thread (libweir: unmount, closing whatever
	 * is still open) so the process may fork(); the next call mounts again.
	 */
	void (*po_detach)(const struct px_ops *o);
};

struct th_cluster;

/** Where the libweir backend finds its cluster (set by the runner before forking). */
struct px_weir_env {
	const char *pwe_mds_addr;       /**< "127.0.0.1:PORT" */
	struct th_cluster *pwe_cluster; /**< for OST object probes (th_ost_obj_getattr) */
};

/**
 * The libweir backend on the cluster of \a env. The returned vtable is
 * static; the mount is made in each process at its first call.
 */
const struct px_ops *px_ops_libweir(const struct px_weir_env *env);

/**
 * Weir-only functions that libweir has not declared in weir.h with the
 * signature px_ops_libweir.c expects (declared differently: the adapter needs
 * updating), as "weir_a weir_b"; "" when none.
 */
const char *px_weir_mismatched(void);

/** Does weir_lseek() take SEEK_DATA / SEEK_HOLE (weir.h says so)? */
bool px_weir_has_seek_data(void);

/**
 * Remember the FID and OST objects of the libweir file \a path (it must
 * exist), for px_weir_objects_existing() after it is unlinked. Weir only.
 * \param[out] nr_objs  Objects in its layout.
 * \return a small id >= 0, or -errno.
 */
int px_weir_objects_remember(const struct px_ops *o, const char *path, int *nr_objs);

/** How many objects of remembered file \a id exist on the OSTs now. \return count or -errno. */
int px_weir_objects_existing(const struct px_ops *o, int id);

/**
 * Wait up to \a timeout_ms for every object of remembered file \a id to
 * be gone from the OSTs. \return the number still there at the end (0 =
 * all destroyed), or -errno.
 */
int px_weir_objects_gone(const struct px_ops *o, int id, unsigned timeout_ms);

/**
 * The local backend on directory \a root (absolute). With \a chrooted the
 * calling process has already chroot()ed there and paths are passed as
 * they are (PX_BE_ROOTED); otherwise \a root is prefixed to every path.
 * PX_BE_CREDS is set when the process runs as root.
 */
const struct px_ops *px_ops_local(const char *root, bool chrooted);

#endif /* WEIR_TESTS_PX_OPS_H */
