/*
 * mds/mds.h - the metadata server: interface.
 *
 * Two layers, both usable in-process (the unit tests call the namespace
 * directly; integration tests run the daemon):
 *  - struct mds_ns: one MDT's namespace on RocksDB (mds_ns_*), no network;
 *  - struct mds: the server (RPC dispatch, cluster map, group commit,
 *    destroy queue) around one mds_ns (mds_start / mds_stop).
 * All mds_ns_* calls are thread-safe: mutations are serialised by the
 * namespace lock (docs/lock-ordering.md), reads share it.
 */
#ifndef WEIR_MDS_H
#define WEIR_MDS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/fid.h"
#include "common/layout.h"

struct mds_ns;
struct mds;

/** Inode attributes as the MDT keeps them (disk record: mds/inode.c). */
struct mds_inode {
	struct weir_fid in_fid;
	uint32_t in_mode;   /* st_mode */
	uint32_t in_uid;
	uint32_t in_gid;
	uint32_t in_nlink;
	uint32_t in_flags;  /* MDS_INODE_F_* */
	uint64_t in_size;   /* bytes, last known */
	uint64_t in_blocks; /* 512-byte blocks, last known */
	int64_t in_atime_ns;
	int64_t in_mtime_ns;
	int64_t in_ctime_ns;
	struct weir_fid in_parent; /* directories: the parent (for ".." and rename checks) */
	bool in_has_layout;        /* files: always; directories: a default is set */
	struct weir_layout in_layout;
};

/** Some client has (or may have had, before a restart) the file open for writing. */
#define MDS_INODE_F_SIZE_STALE 0x1u

/** Filesystem-wide defaults for new files. */
struct mds_ns_conf {
	const char *nc_path;          /* MDT directory (the RocksDB database) */
	uint32_t nc_def_stripe_count; /* objects per new file, default 1 */
	uint32_t nc_def_stripe_size;  /* bytes, default 1 MiB */
	uint32_t nc_mdt_index;        /* 0 */
};

/**
 * Open (creating on first use) the MDT at nc_path: RocksDB with the column
 * families of DESIGN.md, the root directory, the FID sequence. Orphans left
 * by a previous run (open-unlinked files) are moved to the destroy queue.
 * \return 0, -EIO (RocksDB refused: the message is logged), -ENOMEM.
 */
int mds_ns_open(const struct mds_ns_conf *conf, struct mds_ns **out);
/** Close; every write so far is synced first. Accepts NULL. */
void mds_ns_close(struct mds_ns *ns);

/** Resolve \a path (relative to directory \a at, or the root when NULL). -ENOENT, -ENOTDIR, -ENAMETOOLONG. */
int mds_ns_lookup(struct mds_ns *ns, const struct weir_fid *at, const char *path,
		  struct mds_inode *out);
/** Attributes by FID. -ENOENT (also -ESTALE never: an unknown FID is -ENOENT). */
int mds_ns_getattr(struct mds_ns *ns, const struct weir_fid *fid, struct mds_inode *out);

/** Set-attribute request: MDS_SA_* bits say which fields apply. */
struct mds_setattr {
	uint32_t sa_valid;
	uint32_t sa_mode;
	uint32_t sa_uid;
	uint32_t sa_gid;
	uint64_t sa_size;
	int64_t sa_atime_ns;
	int64_t sa_mtime_ns;
};
#define MDS_SA_MODE 0x1u
#define MDS_SA_UID 0x2u
#define MDS_SA_GID 0x4u
#define MDS_SA_SIZE 0x8u
#define MDS_SA_ATIME 0x10u
#define MDS_SA_MTIME 0x20u
/** Apply \a sa; ctime becomes now; a size change also sets mtime. -ENOENT, -EISDIR (size of a dir). */
int mds_ns_setattr(struct mds_ns *ns, const struct weir_fid *fid, const struct mds_setattr *sa,
		   struct mds_inode *out);

/** Chooses OSTs for a new file's layout (the cluster map does this in the server). */
typedef int (*mds_ost_chooser_t)(void *arg, struct weir_layout *lo, int32_t stripe_offset);

/** Open flags, the wire's OpenFlag bits. */
#define MDS_OF_READ 0x1u
#define MDS_OF_WRITE 0x2u
#define MDS_OF_CREAT 0x4u
#define MDS_OF_EXCL 0x8u
#define MDS_OF_TRUNC 0x10u
#define MDS_OF_APPEND 0x20u
#define MDS_OF_DIRECTORY 0x40u
#define MDS_OF_NOFOLLOW 0x80u

/** Requested layout for a new file: zeros inherit the directory/filesystem default. */
struct mds_layout_req {
	uint32_t lr_stripe_count; /* 0 = inherit; UINT32_MAX = all OSTs */
	uint32_t lr_stripe_size;  /* bytes, 0 = inherit */
	int32_t lr_stripe_offset; /* first OST, -1 = choose */
};

/**
 * Open or create. For a new file the layout is: the request's, else the
 * parent's default, else the filesystem's; \a choose fills the OST list.
 * With MDS_OF_TRUNC on an existing file the size becomes 0 (the caller
 * truncates the objects). With MDS_OF_WRITE the inode is marked
 * MDS_INODE_F_SIZE_STALE until mds_ns_close_file() of the last writer.
 * \param[out] created  true when this call created the file.
 * \return 0, -ENOENT, -EEXIST, -EISDIR, -ENOTDIR, -ENAMETOOLONG, -EINVAL
 *         (bad layout), -ENOSPC (no OST up), -EIO.
 */
int mds_ns_open_file(struct mds_ns *ns, const struct weir_fid *at, const char *path,
		     uint32_t flags, uint32_t mode, const struct mds_layout_req *lr,
		     mds_ost_chooser_t choose, void *choose_arg, struct mds_inode *out,
		     bool *created);

/**
 * A handle on \a fid closed. \a was_writer: it had been opened with
 * MDS_OF_WRITE; \a has_size: \a size / \a blocks are the glimpsed values.
 * The last writer's close clears MDS_INODE_F_SIZE_STALE. The last close of
 * an unlinked file queues its objects for destruction.
 */
int mds_ns_close_file(struct mds_ns *ns, const struct weir_fid *fid, bool was_writer,
		      bool has_size, uint64_t size, uint64_t blocks);

/** Record a glimpsed size (fsync) without closing. -ENOENT. */
int mds_ns_update_size(struct mds_ns *ns, const struct weir_fid *fid, uint64_t size,
		       uint64_t blocks);

/** mkdir. -EEXIST, -ENOENT, -ENOTDIR, -ENAMETOOLONG. */
int mds_ns_mkdir(struct mds_ns *ns, const struct weir_fid *at, const char *path, uint32_t mode,
		 struct mds_inode *out);

/** unlink (is_dir false) or rmdir (true). -ENOENT, -EISDIR, -ENOTDIR, -ENOTEMPTY, -EBUSY (root). */
int mds_ns_unlink(struct mds_ns *ns, const struct weir_fid *at, const char *path, bool is_dir);

/** rename, replacing the target. -ENOENT, -EISDIR, -ENOTDIR, -ENOTEMPTY, -EINVAL, -EBUSY. */
int mds_ns_rename(struct mds_ns *ns, const struct weir_fid *at, const char *src, const char *dst);

/** One readdir entry. */
struct mds_dirent {
	char de_name[256];
	struct weir_fid de_fid;
	uint8_t de_type;     /* DT_* */
	uint64_t de_cookie;  /* resume after this entry */
};

/**
 * List directory \a dir after \a cookie (0 = from the start), in hash order,
 * up to \a max entries (more only to finish a run of equal hashes, so a
 * cookie never splits one). "." and ".." are not returned.
 * \param[out] ents  Caller-owned array of \a cap entries (\a cap >= \a max + 16).
 * \param[out] nr    Entries filled. \param[out] eof  true when the listing ended.
 * \return 0, -ENOENT, -ENOTDIR.
 */
int mds_ns_readdir(struct mds_ns *ns, const struct weir_fid *dir, uint64_t cookie, uint32_t max,
		   struct mds_dirent *ents, uint32_t cap, uint32_t *nr, bool *eof);

/**
 * Set a layout: on a directory, its default for new files (count 0 clears
 * it); on a missing path with \a create, a new empty file with that layout.
 * \return 0, -EEXIST (an existing file), -ENOENT, -EINVAL.
 */
int mds_ns_set_layout(struct mds_ns *ns, const struct weir_fid *at, const char *path,
		      const struct mds_layout_req *lr, bool create, uint32_t mode,
		      mds_ost_chooser_t choose, void *choose_arg, struct mds_inode *out);

/** Inodes in use (an estimate from RocksDB). */
uint64_t mds_ns_nr_inodes(struct mds_ns *ns);

/**
 * Sequence number of the last write made durable-on-reply (in the WAL).
 * mds_ns_sync() syncs the WAL to the device and returns the sequence it covers.
 */
uint64_t mds_ns_write_seq(struct mds_ns *ns);
int mds_ns_sync(struct mds_ns *ns, uint64_t *synced_seq);

/** One record of the destroy queue: the objects of a removed file. */
struct mds_destroy_rec {
	struct weir_fid dr_fid;
	struct weir_layout dr_layout;
};
/**
 * Up to \a max records from the destroy queue, oldest-keyed first.
 * \return number filled (>= 0) or a negative errno.
 */
int mds_ns_destroy_peek(struct mds_ns *ns, struct mds_destroy_rec *recs, int max);
/** Remove a record once every object is destroyed. */
int mds_ns_destroy_done(struct mds_ns *ns, const struct weir_fid *fid);

/** Read/write a small value in the cluster column family (the cluster map). */
int mds_ns_cluster_get(struct mds_ns *ns, const void *key, size_t klen, void *val, size_t cap,
		       size_t *vlen);
int mds_ns_cluster_put(struct mds_ns *ns, const void *key, size_t klen, const void *val,
		       size_t vlen);
/** Iterate the cluster CF: \a cb per key with prefix \a pfx. */
int mds_ns_cluster_scan(struct mds_ns *ns, const void *pfx, size_t plen,
			void (*cb)(void *arg, const void *k, size_t kl, const void *v, size_t vl),
			void *arg);

/* ------------------------------------------------------------ server */

struct mds_conf {
	const char *mc_mdt_dir;
	const char *mc_listen;         /* HOST:PORT */
	uint32_t mc_threads;           /* event loops */
	uint64_t mc_commit_interval_ms;
	uint32_t mc_def_stripe_count;
	uint32_t mc_def_stripe_size;
	const char *mc_fsname;
	uint32_t mc_ost_timeout_s;     /* an OST not heard from in this long is down */
};

/** Start serving. \return 0 or a negative errno (logged). */
int mds_start(const struct mds_conf *conf, struct mds **out);
/** The bound TCP port. */
uint16_t mds_port(const struct mds *m);
/** Stop: sync the MDT, stop threads, close. */
void mds_stop(struct mds *m);

#endif /* WEIR_MDS_H */
