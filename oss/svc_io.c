/*
 * oss/svc_io.c - the OST requests whose work runs on the loop's io_uring:
 * OST_READ, OST_WRITE, OST_FSYNC and OST_FALLOCATE.
 *
 * An object is stored as segment files of 2^40 bytes (oss/obj.c), so one
 * request is a sequence of pieces, each inside one segment: a read or write
 * (at most 16 MiB, the frame's bulk limit) touches one or two segments, a
 * fallocate any number, an fsync every segment and then the segment
 * directory. The pieces of a request run one after the other (struct
 * svc_op): svc_op_step() opens the next piece's segment with a plain syscall
 * (a read's or write's segment through the OSS's fd cache, oss/fdcache.c,
 * so a hot object's is not opened again) and queues its I/O on the ring of
 * the loop that read the request; the completion callback (same loop thread)
 * closes the segment (gives a cached fd back) and steps again;
 * after the last piece the request is replied to from that thread. A piece
 * whose segment does not exist is a hole: a read fills it with zeros, a
 * punch or an fsync has nothing to do there.
 *
 * A read looks the object's size up only when it reaches a segment file's
 * end (svc_read_finish); a write once, before its first piece (its reply
 * carries the size before and after, svc_write_reply), and a write whose
 * piece fails after some of its bytes were written replies that short count
 * (svc_write_short). A write piece of at least --writeback-min bytes
 * starts the writeback of its range once it is in the page cache
 * (svc_op_writeback: sync_file_range(SYNC_FILE_RANGE_WRITE) on the ring,
 * replied to without waiting for it), so the disk writes while the client
 * streams and its fsync has little left to do.
 */
#define _GNU_SOURCE
#include "oss_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/capa.h"
#include "common/log.h"
#include "common/util.h"
#include "net/frame.h"
#include "weir.pb-c.h"

/** "Segment" number of the segment directory in an fsync's piece list. */
#define SVC_SEG_DIR UINT64_MAX

/** One request with ring I/O in flight. */
struct svc_op {
	struct oss_io op_io;          /* the current piece, on the loop's ring */
	struct oss_fdc_ent *op_fd_ent; /* io_fd's fd cache entry; NULL: io_fd is ours to close */
	struct net_req *op_rq;
	const char *op_name;          /* for logs: "write", "read", ... */
	struct oss_target op_t;
	enum oss_io_kind op_kind;
	bool op_punch;                /* FALLOCATE: FALLOC_FL_PUNCH_HOLE */
	int op_mode;                  /* FALLOCATE: fallocate(2) mode */
	bool op_datasync;             /* FSYNC: data only */
	uint64_t op_off;              /* object extent [op_off, op_end) of READ/WRITE/FALLOCATE */
	uint64_t op_end;
	uint64_t op_pos;              /* next object byte to do */
	uint8_t *op_buf;              /* READ: reply buffer; WRITE: the request's bulk */
	bool op_buf_owned;            /* op_buf is malloc'd here (READ) */
	uint64_t *op_segs;            /* FSYNC, punch: segments that exist, ascending */
	size_t op_nr_segs;
	size_t op_seg_next;           /* FSYNC: next entry of op_segs (then the directory) */
	bool op_short;                /* READ: a piece ended early or had no segment file */
	bool op_absent;               /* READ: the object does not exist (ObjIoRep.no_object) */
	bool op_sized;                /* READ: second pass, sized by a getattr (svc_read_finish) */
	uint64_t op_contig;           /* READ: bytes the first pass read from op_off */
	uint64_t op_obj_size;         /* READ: object size when looked up (short reads), else 0 */
	uint64_t op_writeback_min;    /* WRITE: pieces this long start their writeback; 0 none */
	uint64_t op_size_before;      /* WRITE: object size before its first piece, bytes */
	void (*op_finish)(struct svc_op *op); /* every piece done: reply and free */
};

static struct svc_op *svc_op_new(struct net_req *rq, const char *name,
				 const struct oss_target *t, enum oss_io_kind kind)
{
	struct svc_op *op = calloc(1, sizeof(*op));
	if (!op)
		return NULL;
	op->op_rq = rq;
	op->op_name = name;
	op->op_t = *t;
	op->op_kind = kind;
	op->op_io.io_fd = -1;
	return op;
}

/* Close the current piece's fd, or give it back to the fd cache. */
static void svc_op_fd_release(struct svc_op *op)
{
	if (op->op_io.io_fd >= 0 || op->op_fd_ent)
		oss_fdc_put(op->op_t.tg_obj.ob_ost->ot_fdc, op->op_fd_ent, op->op_io.io_fd);
	op->op_fd_ent = NULL;
	op->op_io.io_fd = -1;
}

static void svc_op_free(struct svc_op *op)
{
	svc_op_fd_release(op);
	if (op->op_buf_owned)
		free(op->op_buf);
	free(op->op_segs);
	free(op);
}

/* Reply \a rc for a failed op, log, free. */
static void svc_op_fail(struct svc_op *op, int rc, const char *why)
{
	oss_svc_fail(op->op_rq, op->op_name, &op->op_t, rc, why);
	svc_op_free(op);
}

static struct svc_op *svc_op_of(struct oss_io *io)
{
	return (struct svc_op *)((char *)io - offsetof(struct svc_op, op_io));
}

/* The next piece: its segment, and for byte ranges its length from op_pos.
 * \return false when every piece is done. */
static bool svc_op_piece(struct svc_op *op, uint64_t *seg, uint64_t *len)
{
	if (op->op_kind == OSS_IO_FSYNC) {
		if (op->op_seg_next > op->op_nr_segs)
			return false;
		*seg = op->op_seg_next < op->op_nr_segs ? op->op_segs[op->op_seg_next]
							: SVC_SEG_DIR;
		*len = 0;
		return true;
	}
	if (op->op_pos >= op->op_end)
		return false;
	if (op->op_punch) {
		/* only segments that exist have anything to punch */
		size_t i = 0;
		while (i < op->op_nr_segs &&
		       ((op->op_segs[i] + 1) << OSS_SEG_SHIFT) <= op->op_pos)
			i++;
		if (i == op->op_nr_segs || (op->op_segs[i] << OSS_SEG_SHIFT) >= op->op_end)
			return false;
		op->op_pos = WEIR_MAX(op->op_pos, op->op_segs[i] << OSS_SEG_SHIFT);
	}
	*seg = oss_seg_of(op->op_pos);
	*len = WEIR_MIN(op->op_end - op->op_pos, OSS_SEG_SIZE - oss_seg_off(op->op_pos));
	return true;
}

static void svc_op_advance(struct svc_op *op, uint64_t len)
{
	if (op->op_kind == OSS_IO_FSYNC)
		op->op_seg_next++;
	else
		op->op_pos += len;
}

/* Open the segment of the next piece as its kind needs. */
static int svc_op_open(struct svc_op *op, uint64_t seg, int *fd)
{
	const struct oss_obj *ob = &op->op_t.tg_obj;

	switch (op->op_kind) {
	case OSS_IO_READ:
		return oss_fdc_get(ob->ob_ost->ot_fdc, ob, seg, false, &op->op_fd_ent, fd);
	case OSS_IO_WRITE:
		return oss_fdc_get(ob->ob_ost->ot_fdc, ob, seg, true, &op->op_fd_ent, fd);
	case OSS_IO_FALLOCATE:
		return oss_obj_seg_open(ob, seg, op->op_punch ? O_WRONLY : O_WRONLY | O_CREAT, fd);
	case OSS_IO_FSYNC:
		if (seg == SVC_SEG_DIR)
			return oss_obj_seg_dir_open(ob, fd);
		return oss_obj_seg_open(ob, seg, O_RDONLY, fd);
	case OSS_IO_WRITEBACK:
		break; /* never a request's piece */
	}
	return -EINVAL;
}

static void svc_op_piece_done(struct oss_io *io, int rc);
static void svc_write_short(struct svc_op *op, uint64_t end, int rc);

/* Start the next piece, skipping holes; after the last one, finish. */
static void svc_op_step(struct svc_op *op)
{
	struct oss_io *io = &op->op_io;
	uint64_t seg, len;

	for (;;) {
		svc_op_fd_release(op);
		if (!svc_op_piece(op, &seg, &len)) {
			op->op_finish(op);
			return;
		}
		int rc = svc_op_open(op, seg, &io->io_fd);
		if (rc == -ENOENT && op->op_kind != OSS_IO_WRITE) {
			/* a missing segment: a hole (only reads, punches, syncs get here) */
			if (op->op_kind == OSS_IO_READ && !op->op_sized) {
				/* maybe past the end: svc_read_finish() finds out */
				op->op_short = true;
				op->op_finish(op);
				return;
			}
			if (op->op_kind == OSS_IO_READ)
				memset(op->op_buf + (op->op_pos - op->op_off), 0, (size_t)len);
			svc_op_advance(op, len);
			continue;
		}
		if (rc && op->op_kind == OSS_IO_WRITE && op->op_pos > op->op_off) {
			svc_write_short(op, op->op_pos, rc);
			return;
		}
		if (rc) {
			svc_op_fail(op, rc, "cannot open the object");
			return;
		}
		io->io_kind = op->op_kind;
		io->io_off = oss_seg_off(op->op_pos);
		io->io_len = len;
		io->io_buf = op->op_buf ? op->op_buf + (op->op_pos - op->op_off) : NULL;
		io->io_mode = op->op_mode;
		io->io_datasync = op->op_datasync;
		io->io_cb = svc_op_piece_done;
		oss_uring_submit(op->op_rq->rq_loop_priv, io);
		return;
	}
}

/** A writeback started after a write: owns a reference to the fd until it completes. */
struct svc_wb {
	struct oss_io wb_io;
	struct oss_uring *wb_ring;
	struct oss_fdc *wb_fdc;
	struct oss_fdc_ent *wb_ent;   /* NULL: wb_io.io_fd is ours to close */
};

static void svc_wb_done(struct oss_io *io, int rc)
{
	struct svc_wb *wb = (struct svc_wb *)((char *)io - offsetof(struct svc_wb, wb_io));

	/* Errors of the disk itself stay recorded for the next fsync; one
	 * sync_file_range() returns itself (the kernel's own flusher would have
	 * met it too) is logged for the admin */
	if (rc && rc != -EAGAIN && rc != -EINTR)
		WEIR_LOG_WARN("op=writeback fd=%d off=%llu len=%llu rc=%d: early writeback"
			      " failed", io->io_fd, (unsigned long long)io->io_off,
			      (unsigned long long)io->io_len, rc);
	oss_uring_writeback_end(wb->wb_ring);
	oss_fdc_put(wb->wb_fdc, wb->wb_ent, io->io_fd);
	free(wb);
}

/*
 * The write piece just done was large: start writing its range back to disk
 * now (sync_file_range(SYNC_FILE_RANGE_WRITE) on the ring, not waited for),
 * so that a later fsync finds little left to write. The data is already in
 * the page cache, where the reply says it is: nothing waits for this.
 */
static void svc_op_writeback(struct svc_op *op)
{
	struct oss_io *io = &op->op_io;
	struct oss_uring *ring = op->op_rq->rq_loop_priv;

	if (!oss_uring_writeback_begin(ring))
		return; /* enough in flight: only an optimisation */
	struct svc_wb *wb = calloc(1, sizeof(*wb));
	if (!wb) {
		oss_uring_writeback_end(ring);
		return;
	}
	wb->wb_ring = ring;
	wb->wb_fdc = op->op_t.tg_obj.ob_ost->ot_fdc;
	wb->wb_ent = op->op_fd_ent;
	wb->wb_io.io_fd = io->io_fd;
	if (wb->wb_ent)
		oss_fdc_hold(wb->wb_fdc, wb->wb_ent);
	else
		io->io_fd = -1; /* the uncached fd goes with the writeback */
	wb->wb_io.io_kind = OSS_IO_WRITEBACK;
	wb->wb_io.io_off = io->io_off;
	wb->wb_io.io_len = io->io_len;
	wb->wb_io.io_cb = svc_wb_done;
	oss_uring_submit(ring, &wb->wb_io);
}

static void svc_op_piece_done(struct oss_io *io, int rc)
{
	struct svc_op *op = svc_op_of(io);

	if (rc && op->op_kind == OSS_IO_WRITE && op->op_pos + io->io_done > op->op_off) {
		svc_write_short(op, op->op_pos + io->io_done, rc);
		return;
	}
	if (rc) {
		char why[48];
		snprintf(why, sizeof(why), "%s failed", op->op_name);
		svc_op_fail(op, rc, why);
		return;
	}
	if (op->op_kind == OSS_IO_READ && !op->op_sized) {
		op->op_contig += io->io_done;
		if (io->io_done < io->io_len) {
			/* the segment file ended: maybe the end of the object */
			op->op_short = true;
			op->op_finish(op);
			return;
		}
	}
	if (op->op_kind == OSS_IO_READ && io->io_done < io->io_len) /* past the segment's end */
		memset(io->io_buf + io->io_done, 0, (size_t)(io->io_len - io->io_done));
	if (op->op_kind == OSS_IO_WRITE && op->op_writeback_min &&
	    io->io_len >= op->op_writeback_min)
		svc_op_writeback(op);
	svc_op_advance(op, io->io_len);
	svc_op_step(op);
}

/* Reply the object's attributes now (after a fallocate). */
static void svc_op_reply_attr(struct svc_op *op)
{
	struct oss_obj_attr oa;
	int rc = oss_obj_getattr(&op->op_t.tg_obj, &oa);
	if (rc) {
		svc_op_fail(op, rc, "stat after the I/O failed");
		return;
	}
	Weir__ObjAttrRep rep = WEIR__OBJ_ATTR_REP__INIT;
	rep.exists = oa.oa_exists;
	rep.size = oa.oa_size;
	rep.blocks = oa.oa_blocks;
	rep.mtime_ns = oa.oa_mtime_ns;
	net_req_reply(op->op_rq, 0, &rep.base, NULL, 0);
	svc_op_free(op);
}

/* ------------------------------------------------------------------ OST_WRITE */

/*
 * A write is a short count or an error that changed nothing, as write(2) on
 * a full disk: a kernel write returns the bytes it wrote before it met an
 * error (ENOSPC, EDQUOT, EFBIG, EIO), and only the next one fails. So when a
 * piece fails (or its segment cannot be opened) after bytes of this request
 * were written, [op_off, end) is what was written, contiguously: the reply
 * says so (len = end - op_off) with status 0, and the object keeps those
 * bytes and its size; the error itself is for the client's next write. A
 * write that wrote nothing fails with the error and left the object as it
 * was (at most created empty). The reply also carries the object's size
 * before the write (op_size_before), which a client needs to undo the growth
 * by pieces of one weir_pwrite() that lie beyond what it reports written
 * (client/io.c).
 */
static void svc_write_finish(struct svc_op *op);

static void svc_write_short(struct svc_op *op, uint64_t end, int rc)
{
	char rcs[96], fids[WEIR_FID_STR_MAX];

	weir_fid_to_str(&op->op_t.tg_obj.ob_fid, fids, sizeof(fids));
	WEIR_LOG_WARN("op=write ost=%u fid=%s stripe=%u off=%llu len=%llu done=%llu rc=%s: "
		      "short write", op->op_t.tg_ost_idx, fids, op->op_t.tg_obj.ob_stripe,
		      (unsigned long long)op->op_off,
		      (unsigned long long)(op->op_end - op->op_off),
		      (unsigned long long)(end - op->op_off), weir_rc_str(rc, rcs, sizeof(rcs)));
	svc_op_fd_release(op);
	op->op_end = end;
	svc_write_finish(op);
}

/*
 * Reply a write: the bytes written, and the object's size before and after.
 * The size after is computed, not looked up (the size before was): the
 * write made the object at least op_end long, and a stat would cost what
 * the lookup before it costs. Another request may have changed the size
 * meanwhile; a client uses it only to undo its own growth conditionally
 * (OST_TRUNCATE if_size), which a wrong guess only skips.
 */
static void svc_write_reply(void *arg)
{
	struct svc_op *op = arg;
	Weir__ObjIoRep rep = WEIR__OBJ_IO_REP__INIT;

	rep.len = op->op_end - op->op_off;
	rep.obj_size_before = op->op_size_before;
	rep.obj_size = rep.len ? WEIR_MAX(op->op_size_before, op->op_end) : op->op_size_before;
	net_req_reply(op->op_rq, 0, &rep.base, NULL, 0);
	svc_op_free(op);
}

static void svc_write_finish(struct svc_op *op)
{
	/* HSM backpressure: the write is done; its reply may be held (oss/throttle.c) */
	uint32_t ms = atomic_load(&op->op_t.tg_obj.ob_ost->ot_throttle_ms);
	if (ms)
		oss_throttle_defer(op->op_rq->rq_srv_arg, ms, svc_write_reply, op);
	else
		svc_write_reply(op);
}

void oss_svc_write(struct net_req *rq)
{
	struct oss_target t;
	const char *why = "";
	int rc;

	Weir__ObjIoReq *req = net_req_unpack(rq, &weir__obj_io_req__descriptor);
	if (!req) {
		oss_svc_fail(rq, "write", NULL, -EPROTO, "malformed ObjIoReq");
		return;
	}
	rc = oss_svc_target(rq, req->ost, req->fid, req->stripe, req->capa, WEIR_CAPA_WRITE, &t,
				&why);
	if (!rc && req->len != rq->rq_hdr.fh_bulk_len) {
		rc = -EINVAL;
		why = "len differs from the bulk length";
	}
	if (!rc && (req->off > (uint64_t)INT64_MAX || req->len > (uint64_t)INT64_MAX - req->off)) {
		rc = -EFBIG;
		why = "off + len beyond the largest object offset";
	}
	uint64_t off = req->off;
	uint64_t len = req->len;
	protobuf_c_message_free_unpacked(&req->base, NULL);
	if (rc) {
		oss_svc_fail(rq, "write", &t, rc, why);
		return;
	}
	struct svc_op *op = svc_op_new(rq, "write", &t, OSS_IO_WRITE);
	if (!op) {
		oss_svc_fail(rq, "write", &t, -ENOMEM, "no memory");
		return;
	}
	op->op_buf = rq->rq_bulk; /* valid until the reply */
	op->op_writeback_min = ((struct oss *)rq->rq_srv_arg)->o_writeback_min;
	op->op_off = op->op_pos = off;
	op->op_end = off + len;
	op->op_finish = svc_write_finish;
	/* the size before the write, for the reply (a client's undo of a failed striped write) */
	struct oss_obj_attr oa;
	rc = oss_obj_getattr(&t.tg_obj, &oa);
	if (rc) {
		svc_op_fail(op, rc, "stat before the write failed");
		return;
	}
	op->op_size_before = oa.oa_size;
	if (!len) {
		/* create only */
		rc = oss_obj_seg_open(&t.tg_obj, 0, O_WRONLY | O_CREAT, &op->op_io.io_fd);
		if (rc) {
			svc_op_fail(op, rc, "cannot open/create the object");
			return;
		}
	}
	svc_op_step(op);
}

/* ------------------------------------------------------------------ OST_READ */

/*
 * A read is sized only when it has to be. The first pass reads the range
 * and needs no size while every piece comes back whole: that is all data
 * (holes inside a file read as zeros). At the first piece that comes back
 * short (its segment file ended) or whose segment file is missing, the
 * first pass stops: the read may have reached the end of the object. Then
 * the size (oss_obj_getattr: a stat, and a failed open or a listing of the
 * segment directory) cuts the reply at the end of the object. So a read
 * inside the object costs no metadata syscall.
 *
 * The size is taken after the read, so a write may have grown the object in
 * between. When the reply ends within the bytes the first pass read
 * (op_contig, the usual end-of-object read) they are sent. Otherwise (a hole
 * past a short segment file before data in a later segment, or the object
 * grew meanwhile) the range is read again up to that size (op_sized), the
 * way a read sized first does: pieces past a segment file's end, and
 * missing segments, are zeros; every byte sent was read after the size was
 * taken.
 */
static void svc_read_finish(struct svc_op *op)
{
	Weir__ObjIoRep rep = WEIR__OBJ_IO_REP__INIT;
	uint64_t len = op->op_end - op->op_off;

	if (op->op_short && !op->op_sized) {
		struct oss_obj_attr oa;
		int rc = oss_obj_getattr(&op->op_t.tg_obj, &oa);
		if (rc) {
			svc_op_fail(op, rc, "stat failed");
			return;
		}
		len = op->op_off < oa.oa_size ? WEIR_MIN(len, oa.oa_size - op->op_off) : 0;
		op->op_obj_size = oa.oa_size;
		op->op_absent = !oa.oa_exists;
		if (len > op->op_contig) {
			/* bytes past what the first pass read: read again, sized */
			op->op_sized = true;
			op->op_pos = op->op_off;
			op->op_end = op->op_off + len;
			svc_op_step(op);
			return;
		}
	}
	struct iovec iov = { op->op_buf, (size_t)len };
	rep.len = len;
	rep.obj_size = op->op_obj_size;
	rep.no_object = op->op_absent;
	net_req_reply(op->op_rq, 0, &rep.base, &iov, len ? 1 : 0);
	svc_op_free(op); /* frees the buffer, after the reply was sent */
}

void oss_svc_read(struct net_req *rq)
{
	struct oss_target t;
	const char *why = "";
	int rc;

	Weir__ObjIoReq *req = net_req_unpack(rq, &weir__obj_io_req__descriptor);
	if (!req) {
		oss_svc_fail(rq, "read", NULL, -EPROTO, "malformed ObjIoReq");
		return;
	}
	rc = oss_svc_target(rq, req->ost, req->fid, req->stripe, req->capa, WEIR_CAPA_READ, &t,
				&why);
	if (!rc && req->len > WEIR_FRAME_MAX_BULK) {
		rc = -EINVAL;
		why = "len over the 16 MiB bulk limit";
	}
	if (!rc && (req->off > (uint64_t)INT64_MAX || req->len > (uint64_t)INT64_MAX - req->off)) {
		rc = -EINVAL;
		why = "off + len beyond the largest object offset";
	}
	uint64_t off = req->off;
	uint64_t len = req->len;
	protobuf_c_message_free_unpacked(&req->base, NULL);
	if (rc) {
		oss_svc_fail(rq, "read", &t, rc, why);
		return;
	}
	struct svc_op *op = svc_op_new(rq, "read", &t, OSS_IO_READ);
	if (!op) {
		oss_svc_fail(rq, "read", &t, -ENOMEM, "no memory");
		return;
	}
	/* the whole range; svc_read_finish() cuts it at the end of the object */
	op->op_off = op->op_pos = off;
	op->op_end = off + len;
	op->op_finish = svc_read_finish;
	if (len) {
		op->op_buf = malloc(len);
		if (!op->op_buf) {
			svc_op_fail(op, -ENOMEM, "no memory for the read buffer");
			return;
		}
		op->op_buf_owned = true;
	}
	svc_op_step(op);
}

/* ------------------------------------------------------------------ OST_FSYNC */

static void svc_fsync_finish(struct svc_op *op)
{
	net_req_reply(op->op_rq, 0, NULL, NULL, 0);
	svc_op_free(op);
}

/* op_segs = 0 and every segment >= 1 that exists. */
static int svc_op_segs_load(struct svc_op *op)
{
	uint64_t *segs;
	size_t nr;

	int rc = oss_obj_segs_list(&op->op_t.tg_obj, &segs, &nr);
	if (rc)
		return rc;
	op->op_segs = malloc((nr + 1) * sizeof(*segs));
	if (!op->op_segs) {
		free(segs);
		return -ENOMEM;
	}
	op->op_segs[0] = 0;
	if (nr)
		memcpy(op->op_segs + 1, segs, nr * sizeof(*segs));
	op->op_nr_segs = nr + 1;
	free(segs);
	return 0;
}

void oss_svc_fsync(struct net_req *rq)
{
	struct oss_target t;
	const char *why = "";

	Weir__ObjReq *req = net_req_unpack(rq, &weir__obj_req__descriptor);
	if (!req) {
		oss_svc_fail(rq, "fsync", NULL, -EPROTO, "malformed ObjReq");
		return;
	}
	int rc = oss_svc_target(rq, req->ost, req->fid, req->stripe, req->capa, WEIR_CAPA_GETATTR, &t,
				&why);
	bool datasync = req->flags & 1;
	protobuf_c_message_free_unpacked(&req->base, NULL);
	if (rc) {
		oss_svc_fail(rq, "fsync", &t, rc, why);
		return;
	}
	struct svc_op *op = svc_op_new(rq, "fsync", &t, OSS_IO_FSYNC);
	if (!op) {
		oss_svc_fail(rq, "fsync", &t, -ENOMEM, "no memory");
		return;
	}
	op->op_datasync = datasync;
	op->op_finish = svc_fsync_finish;
	/* every segment (a missing object has none: nothing to sync), then the
	 * segment directory, so new segments' names are durable too */
	rc = svc_op_segs_load(op);
	if (rc) {
		svc_op_fail(op, rc, "cannot list the object's segments");
		return;
	}
	svc_op_step(op);
}

/* -------------------------------------------------------------- OST_FALLOCATE */

static void svc_fallocate_finish(struct svc_op *op)
{
	svc_op_reply_attr(op);
}

void oss_svc_fallocate(struct net_req *rq)
{
	struct oss_target t;
	const char *why = "";
	int mode = 0;

	Weir__ObjFallocReq *req = net_req_unpack(rq, &weir__obj_falloc_req__descriptor);
	if (!req) {
		oss_svc_fail(rq, "fallocate", NULL, -EPROTO, "malformed ObjFallocReq");
		return;
	}
	int rc = oss_svc_target(rq, req->ost, req->fid, req->stripe, req->capa,
				(req->mode & WEIR__FALLOC_FLAG__FA_PUNCH_HOLE) ? WEIR_CAPA_PUNCH
										: WEIR_CAPA_WRITE,
				&t, &why);
	uint64_t off = req->off;
	uint64_t len = req->len;
	uint32_t wmode = req->mode;
	protobuf_c_message_free_unpacked(&req->base, NULL);
	if (!rc && wmode != 0 && wmode != WEIR__FALLOC_FLAG__FA_KEEP_SIZE &&
	    wmode != (WEIR__FALLOC_FLAG__FA_PUNCH_HOLE | WEIR__FALLOC_FLAG__FA_KEEP_SIZE)) {
		rc = -EOPNOTSUPP;
		why = "mode is not 0, KEEP_SIZE or PUNCH_HOLE|KEEP_SIZE";
	}
	if (!rc && (!len || off > (uint64_t)INT64_MAX)) {
		rc = -EINVAL;
		why = "empty range or negative offset";
	}
	if (!rc && len > (uint64_t)INT64_MAX - off) {
		rc = -EFBIG;
		why = "off + len beyond the largest object offset";
	}
	if (rc) {
		oss_svc_fail(rq, "fallocate", &t, rc, why);
		return;
	}
	if (wmode & WEIR__FALLOC_FLAG__FA_KEEP_SIZE)
		mode |= FALLOC_FL_KEEP_SIZE;
	if (wmode & WEIR__FALLOC_FLAG__FA_PUNCH_HOLE)
		mode |= FALLOC_FL_PUNCH_HOLE;
	struct svc_op *op = svc_op_new(rq, "fallocate", &t, OSS_IO_FALLOCATE);
	if (!op) {
		oss_svc_fail(rq, "fallocate", &t, -ENOMEM, "no memory");
		return;
	}
	op->op_mode = mode;
	op->op_punch = (mode & FALLOC_FL_PUNCH_HOLE) != 0;
	op->op_off = op->op_pos = off;
	op->op_end = off + len;
	op->op_finish = svc_fallocate_finish;
	if (op->op_punch) {
		rc = svc_op_segs_load(op);
		if (rc) {
			svc_op_fail(op, rc, "cannot list the object's segments");
			return;
		}
	}
	svc_op_step(op);
}
