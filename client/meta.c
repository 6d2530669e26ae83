/*
 * client/meta.c - namespace calls: stat, mkdir, rmdir, unlink, rename,
 * directory streams (with telldir/seekdir), statfs, df and the MDT's
 * recovery state (weir_mdt_recovery). Each is one MDS RPC, made through
 * client/mdc.c (the MDS resolves paths itself, symlinks, "." and ".." included),
 * plus a glimpse of the OSTs for the size of a file that is open for
 * writing somewhere. The POSIX additions (links, xattrs, permissions, *at
 * calls) are in ns_posix.c.
 */
#define _GNU_SOURCE
#include "client_int.h"

#include <stddef.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

int wc_path_check(const char *path)
{
	/* Only what the kernel checks before the walk: the MDS checks names
	 * as it walks (a long name after a missing directory is -ENOENT). */
	if (!path)
		return -EINVAL;
	size_t len = strnlen(path, WC_PATH_MAX + 1);
	if (len > WC_PATH_MAX)
		return -ENAMETOOLONG;
	return len ? 0 : -ENOENT;
}

void wc_fid_from_pb(const Weir__Fid *pf, struct weir_fid *fid)
{
	fid->fid_seq = pf ? pf->seq : 0;
	fid->fid_oid = pf ? pf->oid : 0;
}

void wc_fid_to_pb(const struct weir_fid *fid, Weir__Fid *pf)
{
	weir__fid__init(pf);
	pf->seq = fid->fid_seq;
	pf->oid = fid->fid_oid;
}

int wc_lookup(struct weir_fs *fs, const char *path, struct wc_attr *a, struct weir_layout *lo)
{
	return wc_mdc_lookup(fs, WC_MDC_PATH(NULL, path, 0), a, lo);
}

int wc_lookup_at(struct weir_fs *fs, const struct weir_fid *at, const char *path,
		 uint32_t pflags, struct wc_attr *a, struct weir_layout *lo)
{
	return wc_mdc_lookup(fs, WC_MDC_PATH(at, path, pflags), a, lo);
}

int wc_getattr(struct weir_fs *fs, const struct weir_fid *fid, struct wc_attr *a,
	       struct weir_layout *lo)
{
	return wc_mdc_getattr(fs, fid, a, lo);
}

int wc_attr_size(struct weir_fs *fs, const struct wc_attr *a, const struct weir_layout *lo,
		 bool force, uint64_t *size, uint64_t *blocks)
{
	bool stale = (a->a_flags & WEIR__ATTR_FLAG__AF_SIZE_STALE) || force;

	if (S_ISREG(a->a_mode) && wc_attr_released(a) && !force) {
		/* HSM released: the objects are absent or partly restored; the
		 * MDS's size is the file's, and it has no blocks on the OSTs */
		*size = a->a_size;
		*blocks = 0;
		return 0;
	}
	if (!S_ISREG(a->a_mode) || !stale || !lo || lo->lo_stripe_count == 0) {
		*size = a->a_size;
		*blocks = a->a_blocks;
		return 0;
	}
	return wc_glimpse(fs, &a->a_fid, lo, a->a_size, size, blocks);
}

static void wc_ns_to_ts(int64_t ns, struct timespec *ts)
{
	int64_t sec = ns / 1000000000LL;
	int64_t rem = ns % 1000000000LL;
	if (rem < 0) {
		rem += 1000000000LL;
		sec--;
	}
	ts->tv_sec = (time_t)sec;
	ts->tv_nsec = (long)rem;
}

void wc_attr_to_stat(const struct wc_attr *a, const struct weir_layout *lo, uint64_t size,
		     uint64_t blocks, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_dev = WC_ST_DEV;
	st->st_ino = weir_fid_flatten(&a->a_fid);
	st->st_mode = a->a_mode;
	st->st_nlink = a->a_nlink;
	st->st_uid = a->a_uid;
	st->st_gid = a->a_gid;
	st->st_size = (off_t)WEIR_MIN(size, (uint64_t)WEIR_MAX_FILE_OFF);
	st->st_blocks = (blkcnt_t)blocks;
	st->st_rdev = (dev_t)a->a_rdev;
	if (S_ISREG(a->a_mode) && lo && lo->lo_stripe_count)
		st->st_blksize = lo->lo_stripe_size;
	else if (S_ISREG(a->a_mode) && a->a_blksize)
		st->st_blksize = a->a_blksize;
	else
		st->st_blksize = 4096;
	wc_ns_to_ts(a->a_atime_ns, &st->st_atim);
	wc_ns_to_ts(a->a_mtime_ns, &st->st_mtim);
	wc_ns_to_ts(a->a_ctime_ns, &st->st_ctim);
}

int wc_attr_stat(struct weir_fs *fs, const struct wc_attr *a, const struct weir_layout *lo,
		 struct stat *st)
{
	uint64_t size, blocks;
	int rc;

	rc = wc_attr_size(fs, a, lo, false, &size, &blocks);
	if (rc)
		return rc;
	wc_attr_to_stat(a, lo, size, blocks, st);
	return 0;
}

int weir_stat(weir_fs_t *fs, const char *path, struct stat *st)
{
	struct wc_attr a;
	struct weir_layout lo;
	int rc;

	if (!fs || !st)
		return -EINVAL;
	rc = wc_path_check(path);
	if (rc)
		return rc;
	rc = wc_lookup(fs, path, &a, &lo);
	return rc ? rc : wc_attr_stat(fs, &a, &lo, st);
}

int weir_path2fid(weir_fs_t *fs, const char *path, weir_fid_t *fid)
{
	struct wc_attr a;
	int rc;

	if (!fs || !fid)
		return -EINVAL;
	rc = wc_path_check(path);
	if (rc)
		return rc;
	rc = wc_lookup(fs, path, &a, NULL);
	if (rc)
		return rc;
	fid->seq = a.a_fid.fid_seq;
	fid->oid = a.a_fid.fid_oid;
	return 0;
}

/* The path calls are the *at calls without a directory handle (client/ns_posix.c). */
int weir_mkdir(weir_fs_t *fs, const char *path, mode_t mode)
{
	return weir_mkdirat(fs, NULL, path, mode);
}

int weir_rmdir(weir_fs_t *fs, const char *path)
{
	return weir_unlinkat(fs, NULL, path, AT_REMOVEDIR);
}

int weir_unlink(weir_fs_t *fs, const char *path)
{
	return weir_unlinkat(fs, NULL, path, 0);
}

int weir_rename(weir_fs_t *fs, const char *oldpath, const char *newpath)
{
	return weir_rename2(fs, oldpath, newpath, 0);
}

/* ------------------------------------------------------------ directories */

/* The FID of \a path's parent: LOOKUP "<path>/..", else of its lexical dirname. */
static int wc_parent_fid(struct weir_fs *fs, const char *path, struct weir_fid *fid)
{
	size_t len = strlen(path);
	struct wc_attr a;
	char *buf;
	int rc;

	while (len > 1 && path[len - 1] == '/')
		len--;
	buf = malloc(len + 4);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, path, len);
	if (len == 1 && buf[0] == '/')
		strcpy(buf + len, "..");
	else
		strcpy(buf + len, "/..");
	rc = wc_lookup(fs, buf, &a, NULL);
	if (rc == -ENOENT || rc == -EINVAL || rc == -EACCES) {
		/* fall back to the lexical parent (-EACCES: a directory that may be
		 * read but not searched, which opendir(3) allows) */
		while (len > 0 && buf[len - 1] != '/')
			len--;
		while (len > 1 && buf[len - 1] == '/')
			len--;
		if (len == 0)
			buf[len++] = '/';
		buf[len] = '\0';
		rc = wc_lookup(fs, buf, &a, NULL);
	}
	free(buf);
	if (!rc)
		*fid = a.a_fid;
	return rc;
}

static int wc_readdir_page(struct weir_dir *dh);

int weir_opendir(weir_fs_t *fs, const char *path, weir_dir_t **dhp)
{
	struct weir_dir *dh;
	struct wc_attr a;
	int rc;

	if (!fs || !dhp)
		return -EINVAL;
	rc = wc_path_check(path);
	if (rc)
		return rc;
	rc = wc_lookup(fs, path, &a, NULL);
	if (rc)
		return rc;
	if (!S_ISDIR(a.a_mode))
		return -ENOTDIR;
	dh = calloc(1, sizeof(*dh));
	if (!dh)
		return -ENOMEM;
	dh->d_fs = fs;
	dh->d_fid = a.a_fid;
	rc = wc_parent_fid(fs, path, &dh->d_parent);
	if (!rc)
		rc = wc_readdir_page(dh); /* the first page now: -EACCES without read permission */
	if (rc) {
		wc_mdc_dirpage_free(&dh->d_page);
		free(dh);
		return rc;
	}
	pthread_mutex_lock(&fs->fs_lock);
	dh->d_next = fs->fs_dirs;
	if (fs->fs_dirs)
		fs->fs_dirs->d_prev = dh;
	fs->fs_dirs = dh;
	pthread_mutex_unlock(&fs->fs_lock);
	*dhp = dh;
	return 0;
}

/* telldir positions before the MDS's cookies (which are >= 3) */
#define WC_DIRPOS_START 0
#define WC_DIRPOS_DOT 1    /* after "." */
#define WC_DIRPOS_DOTDOT 2 /* after "..": the first entry is next */

static void wc_dirent_fill(struct weir_dirent *ent, const char *name, const struct weir_fid *fid,
			   uint8_t type, uint64_t cookie)
{
	memset(ent, 0, sizeof(*ent));
	ent->d_ino = weir_fid_flatten(fid);
	ent->d_off = cookie;
	ent->d_type = type;
	ent->d_fid.seq = fid->fid_seq;
	ent->d_fid.oid = fid->fid_oid;
	snprintf(ent->d_name, sizeof(ent->d_name), "%s", name);
}

/*
 * The next page of \a dh, after d_cookie: from the cache when it knows the
 * directory completely and the MDS let this stream read it (d_read_ok),
 * else from the MDS. Cookies are the same either way (weir_name_cookie()),
 * so a stream goes from one to the other at any entry.
 */
static int wc_readdir_page(struct weir_dir *dh)
{
	struct weir_fs *fs = dh->d_fs;
	if (dh->d_read_ok && !dh->d_snap_refused) {
		if (wc_mdl_dir_snap(fs, &dh->d_fid, dh->d_cookie, dh->d_plus, &dh->d_snap) == 0) {
			dh->d_whole = false; /* (known whole already) */
			return 0;
		}
		dh->d_snap_refused = true; /* (each try walks every cached name) */
	}
	/* a readdirplus listing from the start: its names are cached as they
	 * come, and read to the end it makes the directory known whole */
	if (dh->d_cookie == 0) {
		dh->d_whole = dh->d_plus && wc_mdl_names(fs);
		if (dh->d_whole) {
			dh->d_whole_drops = wc_mdl_dir_drops(fs, &dh->d_fid);
			dh->d_whole_t0 = wc_mdl_stamp(fs);
		}
	} else if (!dh->d_plus) {
		dh->d_whole = false;
	}
	int rc = wc_mdc_readdir(fs, &dh->d_fid, dh->d_cookie, WC_READDIR_PAGE, dh->d_plus,
				&dh->d_page);
	if (rc)
		return rc;
	dh->d_read_ok = true; /* the MDS checked read permission */
	dh->d_idx = 0;
	dh->d_eof = dh->d_page.dp_eof;
	if (dh->d_whole) {
		/* every entry cached as it came: none the cache skipped (weir_readdir()
		 * fails on it), no run of equal cookies the MDS may have cut */
		struct wc_mdc_dirent e;
		for (size_t i = 0; dh->d_whole && i < dh->d_page.dp_nr; i++)
			dh->d_whole = !wc_mdc_dirent_get(&dh->d_page, i, &e);
		dh->d_whole = dh->d_whole && !dh->d_page.dp_long;
	}
	if (dh->d_eof && dh->d_whole)
		wc_mdl_dir_listed(fs, &dh->d_fid, dh->d_whole_t0, dh->d_whole_drops);
	return 0;
}

int weir_dir_plus(weir_dir_t *dh, int on)
{
	if (!dh)
		return -EINVAL;
	bool was = dh->d_plus;
	dh->d_plus = on != 0;
	/* a page fetched without attributes and not read from yet (weir_opendir()'s
	 * first): fetched again, with them, by the next weir_readdir(), which is
	 * one READDIR instead of a GETATTR for each of its entries */
	if (dh->d_plus && !was && dh->d_page.dp_rep && dh->d_idx == 0) {
		wc_mdc_dirpage_free(&dh->d_page);
		dh->d_eof = false;
	}
	return 0;
}

int weir_readdir(weir_dir_t *dh, struct weir_dirent *ent)
{
	int rc;

	if (!dh || !ent)
		return -EINVAL;
	if (dh->d_dots == 0) {
		dh->d_dots = 1;
		wc_dirent_fill(ent, ".", &dh->d_fid, DT_DIR, WC_DIRPOS_DOT);
		return 1;
	}
	if (dh->d_dots == 1) {
		dh->d_dots = 2;
		wc_dirent_fill(ent, "..", &dh->d_parent, DT_DIR, WC_DIRPOS_DOTDOT);
		return 1;
	}
	for (;;) {
		struct wc_dsnap *sn = &dh->d_snap;
		if (sn->s_ents && sn->s_idx < sn->s_nr) {
			const struct wc_dsnap_ent *se = &sn->s_ents[sn->s_idx];
			/* still what the cache knows? (checked between runs of equal
			 * cookies: the MDS resumes only after a whole run) */
			if (se->se_cookie == dh->d_cookie ||
			    wc_mdl_dir_snap_ok(dh->d_fs, &dh->d_fid, sn)) {
				sn->s_idx++;
				dh->d_cookie = se->se_cookie;
				wc_dirent_fill(ent, se->se_name, &se->se_fid, se->se_type,
					       se->se_cookie);
				return 1;
			}
			wc_mdl_dir_snap_free(sn); /* the rest from the MDS */
		} else if (sn->s_ents) {
			wc_mdl_dir_snap_free(sn); /* every name after the cookie: the end */
			dh->d_eof = true;
			return 0;
		}
		if (dh->d_page.dp_rep && dh->d_idx < dh->d_page.dp_nr) {
			struct wc_mdc_dirent e;

			if (wc_mdc_dirent_get(&dh->d_page, dh->d_idx++, &e)) {
				WEIR_LOG_ERROR("dir=" WEIR_FID_F ": malformed directory entry",
					       WEIR_FID_P(&dh->d_fid));
				return -EPROTO;
			}
			dh->d_cookie = e.de_cookie;
			wc_dirent_fill(ent, e.de_name, &e.de_fid, e.de_type, e.de_cookie);
			return 1;
		}
		wc_mdc_dirpage_free(&dh->d_page);
		if (dh->d_eof)
			return 0;
		rc = wc_readdir_page(dh);
		if (rc)
			return rc;
	}
}

int64_t weir_telldir(weir_dir_t *dh)
{
	if (!dh)
		return -EINVAL;
	if (dh->d_dots < 2)
		return dh->d_dots; /* WC_DIRPOS_START, WC_DIRPOS_DOT */
	return dh->d_cookie ? (int64_t)dh->d_cookie : WC_DIRPOS_DOTDOT;
}

void weir_seekdir(weir_dir_t *dh, int64_t pos)
{
	if (!dh || pos < 0)
		return;
	wc_mdc_dirpage_free(&dh->d_page);
	wc_mdl_dir_snap_free(&dh->d_snap);
	dh->d_idx = 0;
	dh->d_eof = false;
	dh->d_whole = false; /* (a listing from the start decides it again) */
	dh->d_snap_refused = false;
	if (pos <= WC_DIRPOS_DOTDOT) {
		dh->d_dots = (int)pos;
		dh->d_cookie = 0;
	} else {
		/* an MDS cookie: the listing resumes after the entry it names */
		dh->d_dots = 2;
		dh->d_cookie = (uint64_t)pos;
	}
}

void weir_rewinddir(weir_dir_t *dh)
{
	weir_seekdir(dh, WC_DIRPOS_START);
}

static void wc_dir_free(struct weir_dir *dh)
{
	wc_mdc_dirpage_free(&dh->d_page);
	wc_mdl_dir_snap_free(&dh->d_snap);
	free(dh);
}

int weir_closedir(weir_dir_t *dh)
{
	if (!dh)
		return 0;
	struct weir_fs *fs = dh->d_fs;
	pthread_mutex_lock(&fs->fs_lock);
	if (dh->d_prev)
		dh->d_prev->d_next = dh->d_next;
	else
		fs->fs_dirs = dh->d_next;
	if (dh->d_next)
		dh->d_next->d_prev = dh->d_prev;
	pthread_mutex_unlock(&fs->fs_lock);
	wc_dir_free(dh);
	return 0;
}

void wc_dirs_close_all(struct weir_fs *fs)
{
	pthread_mutex_lock(&fs->fs_lock);
	struct weir_dir *dh = fs->fs_dirs;
	fs->fs_dirs = NULL;
	pthread_mutex_unlock(&fs->fs_lock);
	while (dh) {
		struct weir_dir *next = dh->d_next;
		wc_dir_free(dh);
		dh = next;
	}
}

/* ------------------------------------------------------------ statfs, df */

int weir_statfs(weir_fs_t *fs, struct statvfs *sv)
{
	Weir__StatfsRep *rep;
	int rc;

	if (!fs || !sv)
		return -EINVAL;
	rc = wc_mdc_statfs(fs, &rep);
	if (rc)
		return rc;
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = 4096;
	sv->f_frsize = 4096;
	sv->f_blocks = rep->total_bytes / 4096;
	sv->f_bfree = rep->free_bytes / 4096;
	sv->f_bavail = rep->avail_bytes / 4096;
	sv->f_files = rep->files;
	sv->f_ffree = rep->files_free;
	sv->f_favail = rep->files_free;
	sv->f_fsid = (unsigned long)(fs->fs_root.fid_seq ^ fs->fs_root.fid_oid);
	sv->f_namemax = rep->namelen ? rep->namelen : WC_NAME_MAX;
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return 0;
}

/* wti_fs_shared_with took padding: callers' arrays keep their stride */
_Static_assert(offsetof(struct weir_target_info, wti_total) == 32 &&
		       sizeof(struct weir_target_info) == 136,
	       "struct weir_target_info changed size");

int weir_mdt_recovery(weir_fs_t *fs, struct weir_recovery_info *ri)
{
	Weir__StatfsRep *rep;
	int rc;

	if (!fs || !ri)
		return -EINVAL;
	memset(ri, 0, sizeof(*ri));
	rc = wc_mdc_statfs(fs, &rep);
	if (rc)
		return rc;
	for (size_t i = 0; i < rep->n_targets; i++) {
		const Weir__TargetStat *t = rep->targets[i];
		if (!t->is_mdt || !t->recovering)
			continue;
		ri->wri_recovering = 1;
		ri->wri_clients = t->recovery_clients;
		ri->wri_recovered = t->recovery_done;
		ri->wri_left_s = t->recovery_left_s;
	}
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return 0;
}

int weir_df(weir_fs_t *fs, struct weir_target_info *tgts, size_t max, size_t *nr)
{
	Weir__StatfsRep *rep;
	int rc;

	if (!fs || !nr || (max && !tgts))
		return -EINVAL;
	rc = wc_mdc_statfs(fs, &rep);
	if (rc)
		return rc;
	*nr = rep->n_targets;
	for (size_t i = 0; i < rep->n_targets && i < max; i++) {
		const Weir__TargetStat *t = rep->targets[i];
		struct weir_target_info *ti = &tgts[i];

		memset(ti, 0, sizeof(*ti));
		if (t->name && *t->name)
			snprintf(ti->wti_name, sizeof(ti->wti_name), "%s", t->name);
		else
			snprintf(ti->wti_name, sizeof(ti->wti_name), "%s%04x",
				 t->is_mdt ? "MDT" : "OST", t->index & 0xffff);
		ti->wti_index = t->index;
		ti->wti_is_mdt = t->is_mdt;
		ti->wti_up = t->state == WEIR__TARGET_STATE__TS_UP;
		ti->wti_fs_shared_with = t->fs_shared_with;
		ti->wti_total = t->total_bytes;
		ti->wti_free = t->free_bytes;
		ti->wti_avail = t->avail_bytes;
		ti->wti_files = t->files;
		ti->wti_files_free = t->files_free;
		if (t->oss_addr && *t->oss_addr)
			snprintf(ti->wti_addr, sizeof(ti->wti_addr), "%s", t->oss_addr);
		else if (t->is_mdt)
			snprintf(ti->wti_addr, sizeof(ti->wti_addr), "%s", fs->fs_mds_addr);
	}
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return 0;
}
