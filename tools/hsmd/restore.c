/*
 * tools/hsmd/restore.c - the steps of a restore task: copy an S3 object back
 * into a released file's OST objects, chunk by chunk (the MDS's chunk size
 * and done map), with parallel ranged GETs (one per chunk piece, each unit on
 * its own worker). Each chunk is written at its offset, fsynced, then
 * reported with MDS_HSM_AGENT_PROGRESS so readers waiting on it go on.
 *
 * The seam: before anything moves, HEAD must show the recorded ETag and
 * size; GETs carry If-Match; a changed or short object ends the task with
 * -ESTALE and the object's current ETag, size and LastModified.
 */
#define _GNU_SOURCE
#include "hsmd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "client/client_int.h"
#include "common/log.h"
#include "common/util.h"
#include "weir.pb-c.h"

/* Record -ESTALE with what the object is now (HEAD again when \a obj is NULL). */
static void hd_restore_stale(struct hd_agent *ag, struct hd_task *t, struct weir_s3 *s3,
			     const struct weir_s3_obj *obj, const char *why)
{
	struct weir_s3_obj cur = { 0 };
	char url[WEIR_S3_KEY_MAX + 80], b[64];
	int rc = 0;

	if (obj)
		cur = *obj;
	else
		rc = weir_s3_head(s3, t->t_key, &cur);
	hd_task_url(t, url, sizeof(url));
	if (rc)
		WEIR_LOG_WARN("restore fid=" WEIR_FID_F " key=%s: %s, and HEAD failed: %s",
			      WEIR_FID_P(&t->t_fid), url, why, weir_rc_str(rc, b, sizeof(b)));
	else
		WEIR_LOG_WARN("restore fid=" WEIR_FID_F " key=%s: %s: the object is ETag %s size "
			      "%llu LastModified %lld, the file was archived as ETag %s size %llu",
			      WEIR_FID_P(&t->t_fid), url, why, cur.so_etag,
			      (unsigned long long)cur.so_size, (long long)cur.so_mtime, t->t_etag,
			      (unsigned long long)t->t_size);
	pthread_mutex_lock(&ag->ag_lock);
	if (!t->t_rc)
		t->t_cur = cur;
	pthread_mutex_unlock(&ag->ag_lock);
	hd_task_fail(ag, t, -ESTALE, "%s: %s is ETag %s size %llu (recorded ETag %s size %llu)",
		     why, url, rc ? "?" : cur.so_etag, (unsigned long long)cur.so_size,
		     t->t_etag, (unsigned long long)t->t_size);
}

int hd_restore_start(struct hd_agent *ag, struct hd_worker *w, struct hd_task *t)
{
	char url[WEIR_S3_KEY_MAX + 80], b[64];
	struct weir_s3_obj obj;
	struct weir_s3 *s3;
	int rc;

	hd_task_url(t, url, sizeof(url));
	rc = hd_worker_s3(ag, w, t->t_bucket, &s3);
	if (rc) {
		hd_task_fail(ag, t, rc, "S3 client for bucket %s: %s", t->t_bucket,
			     weir_rc_str(rc, b, sizeof(b)));
		return rc;
	}
	rc = weir_s3_head(s3, t->t_key, &obj);
	if (rc) {
		WEIR_LOG_ERROR("restore fid=" WEIR_FID_F " key=%s: HEAD failed: %s",
			       WEIR_FID_P(&t->t_fid), url, weir_rc_str(rc, b, sizeof(b)));
		hd_task_fail(ag, t, rc, "HEAD %s: %s", url, weir_rc_str(rc, b, sizeof(b)));
		return rc;
	}
	if ((t->t_etag[0] && !hd_etag_eq(obj.so_etag, t->t_etag)) || obj.so_size != t->t_size) {
		hd_restore_stale(ag, t, s3, &obj,
				 obj.so_size != t->t_size && hd_etag_eq(obj.so_etag, t->t_etag)
					 ? "object size differs"
					 : "object changed in S3");
		return -ESTALE;
	}
	WEIR_LOG_DEBUG("restore fid=" WEIR_FID_F " key=%s size=%llu chunk=%llu: %llu of %llu "
		       "chunks to fetch, from offset %llu",
		       WEIR_FID_P(&t->t_fid), url, (unsigned long long)t->t_size,
		       (unsigned long long)t->t_chunk, (unsigned long long)t->t_nr_left,
		       (unsigned long long)t->t_nr_units, (unsigned long long)t->t_hint);
	if (!t->t_nr_left)
		return 0;
	rc = wc_hsm_open(ag->ag_fs, &t->t_fid, O_WRONLY, &t->t_fh);
	if (rc) {
		WEIR_LOG_ERROR("restore fid=" WEIR_FID_F " key=%s: open: %s",
			       WEIR_FID_P(&t->t_fid), url, weir_rc_str(rc, b, sizeof(b)));
		hd_task_fail(ag, t, rc, "open for restore: %s", weir_rc_str(rc, b, sizeof(b)));
		t->t_fh = NULL;
		return rc;
	}
	return 0;
}

int hd_restore_unit(struct hd_agent *ag, struct hd_worker *w, struct hd_task *t, uint64_t unit)
{
	uint64_t off = unit * t->t_chunk;
	uint64_t len = t->t_size - off < t->t_chunk ? t->t_size - off : t->t_chunk;
	char url[WEIR_S3_KEY_MAX + 80], b[64];
	struct weir_s3 *s3;
	int rc;

	hd_task_url(t, url, sizeof(url));
	rc = hd_worker_s3(ag, w, t->t_bucket, &s3);
	if (!rc)
		rc = hd_worker_buf(w, len < HD_IO_MAX ? len : HD_IO_MAX);
	if (rc) {
		hd_task_fail(ag, t, rc, "restore buffers: %s", weir_rc_str(rc, b, sizeof(b)));
		return rc;
	}
	for (uint64_t done = 0; done < len;) {
		size_t n = len - done < HD_IO_MAX ? (size_t)(len - done) : HD_IO_MAX;
		ssize_t got;

		if (atomic_load(&ag->ag_stop))
			return -ECANCELED;
		got = weir_s3_get(s3, t->t_key, off + done, n, w->w_buf,
				  t->t_etag[0] ? t->t_etag : NULL);
		if (got == -ESTALE) {
			hd_restore_stale(ag, t, s3, NULL, "object changed in S3 during the restore");
			return -ESTALE;
		}
		if (got < 0) {
			rc = (int)got;
			WEIR_LOG_ERROR("restore fid=" WEIR_FID_F " key=%s: GET bytes %llu-%llu: %s",
				       WEIR_FID_P(&t->t_fid), url,
				       (unsigned long long)(off + done),
				       (unsigned long long)(off + done + n - 1),
				       weir_rc_str(rc, b, sizeof(b)));
			hd_task_fail(ag, t, rc, "S3 GET %s bytes %llu-%llu: %s", url,
				     (unsigned long long)(off + done),
				     (unsigned long long)(off + done + n - 1),
				     weir_rc_str(rc, b, sizeof(b)));
			return rc;
		}
		if ((size_t)got != n) {
			hd_restore_stale(ag, t, s3, NULL, "object shorter than recorded");
			return -ESTALE;
		}
		/* a short count (a full OST) is followed by the write of the
		 * rest, which reports the error */
		for (size_t put = 0; put < n; put += (size_t)got) {
			got = weir_pwrite(t->t_fh, w->w_buf + put, n - put, off + done + put);
			if (got <= 0) {
				got = got ? got : -EIO;
				break;
			}
		}
		if (got < 0) {
			rc = (int)got;
			WEIR_LOG_ERROR("restore fid=" WEIR_FID_F ": write of %zu bytes at %llu: %s",
				       WEIR_FID_P(&t->t_fid), n, (unsigned long long)(off + done),
				       weir_rc_str(rc, b, sizeof(b)));
			hd_task_fail(ag, t, rc, "write at %llu: %s",
				     (unsigned long long)(off + done), weir_rc_str(rc, b, sizeof(b)));
			return rc;
		}
		done += n;
	}
	rc = weir_fsync(t->t_fh);
	if (rc) {
		WEIR_LOG_ERROR("restore fid=" WEIR_FID_F ": fsync: %s", WEIR_FID_P(&t->t_fid),
			       weir_rc_str(rc, b, sizeof(b)));
		hd_task_fail(ag, t, rc, "fsync: %s", weir_rc_str(rc, b, sizeof(b)));
		return rc;
	}
	pthread_mutex_lock(&ag->ag_lock);
	t->t_bytes += len;
	pthread_mutex_unlock(&ag->ag_lock);
	WEIR_LOG_DEBUG("restore fid=" WEIR_FID_F ": chunk %llu (%llu bytes at %llu) in",
		       WEIR_FID_P(&t->t_fid), (unsigned long long)unit, (unsigned long long)len,
		       (unsigned long long)off);
	return hd_progress(ag, t, off, len, 0, NULL);
}

void hd_restore_finish(struct hd_agent *ag, struct hd_worker *w, struct hd_task *t)
{
	char url[WEIR_S3_KEY_MAX + 80], b[64], msg[HD_MSG_MAX];
	struct weir_s3_obj cur;
	uint64_t left, bytes;
	bool abandon;
	int rc;

	(void)w;
	if (t->t_fh) {
		rc = weir_close(t->t_fh);
		t->t_fh = NULL;
		if (rc)
			hd_task_fail(ag, t, rc, "close after restore: %s",
				     weir_rc_str(rc, b, sizeof(b)));
	}
	pthread_mutex_lock(&ag->ag_lock);
	abandon = t->t_abandon;
	rc = t->t_rc;
	left = t->t_nr_left;
	bytes = t->t_bytes;
	cur = t->t_cur;
	memcpy(msg, t->t_msg, sizeof(msg));
	pthread_mutex_unlock(&ag->ag_lock);
	hd_task_url(t, url, sizeof(url));
	if (abandon) {
		WEIR_LOG_NOTICE("restore fid=" WEIR_FID_F " key=%s: left unfinished (%llu of %llu "
				"chunks to go); the MDS hands it out again",
				WEIR_FID_P(&t->t_fid), url, (unsigned long long)left,
				(unsigned long long)t->t_nr_units);
		/* every write of this task is over: say so, so that a truncate
		 * waiting for the cancel can go on (ignored for an action the MDS
		 * gave to another agent) */
		hd_done(ag, t, -ECANCELED, NULL, 0, 0, "cancelled");
		return;
	}
	if (!rc) {
		hd_done(ag, t, 0, NULL, 0, 0, NULL);
		hd_task_log_done(t, bytes);
		return;
	}
	WEIR_LOG_ERROR("restore fid=" WEIR_FID_F " key=%s failed: %s: %s", WEIR_FID_P(&t->t_fid),
		       url, weir_rc_str(rc, b, sizeof(b)), msg);
	if (rc == -ESTALE)
		hd_done(ag, t, rc, cur.so_etag, cur.so_size, cur.so_mtime * 1000000000ll, msg);
	else
		hd_done(ag, t, rc, NULL, 0, 0, msg);
}
