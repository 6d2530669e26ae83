/*
 * weir/weir.h - libweir, the Weir client library.
 *
 * A POSIX-shaped API over a Weir filesystem: metadata calls go to the MDS,
 * file data goes straight to the OSTs that hold it, striped by the file's
 * RAID-0 layout, with many RPCs in flight.
 *
 * Conventions for every call:
 *  - Return 0 (or a byte count) on success, a negative errno on failure;
 *    errno is not used.
 *  - Paths are absolute within the filesystem ("/a/b"); a path without a
 *    leading '/' is taken from the root too. Names are at most 255 bytes,
 *    paths at most 4095.
 *  - Offsets and lengths are bytes; times are nanoseconds since the epoch.
 *  - Errors common to every call that talks to a server:
 *      -ETIMEDOUT   no answer within the mount's rpc_timeout_ms;
 *      -ECONNRESET  the server's connection broke mid-call;
 *      -ECONNREFUSED / -EHOSTUNREACH  the server cannot be reached;
 *      -ENOMEM      out of memory;
 *      -EPROTO      a malformed reply.
 *  - Thread safety: a weir_fs_t and the handles made from it may be used by
 *    many threads at once, except where a call says otherwise.
 *  - libweir never prints to stdout/stderr. Set WEIR_LOG=/path/file (or
 *    "stderr") and WEIR_LOG_LEVEL=error|warn|notice|info|debug to see logs.
 */
#ifndef WEIR_WEIR_H
#define WEIR_WEIR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A mounted filesystem: connections to its MDS and OSSs. */
typedef struct weir_fs weir_fs_t;
/** An open file. */
typedef struct weir_file weir_file_t;
/** An open directory stream. */
typedef struct weir_dir weir_dir_t;

/** A file identifier: [seq:oid], printed as Lustre does "[0x200000400:0x1:0x0]". */
typedef struct {
	uint64_t seq;
	uint64_t oid;
} weir_fid_t;

/** Largest stripe count of one file. */
#define WEIR_MAX_STRIPES 128

/** Options for weir_mount_with(); zero fields take defaults. */
struct weir_mount_opts {
	size_t wmo_size;            /**< sizeof(struct weir_mount_opts) */
	uint32_t wmo_rpc_timeout_ms; /**< per RPC; default 30000 */
	uint32_t wmo_rpc_max_bytes;  /**< largest data RPC, bytes; 1..16 MiB, default 4 MiB */
	uint32_t wmo_max_inflight;   /**< data RPCs in flight per call; default 16 */
	uint32_t wmo_uid;            /**< credentials sent with requests; default: the process's */
	uint32_t wmo_gid;
	const char *wmo_client_name; /**< for server logs; default "libweir-<pid>" */
};

/**
 * Mount: connect to the MDS at \a mds_addr, fetch the cluster map.
 *
 * \param[in]  mds_addr  "HOST:PORT" of the MDS, e.g. "127.0.0.1:7400".
 * \param[out] fs        The mount; release with weir_umount().
 * \return 0, or:
 * \retval -EINVAL        \a mds_addr is not HOST:PORT.
 * \retval -ECONNREFUSED  nothing listens there.
 * \retval -EPROTO        the peer does not speak Weir's protocol.
 */
int weir_mount(const char *mds_addr, weir_fs_t **fs);

/**
 * Mount with options. \a opts may be NULL (defaults); its wmo_size must be
 * set to sizeof(struct weir_mount_opts) (older, smaller structs are accepted).
 * \return as weir_mount(), and -EINVAL for out-of-range options.
 */
int weir_mount_with(const char *mds_addr, const struct weir_mount_opts *opts, weir_fs_t **fs);

/**
 * Unmount: close connections and free \a fs. Files and directories still
 * open are closed first (their sizes reported to the MDS). Accepts NULL.
 * \return 0, or the first error met closing open files.
 * Thread safety: no other call may be running on \a fs.
 */
int weir_umount(weir_fs_t *fs);

/* ------------------------------------------------------------ files */

/**
 * Open (and with O_CREAT, create) a file.
 *
 * \param[in]  path   File path.
 * \param[in]  flags  O_RDONLY, O_WRONLY or O_RDWR, or'ed with O_CREAT,
 *                    O_EXCL, O_TRUNC, O_APPEND, O_DIRECTORY, O_NOFOLLOW.
 * \param[in]  mode   Permission bits of a created file.
 * \param[out] fh     The handle; release with weir_close().
 * \return 0, or:
 * \retval -ENOENT   a component is missing (without O_CREAT: the file too).
 * \retval -EEXIST   O_CREAT|O_EXCL and the path exists.
 * \retval -EISDIR   a directory opened for writing.
 * \retval -ENOTDIR  a non-final component is not a directory.
 * \retval -ENAMETOOLONG  a name over 255 bytes or a path over 4095.
 * \retval -ENOSPC   no OST is available to place a new file on.
 * A new file gets the layout of its directory's default (weir_setstripe on
 * a directory), else the filesystem default (1 stripe of 1 MiB).
 */
int weir_open(weir_fs_t *fs, const char *path, int flags, mode_t mode, weir_file_t **fh);

/** weir_open(fs, path, O_CREAT|O_WRONLY|O_TRUNC, mode, fh). */
int weir_creat(weir_fs_t *fs, const char *path, mode_t mode, weir_file_t **fh);

/**
 * Close a handle. A handle that wrote reports the file's size (glimpsed
 * from the OSTs) to the MDS. Frees \a fh even when an error is returned.
 * \return 0, or the error of that final report. Accepts NULL (returns 0).
 */
int weir_close(weir_file_t *fh);

/**
 * Read at an absolute offset.
 * \param[out] buf  Caller-owned, at least \a len bytes.
 * \return Bytes read (short only at end of file; holes read as zeros), or:
 * \retval -EBADF  \a fh is not open for reading.
 * \retval -EIO    an OST holding part of the range failed.
 * \retval -EINVAL \a off + \a len overflows a file offset.
 * Thread safety: may run concurrently on one \a fh.
 */
ssize_t weir_pread(weir_file_t *fh, void *buf, size_t len, uint64_t off);

/**
 * Write at an absolute offset. The range is split by the layout and sent to
 * every OST involved in parallel (up to wmo_rpc_max_bytes per RPC). Returns
 * once every OST has acknowledged its part (written to the object file;
 * weir_fsync() makes it durable on the device).
 * \return \a len, or:
 * \retval -EBADF   \a fh is not open for writing.
 * \retval -ENOSPC  an OST is full.
 * \retval -EFBIG   the range ends beyond 2^63-1.
 * \retval -EIO     an OST failed (part of the range may have been written).
 * Thread safety: may run concurrently on one \a fh.
 */
ssize_t weir_pwrite(weir_file_t *fh, const void *buf, size_t len, uint64_t off);

/** Read at the handle's position and advance it. Errors as weir_pread(). */
ssize_t weir_read(weir_file_t *fh, void *buf, size_t len);

/**
 * Write at the handle's position (the end of file with O_APPEND, as last
 * known to this client) and advance it. Errors as weir_pwrite().
 */
ssize_t weir_write(weir_file_t *fh, const void *buf, size_t len);

/**
 * Move the handle's position. \a whence is SEEK_SET, SEEK_CUR or SEEK_END
 * (SEEK_END glimpses the size).
 * \return The new position, or -EINVAL (negative result or bad whence).
 */
int64_t weir_lseek(weir_file_t *fh, int64_t off, int whence);

/**
 * Make the file's data durable on the OSTs (fsync of every object) and its
 * size and metadata durable on the MDS (the MDT log synced).
 * \return 0, -EIO when an OST or the MDS could not sync.
 */
int weir_fsync(weir_file_t *fh);

/**
 * Set the file's size: shrinking drops the bytes past it (they read as
 * zeros if the file grows again); growing leaves a hole.
 * \return 0, or -EBADF (not open for writing), -EFBIG (over 2^63-1).
 */
int weir_ftruncate(weir_file_t *fh, uint64_t size);

/** weir_ftruncate() by path. \return 0, or as weir_open() and weir_ftruncate(). */
int weir_truncate(weir_fs_t *fs, const char *path, uint64_t size);

/**
 * Attributes by path (symlinks are not followed in this version; Weir has
 * none yet). st_ino is the FID folded to 64 bits, st_blksize the stripe
 * size, st_size includes every completed write of every client (files open
 * for writing somewhere are glimpsed on the OSTs).
 * \param[out] st  Caller-owned.
 * \return 0, -ENOENT, -ENOTDIR.
 */
int weir_stat(weir_fs_t *fs, const char *path, struct stat *st);

/** Attributes of an open file, as weir_stat(). */
int weir_fstat(weir_file_t *fh, struct stat *st);

/** The FID of an open file. */
int weir_file_fid(weir_file_t *fh, weir_fid_t *fid);

/**
 * The FID of a path (one MDS lookup), like `lfs path2fid`.
 * \param[out] fid  Caller-owned.
 * \return 0, -ENOENT, -ENOTDIR, -EINVAL (NULL argument), -ENAMETOOLONG.
 */
int weir_path2fid(weir_fs_t *fs, const char *path, weir_fid_t *fid);

/* ------------------------------------------------------------ namespace */

/** Make a directory. \return 0, -EEXIST, -ENOENT (parent missing), -ENOTDIR. */
int weir_mkdir(weir_fs_t *fs, const char *path, mode_t mode);

/** Remove an empty directory. \return 0, -ENOENT, -ENOTDIR, -ENOTEMPTY, -EBUSY (the root). */
int weir_rmdir(weir_fs_t *fs, const char *path);

/**
 * Remove a file's name. Its objects are destroyed on the OSTs afterwards
 * (the MDS's destroy queue). \return 0, -ENOENT, -EISDIR.
 */
int weir_unlink(weir_fs_t *fs, const char *path);

/**
 * Rename atomically, replacing \a newpath if it exists (a file by a file,
 * an empty directory by a directory).
 * \return 0, -ENOENT, -EISDIR / -ENOTDIR (type mismatch), -ENOTEMPTY,
 *         -EINVAL (a directory into its own subtree), -EBUSY (the root).
 */
int weir_rename(weir_fs_t *fs, const char *oldpath, const char *newpath);

/** One directory entry. */
struct weir_dirent {
	uint64_t d_ino;     /**< FID folded to 64 bits */
	uint64_t d_off;     /**< cookie of this entry (resume point) */
	uint8_t d_type;     /**< DT_REG, DT_DIR, ... */
	weir_fid_t d_fid;
	char d_name[256];   /**< NUL-terminated */
};

/**
 * Open a directory for listing. Entries are fetched from the MDS in pages.
 * \return 0, -ENOENT, -ENOTDIR.
 */
int weir_opendir(weir_fs_t *fs, const char *path, weir_dir_t **dh);

/**
 * Next entry ("." and ".." come first).
 * \param[out] ent  Caller-owned.
 * \return 1 with \a ent filled, 0 at the end, or a negative errno.
 * Thread safety: one thread per \a dh at a time.
 */
int weir_readdir(weir_dir_t *dh, struct weir_dirent *ent);

/** Close a directory stream. Accepts NULL. \return 0. */
int weir_closedir(weir_dir_t *dh);

/**
 * Filesystem totals: blocks are f_bsize (4096) bytes, summed over the OSTs
 * that are up; files from the MDT.
 * \return 0 or a negative errno.
 */
int weir_statfs(weir_fs_t *fs, struct statvfs *sv);

/* ------------------------------------------------------------ layouts */

/** Requested striping; 0 / -1 fields take the directory or filesystem default. */
struct weir_stripe_opts {
	size_t wso_size;          /**< sizeof(struct weir_stripe_opts) */
	uint32_t wso_stripe_count; /**< objects; 0 = default; (uint32_t)-1 = all OSTs */
	uint64_t wso_stripe_size;  /**< bytes, multiple of 64 KiB; 0 = default */
	int32_t wso_stripe_offset; /**< OST index of the first object; -1 = MDS chooses */
};

/**
 * Set striping, like `lfs setstripe`: on a directory, the default layout of
 * files created in it later; on a path that does not exist, create an empty
 * file (mode 0644) with that layout.
 * \return 0, or:
 * \retval -EEXIST  \a path is an existing file (its layout is fixed).
 * \retval -EINVAL  stripe size not a multiple of 64 KiB, count over the
 *                  number of OSTs or WEIR_MAX_STRIPES, unknown OST index.
 */
int weir_setstripe(weir_fs_t *fs, const char *path, const struct weir_stripe_opts *opts);

/** One object of a file's layout. */
struct weir_obj_info {
	uint32_t woi_ost;      /**< OST index */
	uint64_t woi_size;     /**< object size on the OST, bytes (0 if not created yet) */
	uint64_t woi_blocks;   /**< 512-byte blocks allocated on the OST */
};

/** A file's layout, from weir_getstripe(). */
struct weir_layout_info {
	uint32_t wli_pattern;      /**< 1 = RAID-0 */
	uint32_t wli_stripe_size;  /**< bytes */
	uint32_t wli_stripe_count;
	uint32_t wli_gen;
	int wli_is_dir;            /**< 1: a directory's default (count 0 when none is set) */
	weir_fid_t wli_fid;
	struct weir_obj_info wli_objs[WEIR_MAX_STRIPES]; /**< wli_stripe_count of them */
	int32_t wli_stripe_offset; /**< OST index of object 0; -1 = none set (a directory's
				    *   default that lets the MDS choose) */
};

/**
 * Get a file's layout and each object's size on its OST (asked of the OSTs),
 * like `lfs getstripe`; on a directory, its default layout.
 * \param[out] info  Caller-owned.
 * \return 0, -ENOENT, -EIO (an OST did not answer for its object).
 */
int weir_getstripe(weir_fs_t *fs, const char *path, struct weir_layout_info *info);

/* ------------------------------------------------------------ targets */

/** One MDT or OST, from weir_df(). */
struct weir_target_info {
	char wti_name[16];     /**< "MDT0000", "OST0003" */
	uint32_t wti_index;
	int wti_is_mdt;
	int wti_up;            /**< 1 when heard from recently */
	uint64_t wti_total;    /**< bytes */
	uint64_t wti_free;     /**< bytes */
	uint64_t wti_avail;    /**< bytes available to unprivileged users */
	uint64_t wti_files;    /**< inodes */
	uint64_t wti_files_free;
	char wti_addr[64];     /**< server "HOST:PORT" */
};

/**
 * Space per target, like `lfs df`.
 * \param[out] tgts  Caller-owned array of \a max entries.
 * \param[out] nr    Targets that exist (may exceed \a max; only \a max filled).
 * \return 0 or a negative errno.
 */
int weir_df(weir_fs_t *fs, struct weir_target_info *tgts, size_t max, size_t *nr);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_WEIR_H */
