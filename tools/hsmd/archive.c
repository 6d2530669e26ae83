/*
 * tools/hsmd/archive.c - the steps of an archive task: copy a file to its S3
 * key. A file smaller than the part size goes in one PUT (in START); a
 * larger one as a multipart upload whose parts are the task's units, read
 * from the file and uploaded by the workers in parallel. The upload id is
 * sent to the MDS (PROGRESS) as soon as it exists, so an upload left by a
 * crash is aborted by the next attempt (START aborts the task's upload_id).
 * FINISH completes the upload and HEADs the object: only an object whose
 * size is the file's and whose ETag is the one the upload produced is
 * reported (DONE rc 0 with that ETag). Any failure aborts the upload and
 * reports the error; the MDS retries.
 */
#define _GNU_SOURCE
#include "hsmd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "common/log.h"
#include "common/util.h"
#include "weir.pb-c.h"

/* Read [off, off + len) of the file into \a buf. \return 0, -EAGAIN (the file shrank), -errno. */
static int hd_file_read(struct hd_task *t, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = weir_pread(t->t_fh, (char *)buf + done, len - done, off + done);
		if (n < 0)
			return (int)n;
		if (n == 0)
			return -EAGAIN;
		done += (size_t)n;
	}
	return 0;
}

/* Abort \a upload_id of the task's key, logging the outcome (never fails the task). */
static void hd_archive_abort(struct hd_task *t, struct weir_s3 *s3, const char *upload_id,
			     const char *why)
{
	char url[WEIR_S3_KEY_MAX + 80], b[64];
	int rc = weir_s3_mpu_abort(s3, t->t_key, upload_id);

	hd_task_url(t, url, sizeof(url));
	if (!rc)
		WEIR_LOG_INFO("archive fid=" WEIR_FID_F " key=%s: aborted multipart upload %s (%s)",
			      WEIR_FID_P(&t->t_fid), url, upload_id, why);
	else if (rc == -ENOENT)
		WEIR_LOG_INFO("archive fid=" WEIR_FID_F " key=%s: multipart upload %s (%s) is "
			      "already gone", WEIR_FID_P(&t->t_fid), url, upload_id, why);
	else
		WEIR_LOG_WARN("archive fid=" WEIR_FID_F " key=%s: cannot abort multipart upload "
			      "%s (%s): %s%s; going on", WEIR_FID_P(&t->t_fid), url, upload_id, why,
			      weir_rc_str(rc, b, sizeof(b)),
			      rc == -EOPNOTSUPP ? " (the S3 server lacks AbortMultipartUpload)" : "");
}

int hd_archive_start(struct hd_agent *ag, struct hd_worker *w, struct hd_task *t)
{
	uint64_t part = ag->ag_conf->hc_part_size;
	char url[WEIR_S3_KEY_MAX + 80], b[64];
	struct weir_s3 *s3;
	struct stat st;
	int rc;

	hd_task_url(t, url, sizeof(url));
	rc = hd_worker_s3(ag, w, t->t_bucket, &s3);
	if (rc) {
		hd_task_fail(ag, t, rc, "S3 client for bucket %s: %s", t->t_bucket,
			     weir_rc_str(rc, b, sizeof(b)));
		return rc;
	}
	if (t->t_old_upload[0])
		hd_archive_abort(t, s3, t->t_old_upload, "left by an earlier attempt");
	rc = wc_hsm_open(ag->ag_fs, &t->t_fid, O_RDONLY, &t->t_fh);
	if (rc) {
		t->t_fh = NULL;
		WEIR_LOG_ERROR("archive fid=" WEIR_FID_F " key=%s: open: %s",
			       WEIR_FID_P(&t->t_fid), url, weir_rc_str(rc, b, sizeof(b)));
		hd_task_fail(ag, t, rc, "open for archive: %s", weir_rc_str(rc, b, sizeof(b)));
		return rc;
	}
	rc = weir_fstat(t->t_fh, &st);
	if (rc) {
		hd_task_fail(ag, t, rc, "fstat: %s", weir_rc_str(rc, b, sizeof(b)));
		return rc;
	}
	t->t_size = (uint64_t)st.st_size;
	if (t->t_size < part) {
		rc = hd_worker_buf(w, t->t_size ? t->t_size : 1);
		if (!rc)
			rc = hd_file_read(t, w->w_buf, t->t_size, 0);
		if (rc) {
			hd_task_fail(ag, t, rc, "read of %llu bytes: %s%s",
				     (unsigned long long)t->t_size, weir_rc_str(rc, b, sizeof(b)),
				     rc == -EAGAIN ? " (the file shrank)" : "");
			return rc;
		}
		rc = weir_s3_put(s3, t->t_key, w->w_buf, t->t_size, t->t_put_etag);
		if (rc) {
			WEIR_LOG_ERROR("archive fid=" WEIR_FID_F " key=%s: PUT of %llu bytes: %s",
				       WEIR_FID_P(&t->t_fid), url, (unsigned long long)t->t_size,
				       weir_rc_str(rc, b, sizeof(b)));
			hd_task_fail(ag, t, rc, "S3 PUT %s: %s", url,
				     weir_rc_str(rc, b, sizeof(b)));
			return rc;
		}
		pthread_mutex_lock(&ag->ag_lock);
		t->t_bytes = t->t_size;
		pthread_mutex_unlock(&ag->ag_lock);
		return 0;
	}
	/* S3 allows 10,000 parts: larger files get larger parts (whole MiBs) */
	if ((t->t_size - 1) / part + 1 > WEIR_S3_PART_MAX) {
		part = (t->t_size - 1) / WEIR_S3_PART_MAX + 1;
		part = (part + (1u << 20) - 1) & ~(uint64_t)((1u << 20) - 1);
	}
	t->t_chunk = part;
	t->t_nr_units = (t->t_size - 1) / part + 1;
	t->t_nr_left = t->t_nr_units;
	t->t_ustate = calloc(t->t_nr_units, 1);
	t->t_parts = calloc(t->t_nr_units, sizeof(*t->t_parts));
	if (!t->t_ustate || !t->t_parts) {
		hd_task_fail(ag, t, -ENOMEM, "out of memory for %llu parts",
			     (unsigned long long)t->t_nr_units);
		return -ENOMEM;
	}
	rc = weir_s3_mpu_create(s3, t->t_key, t->t_upload);
	if (rc) {
		t->t_upload[0] = '\0';
		WEIR_LOG_ERROR("archive fid=" WEIR_FID_F " key=%s: CreateMultipartUpload: %s",
			       WEIR_FID_P(&t->t_fid), url, weir_rc_str(rc, b, sizeof(b)));
		hd_task_fail(ag, t, rc, "S3 CreateMultipartUpload %s: %s", url,
			     weir_rc_str(rc, b, sizeof(b)));
		return rc;
	}
	WEIR_LOG_DEBUG("archive fid=" WEIR_FID_F " key=%s size=%llu: upload %s, %llu parts of %llu",
		       WEIR_FID_P(&t->t_fid), url, (unsigned long long)t->t_size, t->t_upload,
		       (unsigned long long)t->t_nr_units, (unsigned long long)part);
	/* recorded before any part moves: a crash from here on leaves an upload the MDS knows */
	return hd_progress(ag, t, 0, 0, 0, t->t_upload);
}

int hd_archive_unit(struct hd_agent *ag, struct hd_worker *w, struct hd_task *t, uint64_t unit)
{
	uint64_t off = unit * t->t_chunk;
	size_t len = (size_t)(t->t_size - off < t->t_chunk ? t->t_size - off : t->t_chunk);
	char url[WEIR_S3_KEY_MAX + 80], b[64], etag[WEIR_S3_ETAG_MAX];
	struct weir_s3 *s3;
	uint64_t bytes;
	int rc;

	hd_task_url(t, url, sizeof(url));
	if (atomic_load(&ag->ag_stop))
		return -ECANCELED;
	rc = hd_worker_s3(ag, w, t->t_bucket, &s3);
	if (!rc)
		rc = hd_worker_buf(w, len);
	if (rc) {
		hd_task_fail(ag, t, rc, "archive buffers: %s", weir_rc_str(rc, b, sizeof(b)));
		return rc;
	}
	rc = hd_file_read(t, w->w_buf, len, off);
	if (rc) {
		WEIR_LOG_ERROR("archive fid=" WEIR_FID_F ": read of %zu bytes at %llu: %s",
			       WEIR_FID_P(&t->t_fid), len, (unsigned long long)off,
			       weir_rc_str(rc, b, sizeof(b)));
		hd_task_fail(ag, t, rc, "read of %zu bytes at %llu: %s%s", len,
			     (unsigned long long)off, weir_rc_str(rc, b, sizeof(b)),
			     rc == -EAGAIN ? " (the file shrank)" : "");
		return rc;
	}
	rc = weir_s3_mpu_part(s3, t->t_key, t->t_upload, (uint32_t)(unit + 1), w->w_buf, len,
			      etag);
	if (rc) {
		WEIR_LOG_ERROR("archive fid=" WEIR_FID_F " key=%s: UploadPart %llu (%zu bytes at "
			       "%llu): %s", WEIR_FID_P(&t->t_fid), url,
			       (unsigned long long)(unit + 1), len, (unsigned long long)off,
			       weir_rc_str(rc, b, sizeof(b)));
		hd_task_fail(ag, t, rc, "S3 UploadPart %llu of %s: %s",
			     (unsigned long long)(unit + 1), url, weir_rc_str(rc, b, sizeof(b)));
		return rc;
	}
	pthread_mutex_lock(&ag->ag_lock);
	t->t_parts[unit].sp_nr = (uint32_t)(unit + 1);
	memcpy(t->t_parts[unit].sp_etag, etag, sizeof(etag));
	t->t_bytes += len;
	bytes = t->t_bytes;
	pthread_mutex_unlock(&ag->ag_lock);
	return hd_progress(ag, t, 0, 0, bytes, t->t_upload);
}

/* Complete (multipart) and HEAD: the verified ETag into \a obj. \return 0 or -errno (recorded). */
static int hd_archive_verify(struct hd_agent *ag, struct hd_task *t, struct weir_s3 *s3,
			     struct weir_s3_obj *obj)
{
	char url[WEIR_S3_KEY_MAX + 80], b[64], etag[WEIR_S3_ETAG_MAX];
	int rc;

	hd_task_url(t, url, sizeof(url));
	if (t->t_upload[0]) {
		rc = weir_s3_mpu_complete(s3, t->t_key, t->t_upload, t->t_parts, t->t_nr_units,
					  etag);
		if (rc) {
			WEIR_LOG_ERROR("archive fid=" WEIR_FID_F " key=%s: CompleteMultipartUpload "
				       "%s: %s", WEIR_FID_P(&t->t_fid), url, t->t_upload,
				       weir_rc_str(rc, b, sizeof(b)));
			hd_task_fail(ag, t, rc, "S3 CompleteMultipartUpload %s: %s", url,
				     weir_rc_str(rc, b, sizeof(b)));
			return rc;
		}
		t->t_upload[0] = '\0'; /* completed: nothing to abort */
	} else {
		memcpy(etag, t->t_put_etag, sizeof(etag));
	}
	rc = weir_s3_head(s3, t->t_key, obj);
	if (rc) {
		WEIR_LOG_ERROR("archive fid=" WEIR_FID_F " key=%s: HEAD after the upload: %s",
			       WEIR_FID_P(&t->t_fid), url, weir_rc_str(rc, b, sizeof(b)));
		hd_task_fail(ag, t, rc, "S3 HEAD %s after the upload: %s", url,
			     weir_rc_str(rc, b, sizeof(b)));
		return rc;
	}
	if (obj->so_size != t->t_size || (etag[0] && !hd_etag_eq(etag, obj->so_etag)) ||
	    !obj->so_etag[0]) {
		WEIR_LOG_ERROR("archive fid=" WEIR_FID_F " key=%s: verification failed: the object "
			       "is ETag %s size %llu, the upload made ETag %s size %llu",
			       WEIR_FID_P(&t->t_fid), url, obj->so_etag,
			       (unsigned long long)obj->so_size, etag,
			       (unsigned long long)t->t_size);
		hd_task_fail(ag, t, -EIO, "verification of %s failed: object ETag %s size %llu, "
			     "uploaded ETag %s size %llu", url, obj->so_etag,
			     (unsigned long long)obj->so_size, etag, (unsigned long long)t->t_size);
		return -EIO;
	}
	return 0;
}

void hd_archive_finish(struct hd_agent *ag, struct hd_worker *w, struct hd_task *t)
{
	char url[WEIR_S3_KEY_MAX + 80], b[64], msg[HD_MSG_MAX];
	struct weir_s3_obj obj = { 0 };
	struct weir_s3 *s3 = NULL;
	uint64_t bytes;
	bool abandon;
	int rc;

	hd_task_url(t, url, sizeof(url));
	pthread_mutex_lock(&ag->ag_lock);
	abandon = t->t_abandon;
	rc = t->t_rc;
	pthread_mutex_unlock(&ag->ag_lock);
	if (!abandon && (t->t_upload[0] || !rc)) {
		int src = hd_worker_s3(ag, w, t->t_bucket, &s3);
		if (src) {
			s3 = NULL;
			hd_task_fail(ag, t, src, "S3 client for bucket %s: %s", t->t_bucket,
				     weir_rc_str(src, b, sizeof(b)));
		}
	} else if (abandon && t->t_upload[0] && !hd_worker_s3(ag, w, t->t_bucket, &s3)) {
		hd_archive_abort(t, s3, t->t_upload, "archive left unfinished");
		t->t_upload[0] = '\0';
		s3 = NULL;
	}
	if (s3 && !rc)
		hd_archive_verify(ag, t, s3, &obj);
	pthread_mutex_lock(&ag->ag_lock);
	rc = t->t_rc;
	bytes = t->t_bytes;
	memcpy(msg, t->t_msg, sizeof(msg));
	pthread_mutex_unlock(&ag->ag_lock);
	if (rc && s3 && t->t_upload[0])
		hd_archive_abort(t, s3, t->t_upload, "archive failed");
	if (t->t_fh) {
		int crc = weir_close(t->t_fh);
		t->t_fh = NULL;
		if (crc)
			WEIR_LOG_INFO("archive fid=" WEIR_FID_F ": close: %s", WEIR_FID_P(&t->t_fid),
				      weir_rc_str(crc, b, sizeof(b)));
	}
	if (abandon) {
		WEIR_LOG_NOTICE("archive fid=" WEIR_FID_F " key=%s: left unfinished; the MDS hands "
				"it out again", WEIR_FID_P(&t->t_fid), url);
		return;
	}
	if (rc) {
		WEIR_LOG_ERROR("archive fid=" WEIR_FID_F " key=%s failed: %s: %s",
			       WEIR_FID_P(&t->t_fid), url, weir_rc_str(rc, b, sizeof(b)), msg);
		hd_done(ag, t, rc, NULL, 0, 0, msg);
		return;
	}
	hd_done(ag, t, 0, obj.so_etag, obj.so_size, obj.so_mtime * 1000000000ll, NULL);
	hd_task_log_done(t, bytes);
}
