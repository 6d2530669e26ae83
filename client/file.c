/*
 * client/file.c - open files: open/close, the file position, lseek, fsync,
 * truncate, fstat and the glimpse (the exact size asked of the OSTs).
 *
 * An open handle holds the file's layout from MDS_OPEN (a layout never
 * changes while the file has data) and the MDS's open handle id. A handle
 * opened for writing reports the glimpsed size to the MDS at close. The MDS
 * calls (open, close, sync, setattr, the unlink of an undone create) are
 * client/mdc.c's.
 *
 * HSM (client/hsm.c): a handle of a released file (AF_RELEASED in the open
 * reply) has f_released; writes, fallocate and truncates to a non-zero size
 * wait for the whole file to be restored first. An O_TRUNC open or a
 * truncate to 0 needs no data; the MDS answers -EAGAIN while the released
 * objects are still in its destroy queue, and those are retried with
 * backoff. wc_hsm_open() handles (f_hsm, the copytool's) never wait and
 * report nothing at close or fsync.
 *
 * Creates during an OSS outage. The MDS counts an OST up until it has
 * missed heartbeats for its --ost-timeout, so a create in that time may be
 * placed on an OST whose OSS is gone: the application would get a file
 * whose writes and reads fail (an empty file left behind). So an open that
 * created a regular file checks that the OSS of each OST of its layout
 * answers (PING, WC_CREATE_PING_MS; skipped for an OSS that answered one in
 * the last WC_CREATE_PING_FRESH_MS). When one does not (it cannot be
 * reached, or the connection broke), the new file is closed and unlinked,
 * and the create is made again after a backoff (50 ms doubling to 1 s): the
 * MDS's round robin places it on other OSTs, the OSS comes back, or, once
 * the OST has been silent for --ost-timeout, the MDS no longer places files
 * on it. After the mount's rpc_timeout_ms of this the open fails with -EIO
 * and leaves no file. (A create whose OSS dies within the freshness window
 * of a check is not caught here: its writes meet the outage as any write.)
 */
#define _GNU_SOURCE
#include "client_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

int wc_glimpse(struct weir_fs *fs, const struct weir_fid *fid, const struct weir_layout *lo,
	       uint64_t base_size, uint64_t *size, uint64_t *blocks)
{
	struct wc_objop ops[WEIR_LAYOUT_MAX_STRIPES];
	uint64_t sz = base_size, blk = 0;
	int rc;

	memset(ops, 0, sizeof(ops));
	rc = wc_obj_run(fs, fid, lo, WEIR__WIRE_OP__OST_GETATTR, ops);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < lo->lo_stripe_count; i++) {
		if (!ops[i].oo_exists)
			continue;
		sz = WEIR_MAX(sz, weir_layout_file_size(lo, i, ops[i].oo_size));
		blk += ops[i].oo_blocks;
	}
	*size = sz;
	*blocks = blk;
	return 0;
}

int wc_file_size(struct weir_file *fh, uint64_t *size, uint64_t *blocks, uint64_t *epoch)
{
	struct wc_attr a;
	int rc = wc_getattr(fh->f_fs, &fh->f_fid, &a, NULL);
	if (rc)
		return rc;
	if (epoch)
		*epoch = a.a_size_epoch;
	return wc_attr_size(fh->f_fs, &a, &fh->f_layout, fh->f_write, size, blocks);
}

/* The bitmap of the objects \a fh wrote into \a out; \return its bytes (0: none). */
static size_t wc_objs_written(const struct weir_file *fh, uint8_t *out)
{
	size_t n = 0;
	for (size_t i = 0; i < sizeof(fh->f_objs_written); i++) {
		out[i] = atomic_load(&((struct weir_file *)fh)->f_objs_written[i]);
		if (out[i])
			n = i + 1;
	}
	return n;
}

/* MDS_SETATTR of the size alone, once the objects are truncated to \a size bytes. */
static int wc_mds_set_size(struct weir_fs *fs, const struct weir_fid *fid, uint64_t size)
{
	struct wc_mdc_sattr sa = { .sa_valid = WEIR__SETATTR_VALID__SA_SIZE, .sa_size = size };
	return wc_mdc_setattr(fs, WC_MDC_FID(fid), &sa, NULL, NULL);
}

/*
 * MDS_OPEN; fills the handle's FID, handle id, layout and type.
 * \param[out] truncated  O_TRUNC dropped what the objects may hold (AF_TRUNCATED).
 */
static int wc_mds_open(struct weir_fs *fs, const struct weir_fid *at, const char *path,
		       int flags, mode_t mode, struct weir_file *fh, bool *created,
		       bool *truncated)
{
	struct wc_attr a;
	struct wc_mdc_opened o = { .mo_attr = &a, .mo_layout = &fh->f_layout };
	int rc;

	rc = wc_mdc_open(fs, WC_MDC_PATH(at, path, 0), flags, mode, fh->f_hsm, &o);
	fh->f_epoch = o.mo_epoch;
	if (rc)
		return rc;
	memcpy(fh->f_objs_known, o.mo_objs, sizeof(fh->f_objs_known));
	fh->f_handle = o.mo_handle;
	fh->f_fid = a.a_fid;
	*created = o.mo_created;
	fh->f_created = o.mo_created;
	fh->f_open_attr = a;
	fh->f_is_dir = S_ISDIR(a.a_mode);
	fh->f_dir_parent = o.mo_dir_parent;
	*truncated = a.a_flags & WEIR__ATTR_FLAG__AF_TRUNCATED;
	/* a write by anyone but root drops setuid, and setgid (the kernel's
	 * file_remove_privs); the MDS picks the bits on SA_KILL_SUID. The
	 * caller is the open's (weir_fid_cred_set() under weir-fuse). */
	bool privs = a.a_mode & (S_ISUID | S_ISGID);
	atomic_store(&fh->f_kill_suid,
		     fh->f_write && S_ISREG(a.a_mode) && o.mo_uid != 0 && privs && !fh->f_hsm);
	/* HSM: reads of a released file wait for their range (client/hsm.c) */
	atomic_store(&fh->f_released, S_ISREG(a.a_mode) && wc_attr_released(&a) && !fh->f_hsm);
	atomic_store(&fh->f_rel_size, a.a_size);
	atomic_store(&fh->f_size_hint, S_ISREG(a.a_mode) &&
				!(a.a_flags & WEIR__ATTR_FLAG__AF_SIZE_STALE) ?
			a.a_size : UINT64_MAX);
	if (!fh->f_is_dir && !S_ISREG(a.a_mode)) {
		rc = -EOPNOTSUPP;
	} else if (fh->f_is_dir && fh->f_write) {
		rc = -EISDIR;
	} else if (!fh->f_is_dir && fh->f_layout.lo_stripe_count == 0) {
		WEIR_LOG_ERROR("path=%s fid=" WEIR_FID_F ": regular file without a layout", path,
			       WEIR_FID_P(&a.a_fid));
		rc = -EPROTO;
	}
	if (fh->f_is_dir)
		memset(&fh->f_layout, 0, sizeof(fh->f_layout));
	if (rc)
		wc_mdc_close(fs, &fh->f_fid, fh->f_handle, NULL, false, false);
	return rc;
}

#define WC_CREATE_PING_MS 2000
#define WC_CREATE_PING_FRESH_MS 200

/* Errors that say an OSS is not serving (rather than refusing one request). */
static bool wc_oss_unreachable(int rc)
{
	return rc == -ECONNREFUSED || rc == -EHOSTUNREACH || rc == -ENETUNREACH ||
	       rc == -ETIMEDOUT || rc == -ECONNRESET || rc == -ECONNABORTED || rc == -EPIPE ||
	       rc == -ENOTCONN || rc == -EHOSTDOWN || rc == -ESHUTDOWN;
}

/* The OSS of OST \a idx in the mount's map, or NULL (as mount.c's wc_ost_find). */
static struct wc_oss *wc_create_oss_of(struct weir_fs *fs, uint32_t idx)
{
	struct wc_oss *os = NULL;

	pthread_mutex_lock(&fs->fs_lock);
	for (size_t i = 0; i < fs->fs_nr_osts && !os; i++)
		if (fs->fs_osts[i].ost_index == idx)
			os = fs->fs_osts[i].ost_oss;
	pthread_mutex_unlock(&fs->fs_lock);
	return os;
}

/*
 * Does the OSS of each OST of \a lo answer? \return 0, or the -errno of the
 * first that does not (wc_oss_unreachable()), *bad its OST.
 */
static int wc_create_check_osts(struct weir_fs *fs, const struct weir_layout *lo, uint32_t *bad)
{
	for (uint32_t i = 0; i < lo->lo_stripe_count; i++) {
		struct wc_oss *os = wc_create_oss_of(fs, lo->lo_osts[i]);
		uint64_t now = weir_now_ns();
		if (os && now - atomic_load(&os->os_ping_ok_ns) < WC_CREATE_PING_FRESH_MS * 1000000ULL)
			continue;
		struct net_conn *conn = NULL;
		int rc = wc_ost_conn(fs, lo->lo_osts[i], &conn, NULL);
		if (!rc) {
			struct net_call call;
			net_call_init(&call, WEIR__WIRE_OP__PING, NULL);
			call.nc_timeout_ms = WEIR_MIN(fs->fs_rpc_timeout_ms, WC_CREATE_PING_MS);
			rc = net_call_run(conn, &call);
			net_call_fini(&call);
		}
		if (rc && wc_oss_unreachable(rc)) {
			*bad = lo->lo_osts[i];
			return rc;
		}
		os = os ? os : wc_create_oss_of(fs, lo->lo_osts[i]);
		if (os)
			atomic_store(&os->os_ping_ok_ns, weir_now_ns());
	}
	return 0;
}

/* Unlink the file \a fh has just created at (\a at, \a path), and close it. */
static void wc_create_undo(struct weir_fs *fs, const struct weir_fid *at, const char *path,
			   struct weir_file *fh)
{
	wc_mdc_close(fs, &fh->f_fid, fh->f_handle, NULL, false, false);
	/* by FID: never another client's file put under the name since */
	int rc = wc_mdc_unlink(fs, WC_MDC_PATH(at, path, 0), false, &fh->f_fid);
	if (rc == -ESTALE || rc == -ENOENT)
		WEIR_LOG_INFO("op=create path=%s fid=" WEIR_FID_F " rc=%d: the file just made is"
			      " no longer under its name; nothing removed", path,
			      WEIR_FID_P(&fh->f_fid), rc);
	else if (rc)
		WEIR_LOG_WARN("op=create path=%s fid=" WEIR_FID_F " rc=%d: cannot remove the file"
			      " just made on an OST that is not serving", path,
			      WEIR_FID_P(&fh->f_fid), rc);
}

/*
 * wc_mds_open(), and for a create, again until the new file's OSTs serve
 * (the DESIGN above). \return as wc_mds_open(), or -EIO when no placement
 * on serving OSTs came within the mount's rpc timeout (no file is left).
 */
static int wc_mds_open_serving(struct weir_fs *fs, const struct weir_fid *at, const char *path,
			       int flags, mode_t mode, struct weir_file *fh, bool *created,
			       bool *truncated)
{
	uint64_t start = weir_now_ns();
	uint32_t delay_ms = 50, tries = 0;
	for (;;) {
		int rc = wc_mds_open(fs, at, path, flags, mode, fh, created, truncated);
		if (rc || !*created || fh->f_is_dir || fh->f_hsm || !fh->f_layout.lo_stripe_count)
			return rc;
		uint32_t bad = 0;
		rc = wc_create_check_osts(fs, &fh->f_layout, &bad);
		if (!rc) {
			if (tries)
				WEIR_LOG_NOTICE("op=create path=%s: placed on serving OSTs after %u"
						" tries", path, tries + 1);
			return 0;
		}
		wc_create_undo(fs, at, path, fh);
		tries++;
		uint64_t ms = (weir_now_ns() - start) / 1000000;
		if (ms >= fs->fs_rpc_timeout_ms) {
			WEIR_LOG_WARN("op=create path=%s ost=%u rc=%d: the new file's OST is not"
				      " serving, and no other placement came in %llu ms; no file"
				      " left: -EIO", path, bad, rc, (unsigned long long)ms);
			return -EIO;
		}
		if (tries == 1)
			WEIR_LOG_INFO("op=create path=%s ost=%u rc=%d: placed on an OST that is not"
				      " serving; removed, creating again", path, bad, rc);
		if (wc_cancel_check())
			return -EINTR;
		usleep(delay_ms * 1000);
		delay_ms = WEIR_MIN(delay_ms * 2, 1000);
	}
}

int weir_open(weir_fs_t *fs, const char *path, int flags, mode_t mode, weir_file_t **fhp)
{
	return wc_file_open_at(fs, NULL, path, flags, mode, fhp);
}

/* The one open: \a hsm for wc_hsm_open() (OF_HSM, root credentials). */
static int wc_file_open(struct weir_fs *fs, const struct weir_fid *at, const char *path, int flags,
			mode_t mode, bool hsm, struct weir_file **fhp)
{
	struct weir_file *fh;
	bool created = false, truncated = false;
	uint64_t start = 0;
	uint32_t delay_ms = 0;
	int rc;

	if (!fs || !fhp)
		return -EINVAL;
	*fhp = NULL;
	/* "" with \a at names \a at itself (weir_fid_open, client/fidops.c) */
	rc = (at && path && !*path) ? 0 : wc_path_check(path);
	if (rc)
		return rc;
	if ((flags & O_ACCMODE) == O_ACCMODE)
		return -EINVAL;
	fh = calloc(1, sizeof(*fh));
	if (!fh)
		return -ENOMEM;
	fh->f_fs = fs;
	fh->f_flags = flags;
	fh->f_read = (flags & O_ACCMODE) != O_WRONLY;
	fh->f_write = (flags & O_ACCMODE) != O_RDONLY;
	fh->f_append = (flags & O_APPEND) != 0;
	fh->f_hsm = hsm;
	pthread_mutex_init(&fh->f_pos_lock, NULL);

	for (;;) {
		rc = wc_mds_open_serving(fs, at, path, flags, mode, fh, &created, &truncated);
		/* O_TRUNC of a released file whose objects are still being
		 * destroyed: the MDS asks to come back (client/hsm.c) */
		if (rc != -EAGAIN || !(flags & O_TRUNC))
			break;
		if (!start) {
			start = weir_now_ns();
			WEIR_LOG_INFO("op=open path=%s: released file, old objects still being"
				      " destroyed (EAGAIN); retrying", path);
		}
		if (!wc_hsm_again(start, &delay_ms)) {
			WEIR_LOG_WARN("op=open path=%s flags=%#x: MDS still says EAGAIN after 60 s",
				      path, flags);
			break;
		}
	}
	if (rc)
		goto out_free;
	if ((flags & O_TRUNC) && truncated && !created && !fh->f_is_dir && fh->f_write) {
		/* The MDS set the size to 0 and the objects may hold bytes: drop
		 * them, then set the size again: as for ftruncate, the MDS hears
		 * of the truncate after the objects, so a size another writer
		 * glimpsed before it is not taken (mds_ns_size_epoch). An empty
		 * file needs neither. */
		struct wc_objop ops[WEIR_LAYOUT_MAX_STRIPES];
		memset(ops, 0, sizeof(ops));
		rc = wc_obj_run(fs, &fh->f_fid, &fh->f_layout, WEIR__WIRE_OP__OST_TRUNCATE, ops);
		if (!rc)
			rc = wc_mds_set_size(fs, &fh->f_fid, 0);
		if (rc) {
			wc_mdc_close(fs, &fh->f_fid, fh->f_handle, NULL, false, false);
			goto out_free;
		}
	}
	pthread_mutex_lock(&fs->fs_lock);
	fh->f_next = fs->fs_files;
	if (fs->fs_files)
		fs->fs_files->f_prev = fh;
	fs->fs_files = fh;
	pthread_mutex_unlock(&fs->fs_lock);
	WEIR_LOG_DEBUG("op=open path=%s fid=" WEIR_FID_F " flags=%#x created=%d", path,
		       WEIR_FID_P(&fh->f_fid), flags, created);
	*fhp = fh;
	return 0;

out_free:
	pthread_mutex_destroy(&fh->f_pos_lock);
	free(fh);
	return rc;
}

int wc_file_open_at(struct weir_fs *fs, const struct weir_fid *at, const char *path, int flags,
		    mode_t mode, struct weir_file **fhp)
{
	return wc_file_open(fs, at, path, flags, mode, false, fhp);
}

int wc_hsm_open(struct weir_fs *fs, const struct weir_fid *fid, int flags, weir_file_t **out)
{
	if (!fs || !fid || !out)
		return -EINVAL;
	if (weir_fid_is_zero(fid)) {
		*out = NULL;
		return -EINVAL;
	}
	/* by FID: the empty path from \a fid, as weir_fid_open() */
	return wc_file_open(fs, fid, "", flags & O_ACCMODE, 0, true, out);
}

int weir_creat(weir_fs_t *fs, const char *path, mode_t mode, weir_file_t **fh)
{
	return weir_open(fs, path, O_CREAT | O_WRONLY | O_TRUNC, mode, fh);
}

int weir_close(weir_file_t *fh)
{
	struct weir_fs *fs;
	struct wc_mdc_report wr = { 0 };
	uint8_t objs[WEIR_LAYOUT_MAX_STRIPES / 8];
	int rc = 0, rc2;

	if (!fh)
		return 0;
	fs = fh->f_fs;
	pthread_mutex_lock(&fs->fs_lock);
	if (fh->f_prev)
		fh->f_prev->f_next = fh->f_next;
	else
		fs->fs_files = fh->f_next;
	if (fh->f_next)
		fh->f_next->f_prev = fh->f_prev;
	pthread_mutex_unlock(&fs->fs_lock);

	/* Only a handle that changed the data reports a size: the glimpse (an
	 * MDS getattr plus one RPC per object) would cost an empty create+close
	 * two more round trips. Other writers report their own; a writer that
	 * died is glimpsed by the MDS when its session is evicted. */
	if (fh->f_write && !fh->f_is_dir && !fh->f_hsm && atomic_load(&fh->f_mtime_ns)) {
		rc = wc_file_size(fh, &wr.mr_size, &wr.mr_blocks, &wr.mr_epoch);
		wr.mr_has_size = rc == 0;
	}
	/* A handle that changed nothing, of a process that never asked for a
	 * byte-range or flock lock (a close drops the process's locks, which
	 * other clients must see at once), is closed one-way: nothing in a
	 * reply could change what this close returns, and the MDS handles it
	 * before this client's next MDS call; it sends no reply, and this
	 * client reads none. It halves the round trips of an empty create or
	 * an open-read-close. */
	wr.mr_mtime_ns = fh->f_write && !fh->f_hsm ? atomic_load(&fh->f_mtime_ns) : 0;
	/* the objects it wrote, the copytool's too: a lost one then reads -EIO */
	wr.mr_objs_len = fh->f_write ? wc_objs_written(fh, objs) : 0;
	wr.mr_objs = objs;
	bool post = !rc && !wr.mr_has_size && !wr.mr_mtime_ns && !fh->f_hsm && !wr.mr_objs_len &&
		    atomic_load(&fs->fs_lock_token) == 0;
	/* A writer's handle on a mount that caches names (weir-fuse, whose
	 * RELEASE does not hold up the application): the reply leases the
	 * file's attributes after the close, so the stat that follows a create
	 * or a write asks no MDS (a round trip instead of a one-way message). */
	bool lease = fh->f_write && !fh->f_is_dir && !fh->f_hsm && wc_mdl_names(fs);
	/* ... unless the creator's lease (client/mdc.c) still covers the file as
	 * this handle made it and left it: a close that changed nothing then
	 * reports nothing, and what the cache holds stays (the MDS calls it
	 * back as before): an empty create is one round trip and a message */
	bool unchanged = !rc && !wr.mr_has_size && !wr.mr_mtime_ns && !wr.mr_objs_len;
	bool as_created = lease && fh->f_created && unchanged &&
			  (wc_mdl_held(fs, &fh->f_fid, NULL) & WEIR__MDL_BITS__MDL_ATTR);
	if (as_created)
		lease = false;
	if (lease)
		post = false;
	/* the copytool's handle (wc_hsm_open) reports no size and no mtime */
	/* a reader's close reports nothing (and changes nothing this mount caches) */
	rc2 = wc_mdc_close(fs, &fh->f_fid, fh->f_handle, fh->f_write && !as_created ? &wr : NULL,
			   post, lease);
	wc_lock_self_close(fh); /* the locks the MDS dropped with it (client/lock.c) */
	if (!rc)
		rc = rc2;
	if (!rc && wc_file_stale(fh))
		rc = -EIO; /* evicted since the open: the MDS had closed it already */
	if (rc)
		WEIR_LOG_WARN("op=close fid=" WEIR_FID_F " rc=%d", WEIR_FID_P(&fh->f_fid), rc);
	pthread_mutex_destroy(&fh->f_pos_lock);
	free(fh);
	return rc;
}

int wc_files_close_all(struct weir_fs *fs)
{
	int rc = 0;

	for (;;) {
		pthread_mutex_lock(&fs->fs_lock);
		struct weir_file *fh = fs->fs_files;
		pthread_mutex_unlock(&fs->fs_lock);
		if (!fh)
			break;
		int rc2 = weir_close(fh);
		if (!rc)
			rc = rc2;
	}
	return rc;
}

ssize_t weir_read(weir_file_t *fh, void *buf, size_t len)
{
	ssize_t n;

	if (!fh)
		return -EINVAL;
	pthread_mutex_lock(&fh->f_pos_lock);
	n = weir_pread(fh, buf, len, fh->f_pos);
	if (n > 0)
		fh->f_pos += (uint64_t)n;
	pthread_mutex_unlock(&fh->f_pos_lock);
	return n;
}

ssize_t weir_write(weir_file_t *fh, const void *buf, size_t len)
{
	ssize_t n;

	if (!fh)
		return -EINVAL;
	if (!fh->f_write)
		return -EBADF;
	pthread_mutex_lock(&fh->f_pos_lock);
	if (fh->f_append && len && !fh->f_is_dir) {
		/* a released file is restored before the end of file is glimpsed */
		n = wc_file_stale(fh) ? -EIO : wc_hsm_write_prep(fh);
		if (!n)
			n = wc_append_write(fh, buf, len); /* client/lock.c */
		pthread_mutex_unlock(&fh->f_pos_lock);
		return n;
	}
	n = weir_pwrite(fh, buf, len, fh->f_pos);
	if (n > 0)
		fh->f_pos += (uint64_t)n;
	pthread_mutex_unlock(&fh->f_pos_lock);
	return n;
}

int64_t weir_lseek(weir_file_t *fh, int64_t off, int whence)
{
	int64_t base;
	int64_t pos;
	int rc = 0;

	if (!fh)
		return -EINVAL;
	pthread_mutex_lock(&fh->f_pos_lock);
	switch (whence) {
	case SEEK_SET:
		base = 0;
		break;
	case SEEK_CUR:
		base = (int64_t)fh->f_pos;
		break;
	case SEEK_END: {
		uint64_t size = 0, blocks;
		rc = fh->f_is_dir ? 0 : wc_file_size(fh, &size, &blocks, NULL);
		base = (int64_t)WEIR_MIN(size, (uint64_t)WEIR_MAX_FILE_OFF);
		break;
	}
	case SEEK_DATA:
	case SEEK_HOLE: {
		/* the first data / hole at or after off, asked of every object */
		uint64_t found = 0;
		base = 0;
		if (fh->f_is_dir)
			rc = -EINVAL;
		else if (off < 0)
			rc = -ENXIO;
		else
			rc = wc_file_seek(fh, (uint64_t)off, whence, &found);
		if (!rc) {
			base = (int64_t)found;
			off = 0;
		}
		break;
	}
	default:
		rc = -EINVAL;
		base = 0;
		break;
	}
	if (!rc && (__builtin_add_overflow(base, off, &pos) || pos < 0))
		rc = -EINVAL;
	if (!rc)
		fh->f_pos = (uint64_t)pos;
	pthread_mutex_unlock(&fh->f_pos_lock);
	return rc ? rc : pos;
}

/* Errors the API lets through as they are; everything else is -EIO. */
static int wc_sync_errno(int rc)
{
	switch (rc) {
	case 0:
	case -ETIMEDOUT:
	case -ECONNRESET:
	case -ECONNREFUSED:
	case -EHOSTUNREACH:
	case -ENOMEM:
	case -EPROTO:
		return rc;
	default:
		return -EIO;
	}
}

/* fsync (\a datasync false) or fdatasync: objects in parallel, then the MDS. */
static int wc_fsync(weir_file_t *fh, bool datasync)
{
	struct wc_mdc_report r = { 0 };
	struct weir_fs *fs;
	uint8_t objs[WEIR_LAYOUT_MAX_STRIPES / 8];
	int rc;

	if (!fh)
		return -EINVAL;
	if (wc_file_stale(fh))
		return -EIO;
	fs = fh->f_fs;
	if (!fh->f_is_dir) {
		struct wc_objop ops[WEIR_LAYOUT_MAX_STRIPES];
		memset(ops, 0, sizeof(ops));
		for (uint32_t i = 0; i < fh->f_layout.lo_stripe_count; i++)
			ops[i].oo_flags = datasync ? 1 : 0; /* ObjReq.flags: 1 = data only */
		rc = wc_obj_run(fs, &fh->f_fid, &fh->f_layout, WEIR__WIRE_OP__OST_FSYNC, ops);
		if (rc)
			return wc_sync_errno(rc);
		if (fh->f_hsm && !wc_objs_written(fh, objs))
			return 0; /* the copytool's handle: the objects only, no report */
		if (fh->f_write) {
			rc = wc_file_size(fh, &r.mr_size, &r.mr_blocks, &r.mr_epoch);
			if (rc)
				return wc_sync_errno(rc);
			r.mr_has_size = true;
		}
	}
	r.mr_mtime_ns = fh->f_write && !fh->f_hsm ? atomic_load(&fh->f_mtime_ns) : 0;
	if (!fh->f_is_dir && fh->f_write) {
		r.mr_objs_len = wc_objs_written(fh, objs);
		r.mr_objs = objs;
	}
	rc = wc_mdc_sync(fs, &fh->f_fid, &r);
	return wc_sync_errno(rc);
}

int weir_fsync(weir_file_t *fh)
{
	return wc_fsync(fh, false);
}

int weir_fdatasync(weir_file_t *fh)
{
	/* The size is what the MDS needs to find the data again, so it is
	 * synced there as for fsync (one MDT log sync). */
	return wc_fsync(fh, true);
}

/*
 * Truncate to 0 of a released file: the MDS first (it clears RELEASED; it
 * answers -EAGAIN, retried here, while the released objects are still in
 * its destroy queue), then whatever a partial restore left in the objects.
 */
static int wc_ftruncate_released(struct weir_file *fh)
{
	struct wc_objop ops[WEIR_LAYOUT_MAX_STRIPES];
	struct wc_mdc_sattr sa = { .sa_valid = WEIR__SETATTR_VALID__SA_SIZE, .sa_size = 0 };
	struct weir_fs *fs = fh->f_fs;
	uint64_t start = weir_now_ns();
	uint32_t delay_ms = 0;
	int rc;

	for (;;) {
		rc = wc_mdc_setattr(fs, WC_MDC_FID(&fh->f_fid), &sa, NULL, NULL);
		if (rc != -EAGAIN)
			break;
		if (!delay_ms)
			WEIR_LOG_INFO("op=truncate fid=" WEIR_FID_F ": released file, old objects"
				      " still being destroyed (EAGAIN); retrying",
				      WEIR_FID_P(&fh->f_fid));
		if (!wc_hsm_again(start, &delay_ms)) {
			WEIR_LOG_WARN("op=truncate fid=" WEIR_FID_F ": MDS still says EAGAIN after"
				      " 60 s", WEIR_FID_P(&fh->f_fid));
			return rc;
		}
	}
	if (rc)
		return rc;
	atomic_store(&fh->f_released, false);
	memset(ops, 0, sizeof(ops));
	rc = wc_obj_run(fs, &fh->f_fid, &fh->f_layout, WEIR__WIRE_OP__OST_TRUNCATE, ops);
	if (rc)
		return rc;
	wc_file_touch(fh);
	return 0;
}

int weir_ftruncate(weir_file_t *fh, uint64_t size)
{
	struct wc_objop ops[WEIR_LAYOUT_MAX_STRIPES];
	struct weir_fs *fs;
	int rc;

	if (!fh)
		return -EINVAL;
	if (wc_file_stale(fh))
		return -EIO;
	if (!fh->f_write)
		return -EBADF;
	if (fh->f_is_dir)
		return -EISDIR;
	if (size > (uint64_t)WEIR_MAX_FILE_OFF)
		return -EFBIG;
	if (atomic_load(&fh->f_released) && !fh->f_hsm) {
		/* HSM: to 0 needs no data; any other size keeps some: restore first */
		if (size == 0)
			return wc_ftruncate_released(fh);
		rc = wc_hsm_write_prep(fh);
		if (rc)
			return rc;
	}
	fs = fh->f_fs;
	memset(ops, 0, sizeof(ops));
	for (uint32_t i = 0; i < fh->f_layout.lo_stripe_count; i++)
		ops[i].oo_size = weir_layout_obj_lower_bound(&fh->f_layout, i, size);
	rc = wc_obj_run(fs, &fh->f_fid, &fh->f_layout, WEIR__WIRE_OP__OST_TRUNCATE, ops);
	if (rc) {
		wc_file_touch(fh); /* some objects may have changed all the same */
		return rc;
	}
	rc = wc_mds_set_size(fs, &fh->f_fid, size);
	/* so the mtime reported at close is not that of an earlier write; and
	 * the objects changed even when the MDS did not take the size */
	wc_file_touch(fh);
	return rc;
}

int weir_truncate(weir_fs_t *fs, const char *path, uint64_t size)
{
	weir_file_t *fh;
	int rc, rc2;

	if (size > (uint64_t)WEIR_MAX_FILE_OFF)
		return -EFBIG;
	rc = weir_open(fs, path, O_WRONLY, 0, &fh);
	if (rc)
		return rc;
	rc = weir_ftruncate(fh, size);
	rc2 = weir_close(fh);
	return rc ? rc : rc2;
}

int weir_fstat(weir_file_t *fh, struct stat *st)
{
	struct wc_attr a;
	uint64_t size, blocks;
	int rc;

	if (!fh || !st)
		return -EINVAL;
	if (wc_file_stale(fh))
		return -EIO;
	rc = wc_getattr(fh->f_fs, &fh->f_fid, &a, NULL);
	if (rc)
		return rc;
	/* a released file: the MDS's size and 0 blocks, even for a writer */
	rc = wc_attr_size(fh->f_fs, &a, &fh->f_layout, fh->f_write && !wc_attr_released(&a),
			  &size, &blocks);
	if (rc)
		return rc;
	wc_attr_to_stat(&a, &fh->f_layout, size, blocks, st);
	return 0;
}

int weir_file_fid(weir_file_t *fh, weir_fid_t *fid)
{
	if (!fh || !fid)
		return -EINVAL;
	fid->seq = fh->f_fid.fid_seq;
	fid->oid = fh->f_fid.fid_oid;
	return 0;
}
