/*
 * client/io.c - striped, parallel data I/O: weir_pread/weir_pwrite,
 * weir_fallocate, SEEK_DATA/SEEK_HOLE, and the per-object RPCs (glimpse,
 * truncate, fsync, fallocate, seek) of a file.
 *
 * DESIGN. A file range [off, off+len) touches, in each object i, exactly the
 * contiguous object extent [lb(i, off), lb(i, off+len)) (lb =
 * weir_layout_obj_lower_bound). Each extent is cut into RPCs of at most
 * fs_rpc_max_bytes object bytes and WC_RPC_MAX_IOV buffer chunks (one chunk
 * per stripe unit, mapped back to the caller's buffer with
 * weir_layout_obj_to_file; adjacent chunks are merged). RPCs are generated
 * lazily, round-robin over the objects so every OST works at once, with up to
 * fs_max_inflight in flight; the calling thread waits for the oldest and
 * starts the next. Bulk goes straight from / into the caller's buffer: no
 * copies. An RPC that fails with -ECONNRESET (or -ECONNREFUSED) is sent once
 * more, after one refetch of the cluster map per call in case the OSS came
 * back at another address (the RPC layer reconnects); if the OSS still cannot
 * be reached, the RPC waits for it and is sent again (wc_recover_wait,
 * client/recover.c: object requests are idempotent) until the mount's
 * recovery limit. After the first error no new RPC starts; those in flight are
 * always waited for before returning, since they point into the buffer.
 *
 * Reads: an object shorter than asked is a hole or the end of file; the
 * missing bytes are zero-filled, and if any RPC came back short the exact
 * file size (MDS + glimpse) decides how many bytes the read returns.
 *
 * HSM (client/hsm.c): on a handle of a released file, a read first waits
 * until the MDS says its range is restored, then reads exactly the bytes
 * below the MDS's size (the objects may be partial: short objects are
 * zeros, not the end of file). Writes and fallocate wait for the whole
 * file first.
 */
#define _GNU_SOURCE
#include "client_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "common/capa.h"
#include "common/log.h"
#include "common/util.h"

int wc_io_errno(int rc, bool write)
{
	switch (rc) {
	case 0:
	case -ETIMEDOUT:
	case -EINTR: /* a signal ended a wait for recovery (client/recover.c) */
	case -ECONNRESET:
	case -ECONNREFUSED:
	case -EHOSTUNREACH:
	case -ENOMEM:
	case -EPROTO:
		return rc;
	case -ENOSPC:
	case -EDQUOT:
	case -EFBIG:
	case -EOPNOTSUPP:
		return write ? rc : -EIO;
	default:
		return -EIO;
	}
}

/* Errors after which an OST RPC is sent once more. */

static bool wc_retryable(int rc)
{
	return rc == -ECONNRESET || rc == -ECONNREFUSED;
}

/*
 * An OSS that has no capability key yet (it started and has not registered
 * with the MDS since, oss/capa.c) answers -EAGAIN: wait (20 ms, doubling up
 * to 500 ms) and send again, for up to the mount's rpc timeout counted from
 * the first -EAGAIN of the call (*first_ns, 0 before). \return true to send
 * again, false once the time is up.
 */
static bool wc_oss_keyless_wait(struct weir_fs *fs, uint64_t *first_ns, unsigned *waits)
{
	uint64_t now = weir_now_ns();
	if (!*first_ns)
		*first_ns = now;
	if (now - *first_ns >= (uint64_t)fs->fs_rpc_timeout_ms * 1000000ULL)
		return false;
	unsigned ms = WEIR_MIN(20U << WEIR_MIN(*waits, 5U), 500U);
	(*waits)++;
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	return true;
}

/* Refetch the cluster map, at most once per call (*done tracks it). */
static void wc_map_refresh_once(struct weir_fs *fs, bool *done)
{
	if (*done)
		return;
	*done = true;
	int rc = wc_map_refresh(fs);
	if (rc)
		WEIR_LOG_WARN("rc=%d: cannot refetch the cluster map", rc);
}

/* ------------------------------------------------------------ data RPCs */

struct wc_slot {
	struct net_call s_call;
	struct net_conn *s_conn;
	Weir__ObjIoReq s_req;
	Weir__Fid s_fid;
	struct wc_capa_buf s_capa; /* the OST capability it carries (client/capa.c) */
	uint32_t s_stripe;
	uint64_t s_obj_off;     /* object extent of this RPC: [s_obj_off, +s_len) */
	uint64_t s_len;
	int s_start_rc;         /* nonzero: failed before it was sent */
	bool s_start_xport;     /* s_start_rc is a transport error (connect, send) */
	struct wc_target *s_tgt; /* its OSS, for recovery (NULL before known) */
	struct wc_wait s_wait;  /* its wait for that OSS (client/recover.c) */
	uint64_t s_sent_ns;     /* weir_now_ns() when it was last sent */
	int s_tries;
	int s_nr_iov;
	struct iovec s_iov[WC_RPC_MAX_IOV];
};

/* What one write did to one object, gathered from its RPCs' replies. */
struct wc_wobj {
	uint64_t wo_gap;        /* lowest object offset a started RPC did not write; UINT64_MAX none */
	uint64_t wo_hi;         /* end of the highest bytes written, object offset; 0 none */
	uint64_t wo_before;     /* smallest object size before an RPC of ours; UINT64_MAX none */
	uint64_t wo_after;      /* largest object size after one */
};

struct wc_io {
	struct weir_fs *io_fs;
	struct weir_file *io_fh;  /* its object bitmaps (missing data is an error) */
	const struct weir_layout *io_lo;
	const struct weir_fid *io_fid;
	bool io_write;
	char *io_buf;
	uint64_t io_off;        /* file offset of io_buf[0] */
	uint64_t io_cur[WEIR_LAYOUT_MAX_STRIPES]; /* next object offset to send */
	uint64_t io_end[WEIR_LAYOUT_MAX_STRIPES];
	uint32_t io_next;       /* object the next RPC comes from */
	bool io_short;          /* a read came back short */
	bool io_stop;           /* a write came back short: start no more RPCs */
	bool io_map_fresh;      /* the cluster map was refetched for a retry */
	uint64_t io_keyless_ns; /* first -EAGAIN from a keyless OSS (wc_oss_keyless_wait), 0 none */
	unsigned io_keyless_waits;
	int io_rc;              /* first error */
	struct wc_wobj io_wobj[WEIR_LAYOUT_MAX_STRIPES]; /* writes: per object */
};

/* Cut the next RPC into \a s. \return false when every extent is sent. */
static bool wc_io_next(struct wc_io *io, struct wc_slot *s)
{
	const struct weir_layout *lo = io->io_lo;
	uint64_t ss = lo->lo_stripe_size;
	uint64_t max = io->io_fs->fs_rpc_max_bytes;
	uint32_t i = io->io_next;
	uint32_t n;

	for (n = 0; n < lo->lo_stripe_count; n++, i = (i + 1) % lo->lo_stripe_count)
		if (io->io_cur[i] < io->io_end[i])
			break;
	if (n == lo->lo_stripe_count)
		return false;
	io->io_next = (i + 1) % lo->lo_stripe_count;

	uint64_t pos = io->io_cur[i], end = io->io_end[i], bytes = 0;
	int nr = 0;
	while (pos < end && bytes < max) {
		uint64_t cend = WEIR_MIN((pos / ss + 1) * ss, end);
		cend = WEIR_MIN(cend, pos + (max - bytes));
		char *p = io->io_buf + (weir_layout_obj_to_file(lo, i, pos) - io->io_off);
		size_t clen = (size_t)(cend - pos);
		if (nr && (char *)s->s_iov[nr - 1].iov_base + s->s_iov[nr - 1].iov_len == p) {
			s->s_iov[nr - 1].iov_len += clen;
		} else {
			if (nr == WC_RPC_MAX_IOV)
				break;
			s->s_iov[nr].iov_base = p;
			s->s_iov[nr].iov_len = clen;
			nr++;
		}
		bytes += clen;
		pos = cend;
	}
	s->s_stripe = i;
	s->s_obj_off = io->io_cur[i];
	s->s_len = bytes;
	s->s_nr_iov = nr;
	s->s_tries = 0;
	io->io_cur[i] = pos;
	return true;
}

static void wc_slot_start(struct wc_io *io, struct wc_slot *s)
{
	uint32_t ost = io->io_lo->lo_osts[s->s_stripe];

	weir__obj_io_req__init(&s->s_req);
	wc_fid_to_pb(io->io_fid, &s->s_fid);
	s->s_req.ost = ost;
	s->s_req.fid = &s->s_fid;
	s->s_req.stripe = s->s_stripe;
	s->s_req.off = s->s_obj_off;
	s->s_req.len = s->s_len;
	net_call_init(&s->s_call,
		      io->io_write ? WEIR__WIRE_OP__OST_WRITE : WEIR__WIRE_OP__OST_READ,
		      &s->s_req.base);
	s->s_call.nc_timeout_ms = io->io_fs->fs_rpc_timeout_ms;
	if (io->io_write) {
		s->s_call.nc_req_bulk = s->s_iov;
		s->s_call.nc_req_nr_bulk = s->s_nr_iov;
	} else {
		s->s_call.nc_rep_bulk = s->s_iov;
		s->s_call.nc_rep_nr_bulk = s->s_nr_iov;
	}
	s->s_tries++;
	s->s_start_rc = wc_capa_get(io->io_fs, io->io_fid,
				    io->io_write ? WEIR_CAPA_WRITE : WEIR_CAPA_READ, &s->s_capa);
	if (s->s_capa.cb_set)
		s->s_req.capa = &s->s_capa.cb_capa;
	s->s_start_xport = false;
	s->s_tgt = NULL;
	s->s_sent_ns = weir_now_ns();
	if (!s->s_start_rc) {
		s->s_start_xport = true;
		s->s_start_rc = wc_ost_conn(io->io_fs, ost, &s->s_conn, &s->s_tgt);
	}
	if (!s->s_start_rc)
		s->s_start_rc = net_call_start(s->s_conn, &s->s_call);
}

/* Zero the slot's buffer bytes from object byte s_obj_off + \a got on. */
static void wc_slot_zero_from(struct wc_slot *s, uint64_t got)
{
	for (int k = 0; k < s->s_nr_iov; k++) {
		size_t l = s->s_iov[k].iov_len;
		if (got >= l) {
			got -= l;
			continue;
		}
		memset((char *)s->s_iov[k].iov_base + got, 0, l - (size_t)got);
		got = 0;
	}
}

static void wc_io_fail(struct wc_io *io, struct wc_slot *s, int rc, const char *why)
{
	if (!io->io_rc)
		io->io_rc = wc_io_errno(rc, io->io_write);
	WEIR_LOG_WARN("op=%s fid=" WEIR_FID_F " stripe=%u ost=%u off=%llu len=%llu rc=%d: %s",
		      io->io_write ? "write" : "read", WEIR_FID_P(io->io_fid), s->s_stripe,
		      io->io_lo->lo_osts[s->s_stripe], (unsigned long long)s->s_obj_off,
		      (unsigned long long)s->s_len, rc, why);
}

/* A write RPC finished having written its first \a done bytes (0: failed). */
static void wc_slot_wrote(struct wc_io *io, const struct wc_slot *s, uint64_t done,
			  const Weir__ObjIoRep *rep)
{
	struct wc_wobj *wo = &io->io_wobj[s->s_stripe];

	if (done < s->s_len)
		wo->wo_gap = WEIR_MIN(wo->wo_gap, s->s_obj_off + done);
	if (!rep)
		return;
	if (done) {
		wo->wo_hi = WEIR_MAX(wo->wo_hi, s->s_obj_off + done);
		/* the object exists now: reported at close and fsync */
		atomic_fetch_or(&io->io_fh->f_objs_written[s->s_stripe / 8],
				(uint8_t)(1u << (s->s_stripe % 8)));
	}
	wo->wo_before = WEIR_MIN(wo->wo_before, rep->obj_size_before);
	wo->wo_after = WEIR_MAX(wo->wo_after, rep->obj_size);
}

/*
 * A read found no object for the slot's stripe: a hole, unless the object
 * is known to have been written (the MDS's bitmap at open, or this handle's
 * own writes), in which case its data is lost: -EIO, never zeros.
 */
static bool wc_slot_lost(struct wc_io *io, const struct wc_slot *s)
{
	uint32_t i = s->s_stripe;
	uint8_t bit = (uint8_t)(1u << (i % 8));
	if (!(io->io_fh->f_objs_known[i / 8] & bit) &&
	    !(atomic_load(&io->io_fh->f_objs_written[i / 8]) & bit))
		return false;
	WEIR_LOG_ERROR("fid=" WEIR_FID_F " stripe=%u ost=%u: the object was written but is gone"
		       " from its OST: lost data (-EIO)",
		       WEIR_FID_P(io->io_fid), i, io->io_lo->lo_osts[i]);
	wc_io_fail(io, (struct wc_slot *)s, -EIO, "object lost");
	return true;
}

static void wc_slot_done(struct wc_io *io, struct wc_slot *s, int rc)
{
	Weir__ObjIoRep *rep;

	if (rc && io->io_write)
		wc_slot_wrote(io, s, 0, NULL);
	if (rc == -ENOENT && !io->io_write) {
		/* no object yet: all hole (unless it was written and is lost) */
		if (wc_slot_lost(io, s))
			return;
		wc_slot_zero_from(s, 0);
		io->io_short = true;
		return;
	}
	if (rc) {
		wc_io_fail(io, s, rc, "RPC failed");
		return;
	}
	rep = net_call_unpack(&s->s_call, &weir__obj_io_rep__descriptor);
	if (!rep) {
		wc_io_fail(io, s, -EPROTO, "malformed reply");
		return;
	}
	if (io->io_write) {
		if (rep->len == 0 || rep->len > s->s_len) {
			wc_slot_wrote(io, s, 0, NULL);
			wc_io_fail(io, s, -EPROTO, "write reply length out of range");
		} else {
			wc_slot_wrote(io, s, rep->len, rep);
		}
		if (rep->len && rep->len < s->s_len) {
			/* the OST met an error (a full disk) after part of it */
			io->io_stop = true;
			WEIR_LOG_WARN("op=write fid=" WEIR_FID_F " stripe=%u ost=%u off=%llu "
				      "len=%llu done=%llu: short write", WEIR_FID_P(io->io_fid),
				      s->s_stripe, io->io_lo->lo_osts[s->s_stripe],
				      (unsigned long long)s->s_obj_off,
				      (unsigned long long)s->s_len, (unsigned long long)rep->len);
		}
	} else if (rep->len > s->s_len || rep->len != s->s_call.nc_rep_bulk_len) {
		wc_io_fail(io, s, -EPROTO, "reply length does not match its bulk");
	} else if (rep->no_object && wc_slot_lost(io, s)) {
		/* an object written and gone: -EIO (logged) */
	} else if (rep->len < s->s_len) {
		wc_slot_zero_from(s, rep->len);
		io->io_short = true;
	}
	protobuf_c_message_free_unpacked(&rep->base, NULL);
}

/* Upper bound on the RPCs of \a io (each but an object's last carries
 * at least min(max bytes, 62 stripe units)). */
static uint64_t wc_io_nr_rpcs(const struct wc_io *io)
{
	uint64_t per = WEIR_MIN((uint64_t)io->io_fs->fs_rpc_max_bytes,
				62ULL * io->io_lo->lo_stripe_size);
	uint64_t n = 0;

	for (uint32_t i = 0; i < io->io_lo->lo_stripe_count; i++)
		if (io->io_end[i] > io->io_cur[i])
			n += 1 + (io->io_end[i] - io->io_cur[i]) / per;
	return n;
}

static int wc_io_run(struct wc_io *io)
{
	struct weir_fs *fs = io->io_fs;
	uint32_t nslots = (uint32_t)WEIR_MIN((uint64_t)fs->fs_max_inflight, wc_io_nr_rpcs(io));
	struct wc_slot *slots, **ring, **free_list;
	uint32_t head = 0, busy = 0, nr_free = 0;

	if (nslots == 0)
		return 0;
	slots = calloc(nslots, sizeof(*slots));
	ring = calloc(2 * (size_t)nslots, sizeof(*ring));
	if (!slots || !ring) {
		free(slots);
		free(ring);
		return -ENOMEM;
	}
	free_list = ring + nslots;
	for (uint32_t k = 0; k < nslots; k++)
		free_list[nr_free++] = &slots[k];

	for (;;) {
		while (nr_free && !io->io_rc && !io->io_stop) {
			struct wc_slot *s = free_list[nr_free - 1];
			if (!wc_io_next(io, s))
				break;
			nr_free--;
			s->s_wait = (struct wc_wait){ 0 };
			wc_slot_start(io, s);
			ring[(head + busy++) % nslots] = s;
		}
		if (!busy)
			break;
		struct wc_slot *s = ring[head];
		head = (head + 1) % nslots;
		busy--;
		int rc = s->s_start_rc ? s->s_start_rc : net_call_wait(&s->s_call);
		if (rc == -EAGAIN && !s->s_start_rc && !io->io_rc) {
			/* the OSS has no capability key yet: wait for it, no try spent */
			if (wc_oss_keyless_wait(fs, &io->io_keyless_ns, &io->io_keyless_waits)) {
				net_call_fini(&s->s_call);
				s->s_tries--;
				wc_slot_start(io, s);
				ring[(head + busy++) % nslots] = s;
				continue;
			}
			rc = -ETIMEDOUT;
		}
		bool xport = s->s_start_rc ? s->s_start_xport : !s->s_call.nc_rc_remote;
		if (!xport && s->s_tgt)
			wc_target_up(s->s_tgt, s->s_sent_ns);
		if (xport && wc_recover_retryable(rc) && s->s_tries >= 2 && !io->io_rc) {
			/* the OSS is away: wait for it, then send again (idempotent) */
			int wrc = wc_recover_wait(fs, s->s_tgt, &s->s_wait, rc, s->s_sent_ns);
			if (!wrc) {
				net_call_fini(&s->s_call);
				s->s_tries = 1;
				wc_slot_start(io, s);
				ring[(head + busy++) % nslots] = s;
				continue;
			}
			rc = wrc;
		}
		bool capa_refused = rc == -EACCES && !s->s_start_rc && s->s_capa.cb_set;
		if ((wc_retryable(rc) || capa_refused) && s->s_tries < 2 && !io->io_rc) {
			WEIR_LOG_INFO("ost=%u rc=%d: resending", io->io_lo->lo_osts[s->s_stripe],
				      rc);
			net_call_fini(&s->s_call);
			if (capa_refused) /* a new capability (the MDS's key may be new) */
				wc_capa_forget(fs, io->io_fid);
			else
				wc_map_refresh_once(fs, &io->io_map_fresh);
			wc_slot_start(io, s);
			ring[(head + busy++) % nslots] = s;
			continue;
		}
		wc_slot_done(io, s, rc);
		net_call_fini(&s->s_call);
		free_list[nr_free++] = s;
	}
	free(slots);
	free(ring);
	return io->io_rc;
}

/* Set up \a io for [off, off+len) of \a fh's file. */
static void wc_io_init(struct wc_io *io, struct weir_file *fh, void *buf, size_t len,
		       uint64_t off, bool write)
{
	const struct weir_layout *lo = &fh->f_layout;

	io->io_fs = fh->f_fs;
	io->io_fh = fh;
	io->io_lo = lo;
	io->io_fid = &fh->f_fid;
	io->io_write = write;
	io->io_buf = buf;
	io->io_off = off;
	io->io_next = 0;
	io->io_short = false;
	io->io_stop = false;
	io->io_map_fresh = false;
	io->io_keyless_ns = 0;
	io->io_keyless_waits = 0;
	io->io_rc = 0;
	for (uint32_t i = 0; i < lo->lo_stripe_count; i++) {
		io->io_cur[i] = weir_layout_obj_lower_bound(lo, i, off);
		io->io_end[i] = weir_layout_obj_lower_bound(lo, i, off + len);
		if (write) {
			io->io_wobj[i].wo_gap = UINT64_MAX;
			io->io_wobj[i].wo_hi = 0;
			io->io_wobj[i].wo_before = UINT64_MAX;
			io->io_wobj[i].wo_after = 0;
		}
	}
	/* start with the object holding the first byte */
	uint64_t oo;
	weir_layout_file_to_obj(lo, off, &io->io_next, &oo);
}

/* The file's size for a read (MDS, glimpsed when stale); kept as the hint. */
static int wc_read_size(struct weir_file *fh, uint64_t *size)
{
	uint64_t blocks;
	int rc = wc_file_size(fh, size, &blocks, NULL);
	if (!rc)
		atomic_store(&fh->f_size_hint, *size);
	return rc;
}

ssize_t weir_pread(weir_file_t *fh, void *buf, size_t len, uint64_t off)
{
	struct wc_io io;
	uint64_t size = 0;
	int rc;

	if (!fh)
		return -EINVAL;
	if (wc_file_stale(fh))
		return -EIO; /* evicted since the open (client/lease.c) */
	if (!fh->f_read)
		return -EBADF;
	if (fh->f_is_dir)
		return -EISDIR;
	if (len == 0)
		return 0;
	if (!buf || len > (uint64_t)WEIR_MAX_FILE_OFF || off > (uint64_t)WEIR_MAX_FILE_OFF ||
	    len > (uint64_t)WEIR_MAX_FILE_OFF - off)
		return -EINVAL;
	if (atomic_load(&fh->f_released)) {
		uint64_t n;

		rc = wc_hsm_read_prep(fh, off, len, &n);
		if (rc)
			return rc;
		if (n != UINT64_MAX) {
			/* still released, [off, off+n) restored: exactly those bytes */
			if (n == 0)
				return 0;
			wc_io_init(&io, fh, buf, (size_t)n, off, false);
			rc = wc_io_run(&io);
			return rc ? rc : (ssize_t)n;
		}
	}
	/* A read at or past where the end of file probably is (the size at
	 * open, or at this handle's last size lookup) asks the MDS for the
	 * size first and skips the OSTs when the file still ends there: an
	 * open-read-close of an empty file, or a sequential reader's last read,
	 * costs one MDS round trip instead of an OST read and then the size.
	 * The size is looked up after this call began, so every write that
	 * completed before it counts, as with the lookup after a short read.
	 * (A handle open for writing would glimpse every object: not worth it.) */
	bool sized = !fh->f_write && off >= atomic_load(&fh->f_size_hint);
	if (sized) {
		rc = wc_read_size(fh, &size);
		if (rc || off >= size)
			return rc;
	}
	wc_io_init(&io, fh, buf, len, off, false);
	rc = wc_io_run(&io);
	if (rc)
		return rc;
	if (!io.io_short)
		return (ssize_t)len;
	if (!sized) {
		rc = wc_read_size(fh, &size);
		if (rc)
			return rc;
	}
	if (off >= size)
		return 0;
	return (ssize_t)WEIR_MIN((uint64_t)len, size - off);
}

static int wc_file_kill_suid(struct weir_file *fh);

/*
 * The result of a write whose RPCs are done: \a len, or a short count, or
 * an error having changed no size.
 *
 * A write's RPCs run in parallel, so when one fails (an OST is full) others,
 * later in the file, may have succeeded, and an OST may have written part of
 * one (a short count: what it wrote, contiguously from the RPC's start).
 * What the caller is told is the prefix of [off, off+len) written without a
 * gap: P = the smallest file offset, over the objects, of the object's first
 * byte not written (an RPC that failed or came back short, or never started).
 * Bytes written past P must not make the file longer than the write's result
 * says: an object whose RPCs wrote past its share of the prefix, bound =
 * lb(off + P), and which grew doing so (its size after our RPCs is above the
 * size it had before them) is truncated back to max(size before, bound),
 * with OST_TRUNCATE's if_size so that it only happens while the object still
 * has the size our last RPC left (a write by another client in between is
 * left alone), and only when our RPCs' highest byte is the object's end
 * (else the object was longer before: nothing of ours to undo). Bytes past P
 * inside the old size may hold the new data, as after any failed write. The size before comes from the replies
 * (obj_size_before: the smallest of them is the size before the first of
 * our RPCs to run, since our failed RPCs wrote nothing).
 */
static ssize_t wc_write_settle(struct wc_io *io, size_t len, int rc)
{
	const struct weir_layout *lo = io->io_lo;
	struct wc_objop ops[WEIR_LAYOUT_MAX_STRIPES];
	uint64_t p = len;
	bool undo = false;

	for (uint32_t i = 0; i < lo->lo_stripe_count; i++) {
		uint64_t w = WEIR_MIN(io->io_cur[i], io->io_wobj[i].wo_gap);
		if (w < io->io_end[i])
			p = WEIR_MIN(p, weir_layout_obj_to_file(lo, i, w) - io->io_off);
	}
	if (p == len)
		return (ssize_t)len;
	memset(ops, 0, sizeof(ops));
	for (uint32_t i = 0; i < lo->lo_stripe_count; i++) {
		const struct wc_wobj *wo = &io->io_wobj[i];
		uint64_t bound = weir_layout_obj_lower_bound(lo, i, io->io_off + p);
		uint64_t target = WEIR_MAX(wo->wo_before, bound);
		/* wo_after > wo_hi: the object was longer than anything we wrote */
		ops[i].oo_skip = wo->wo_hi <= bound || wo->wo_after <= target ||
				 wo->wo_after > wo->wo_hi;
		if (ops[i].oo_skip)
			continue;
		ops[i].oo_size = target;
		ops[i].oo_if_size = wo->wo_after;
		undo = true;
		WEIR_LOG_INFO("op=write fid=" WEIR_FID_F " stripe=%u ost=%u size=%llu to=%llu: "
			      "undoing the growth past the bytes written", WEIR_FID_P(io->io_fid),
			      i, lo->lo_osts[i], (unsigned long long)wo->wo_after,
			      (unsigned long long)target);
	}
	if (undo) {
		int urc = wc_obj_run(io->io_fs, io->io_fid, lo, WEIR__WIRE_OP__OST_TRUNCATE, ops);
		if (urc)
			WEIR_LOG_WARN("op=write fid=" WEIR_FID_F " rc=%d: cannot undo the growth "
				      "past the bytes written", WEIR_FID_P(io->io_fid), urc);
	}
	if (p)
		return (ssize_t)p;
	return rc ? rc : -EIO;
}

ssize_t weir_pwrite(weir_file_t *fh, const void *buf, size_t len, uint64_t off)
{
	struct wc_io io;
	int rc;

	if (!fh)
		return -EINVAL;
	if (wc_file_stale(fh))
		return -EIO; /* evicted since the open (client/lease.c) */
	if (!fh->f_write)
		return -EBADF;
	if (fh->f_is_dir)
		return -EISDIR;
	if (len == 0)
		return 0;
	if (!buf)
		return -EINVAL;
	if (len > (uint64_t)WEIR_MAX_FILE_OFF || off > (uint64_t)WEIR_MAX_FILE_OFF ||
	    len > (uint64_t)WEIR_MAX_FILE_OFF - off)
		return -EFBIG;
	rc = wc_hsm_write_prep(fh); /* a released file: restore it all first */
	if (rc)
		return rc;
	rc = wc_file_kill_suid(fh);
	if (rc)
		return rc;
	wc_io_init(&io, fh, (void *)buf, len, off, true);
	rc = wc_io_run(&io);
	wc_file_touch(fh); /* even a failed write may have changed some bytes */
	return wc_write_settle(&io, len, rc);
}

/*
 * Before the first write through \a fh: a file with setuid (or setgid and
 * group exec) written by anyone but root loses those bits, as the kernel's
 * file_remove_privs() does. The MDS applies SA_KILL_SUID (and keeps them for
 * root). Once per handle: the mode is the one seen at open.
 */
static int wc_file_kill_suid(struct weir_file *fh)
{
	struct wc_mdc_sattr sa = { .sa_valid = WEIR__SETATTR_VALID__SA_KILL_SUID };

	if (!atomic_load(&fh->f_kill_suid) || !atomic_exchange(&fh->f_kill_suid, false))
		return 0;
	int rc = wc_mdc_setattr(fh->f_fs, WC_MDC_FID(&fh->f_fid), &sa, NULL, NULL);
	if (rc) {
		atomic_store(&fh->f_kill_suid, true); /* try again with the next write */
		WEIR_LOG_WARN("op=kill_suid fid=" WEIR_FID_F " rc=%d", WEIR_FID_P(&fh->f_fid), rc);
		return rc;
	}
	return 0;
}

void wc_file_touch(struct weir_file *fh)
{
	int64_t now = (int64_t)weir_wall_ns();
	int64_t cur = atomic_load(&fh->f_mtime_ns);

	/* this handle's first change: what the cache holds of the file (the
	 * creator's lease on its attributes: client/mdc.c, wc_mdc_open) is
	 * out of date; no grant brings it back while the file is open for
	 * writing (the MDS grants ATTR on such a file only to its create) */
	if (!cur)
		wc_mdl_changed(fh->f_fs, &fh->f_fid);
	while (cur < now && !atomic_compare_exchange_weak(&fh->f_mtime_ns, &cur, now))
		;
}

/* Linux's fallocate(2) mode bits, and Weir's wire bits for them. */
static int wc_falloc_mode(int mode, uint32_t *wire)
{
	switch (mode) {
	case 0:
		*wire = 0;
		return 0;
	case FALLOC_FL_KEEP_SIZE:
		*wire = WEIR__FALLOC_FLAG__FA_KEEP_SIZE;
		return 0;
	case FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE:
		*wire = WEIR__FALLOC_FLAG__FA_PUNCH_HOLE | WEIR__FALLOC_FLAG__FA_KEEP_SIZE;
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

int weir_fallocate(weir_file_t *fh, int mode, uint64_t off, uint64_t len)
{
	struct wc_objop ops[WEIR_LAYOUT_MAX_STRIPES];
	const struct weir_layout *lo;
	uint32_t wire;
	int rc;

	/* checks in the order of Linux's vfs_fallocate() */
	if (!fh)
		return -EINVAL;
	if (wc_file_stale(fh))
		return -EIO; /* evicted since the open (client/lease.c) */
	if (off > (uint64_t)WEIR_MAX_FILE_OFF || len == 0 || len > (uint64_t)WEIR_MAX_FILE_OFF)
		return -EINVAL;
	rc = wc_falloc_mode(mode, &wire);
	if (rc)
		return rc;
	if (!fh->f_write)
		return -EBADF;
	if (fh->f_is_dir)
		return -EISDIR;
	if (len > (uint64_t)WEIR_MAX_FILE_OFF - off)
		return -EFBIG;
	rc = wc_hsm_write_prep(fh); /* a released file: restore it all first */
	if (rc)
		return rc;
	rc = wc_file_kill_suid(fh);
	if (rc)
		return rc;
	lo = &fh->f_layout;
	memset(ops, 0, sizeof(ops));
	for (uint32_t i = 0; i < lo->lo_stripe_count; i++) {
		/* the object extent [off, off+len) maps to: contiguous, maybe empty */
		uint64_t a = weir_layout_obj_lower_bound(lo, i, off);
		uint64_t b = weir_layout_obj_lower_bound(lo, i, off + len);
		ops[i].oo_skip = a == b;
		ops[i].oo_off = a;
		ops[i].oo_len = b - a;
		ops[i].oo_flags = wire;
	}
	rc = wc_obj_run(fh->f_fs, &fh->f_fid, lo, WEIR__WIRE_OP__OST_FALLOCATE, ops);
	wc_file_touch(fh);
	return rc;
}

int wc_file_seek(struct weir_file *fh, uint64_t off, int whence, uint64_t *res)
{
	struct wc_objop ops[WEIR_LAYOUT_MAX_STRIPES];
	const struct weir_layout *lo = &fh->f_layout;
	bool hole = whence == SEEK_HOLE;
	uint64_t size, blocks, best;
	int rc;

	rc = wc_file_size(fh, &size, &blocks, NULL);
	if (rc)
		return rc;
	if (off >= size)
		return -ENXIO;
	if (atomic_load(&fh->f_released)) {
		/* HSM released: the objects say nothing; report no holes (all data
		 * up to the end of file), which POSIX allows */
		*res = hole ? size : off;
		return 0;
	}
	memset(ops, 0, sizeof(ops));
	for (uint32_t i = 0; i < lo->lo_stripe_count; i++) {
		ops[i].oo_off = weir_layout_obj_lower_bound(lo, i, off);
		ops[i].oo_flags = hole ? WEIR__SEEK_WHENCE__SK_HOLE : WEIR__SEEK_WHENCE__SK_DATA;
	}
	rc = wc_obj_run(fh->f_fs, &fh->f_fid, lo, WEIR__WIRE_OP__OST_SEEK, ops);
	if (rc)
		return rc;
	/*
	 * Object i's bytes, in file order, are its object offsets in order, and
	 * the first of them at or after off is object offset lb_i. So the first
	 * data (hole) byte of the file at or after off is the smallest file
	 * offset of each object's first data (hole) byte at or after lb_i. An
	 * object with no hole after lb_i (found false) has one at lb_i: nothing
	 * of it is there. Offsets at or past the object's share of the file's
	 * size are past the end of file (which is a hole).
	 */
	best = hole ? size : UINT64_MAX;
	for (uint32_t i = 0; i < lo->lo_stripe_count; i++) {
		uint64_t lb = weir_layout_obj_lower_bound(lo, i, off);
		uint64_t end = weir_layout_obj_lower_bound(lo, i, size);
		uint64_t o = ops[i].oo_found ? ops[i].oo_off : (hole ? lb : UINT64_MAX);
		if (o == UINT64_MAX)
			continue;
		if (o < lb) {
			WEIR_LOG_WARN("op=seek fid=" WEIR_FID_F " stripe=%u ost=%u off=%llu "
				      "found=%llu: OST answered an offset before the one asked",
				      WEIR_FID_P(&fh->f_fid), i, lo->lo_osts[i],
				      (unsigned long long)lb, (unsigned long long)o);
			return -EPROTO;
		}
		if (o >= end)
			continue; /* past the end of file */
		best = WEIR_MIN(best, weir_layout_obj_to_file(lo, i, o));
	}
	if (best == UINT64_MAX)
		return -ENXIO;
	*res = best;
	return 0;
}

/* ------------------------------------------------------------ object RPCs */

struct wc_ocall {
	struct net_call oc_call;
	union {
		Weir__ObjReq obj;
		Weir__ObjTruncReq trunc;
		Weir__ObjFallocReq falloc;
		Weir__ObjSeekReq seek;
	} oc_req;
	Weir__Fid oc_fid;
	struct wc_capa_buf oc_capa;
	int oc_start_rc;
	bool oc_start_xport;     /* oc_start_rc is a transport error */
	struct wc_target *oc_tgt; /* its OSS, for recovery */
	uint64_t oc_sent_ns;      /* weir_now_ns() when it was last sent */
	int oc_tries;
};

static void wc_ocall_start(struct weir_fs *fs, const struct weir_fid *fid,
			   const struct weir_layout *lo, uint16_t op, uint32_t i,
			   const struct wc_objop *in, struct wc_ocall *oc)
{
	struct net_conn *conn;
	ProtobufCMessage *req;

	wc_fid_to_pb(fid, &oc->oc_fid);
	if (op == WEIR__WIRE_OP__OST_TRUNCATE) {
		weir__obj_trunc_req__init(&oc->oc_req.trunc);
		oc->oc_req.trunc.ost = lo->lo_osts[i];
		oc->oc_req.trunc.fid = &oc->oc_fid;
		oc->oc_req.trunc.stripe = i;
		oc->oc_req.trunc.size = in->oo_size;
		oc->oc_req.trunc.if_size = in->oo_if_size;
		req = &oc->oc_req.trunc.base;
	} else if (op == WEIR__WIRE_OP__OST_FALLOCATE) {
		weir__obj_falloc_req__init(&oc->oc_req.falloc);
		oc->oc_req.falloc.ost = lo->lo_osts[i];
		oc->oc_req.falloc.fid = &oc->oc_fid;
		oc->oc_req.falloc.stripe = i;
		oc->oc_req.falloc.off = in->oo_off;
		oc->oc_req.falloc.len = in->oo_len;
		oc->oc_req.falloc.mode = in->oo_flags;
		req = &oc->oc_req.falloc.base;
	} else if (op == WEIR__WIRE_OP__OST_SEEK) {
		weir__obj_seek_req__init(&oc->oc_req.seek);
		oc->oc_req.seek.ost = lo->lo_osts[i];
		oc->oc_req.seek.fid = &oc->oc_fid;
		oc->oc_req.seek.stripe = i;
		oc->oc_req.seek.off = in->oo_off;
		oc->oc_req.seek.whence = in->oo_flags;
		req = &oc->oc_req.seek.base;
	} else {
		weir__obj_req__init(&oc->oc_req.obj);
		oc->oc_req.obj.ost = lo->lo_osts[i];
		oc->oc_req.obj.fid = &oc->oc_fid;
		oc->oc_req.obj.stripe = i;
		oc->oc_req.obj.flags = in->oo_flags;
		req = &oc->oc_req.obj.base;
	}
	net_call_init(&oc->oc_call, op, req);
	oc->oc_call.nc_timeout_ms = fs->fs_rpc_timeout_ms;
	oc->oc_tries++;
	uint32_t need = WEIR_CAPA_GETATTR; /* GETATTR, FSYNC: any capability of the file */
	if (op == WEIR__WIRE_OP__OST_TRUNCATE)
		need = WEIR_CAPA_PUNCH;
	else if (op == WEIR__WIRE_OP__OST_FALLOCATE)
		need = (in->oo_flags & WEIR__FALLOC_FLAG__FA_PUNCH_HOLE) ? WEIR_CAPA_PUNCH
									 : WEIR_CAPA_WRITE;
	else if (op == WEIR__WIRE_OP__OST_SEEK)
		need = WEIR_CAPA_READ;
	oc->oc_start_rc = wc_capa_get(fs, fid, need, &oc->oc_capa);
	if (oc->oc_capa.cb_set) {
		if (op == WEIR__WIRE_OP__OST_TRUNCATE)
			oc->oc_req.trunc.capa = &oc->oc_capa.cb_capa;
		else if (op == WEIR__WIRE_OP__OST_FALLOCATE)
			oc->oc_req.falloc.capa = &oc->oc_capa.cb_capa;
		else if (op == WEIR__WIRE_OP__OST_SEEK)
			oc->oc_req.seek.capa = &oc->oc_capa.cb_capa;
		else
			oc->oc_req.obj.capa = &oc->oc_capa.cb_capa;
	}
	oc->oc_start_xport = false;
	oc->oc_tgt = NULL;
	oc->oc_sent_ns = weir_now_ns();
	if (!oc->oc_start_rc) {
		oc->oc_start_xport = true;
		oc->oc_start_rc = wc_ost_conn(fs, lo->lo_osts[i], &conn, &oc->oc_tgt);
	}
	if (!oc->oc_start_rc)
		oc->oc_start_rc = net_call_start(conn, &oc->oc_call);
}

static int wc_ocall_done(uint16_t op, struct wc_ocall *oc, int rc, struct wc_objop *out)
{
	bool attr = op == WEIR__WIRE_OP__OST_GETATTR || op == WEIR__WIRE_OP__OST_FALLOCATE;

	out->oo_rc = rc;
	if (rc == -ENOENT) {
		/* the object is created by its first write: nothing there yet */
		out->oo_exists = false;
		out->oo_found = false;
		if (attr)
			out->oo_size = out->oo_blocks = 0;
		return 0;
	}
	if (!rc && op == WEIR__WIRE_OP__OST_SEEK) {
		Weir__ObjSeekRep *sr = net_call_unpack(&oc->oc_call,
						       &weir__obj_seek_rep__descriptor);
		if (!sr)
			return -EPROTO;
		out->oo_exists = sr->exists;
		out->oo_found = sr->found;
		if (sr->found)
			out->oo_off = sr->off;
		protobuf_c_message_free_unpacked(&sr->base, NULL);
		return 0;
	}
	if (rc || !attr)
		return rc;
	Weir__ObjAttrRep *rep = net_call_unpack(&oc->oc_call, &weir__obj_attr_rep__descriptor);
	if (!rep)
		return -EPROTO;
	out->oo_exists = rep->exists;
	out->oo_size = rep->exists ? rep->size : 0;
	out->oo_blocks = rep->exists ? rep->blocks : 0;
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return 0;
}

int wc_obj_run(struct weir_fs *fs, const struct weir_fid *fid, const struct weir_layout *lo,
	       uint16_t op, struct wc_objop *ops)
{
	uint32_t count = lo->lo_stripe_count;
	uint32_t window = WEIR_MAX(fs->fs_max_inflight, 1U);
	uint32_t started = 0, done = 0;
	bool map_fresh = false;
	uint64_t keyless_ns = 0; /* wc_oss_keyless_wait() */
	unsigned keyless_waits = 0;
	struct wc_ocall *oc;
	int first = 0;

	if (count == 0)
		return 0;
	oc = calloc(count, sizeof(*oc));
	if (!oc)
		return -ENOMEM;
	while (done < count) {
		while (started < count && started - done < window && !first) {
			if (!ops[started].oo_skip)
				wc_ocall_start(fs, fid, lo, op, started, &ops[started],
					       &oc[started]);
			started++;
		}
		if (done == started)
			break;
		if (ops[done].oo_skip) {
			ops[done].oo_rc = 0;
			done++;
			continue;
		}
		struct wc_ocall *c = &oc[done];
		int rc = c->oc_start_rc ? c->oc_start_rc : net_call_wait(&c->oc_call);
		while (rc == -EAGAIN && !c->oc_start_rc) {
			/* the OSS has no capability key yet: wait for it, no try spent */
			if (!wc_oss_keyless_wait(fs, &keyless_ns, &keyless_waits)) {
				rc = -ETIMEDOUT;
				break;
			}
			net_call_fini(&c->oc_call);
			c->oc_tries--;
			wc_ocall_start(fs, fid, lo, op, done, &ops[done], c);
			rc = c->oc_start_rc ? c->oc_start_rc : net_call_wait(&c->oc_call);
		}
		bool capa_refused = rc == -EACCES && !c->oc_start_rc && c->oc_capa.cb_set;
		if ((wc_retryable(rc) || capa_refused) && c->oc_tries < 2) {
			net_call_fini(&c->oc_call);
			if (capa_refused)
				wc_capa_forget(fs, fid);
			else
				wc_map_refresh_once(fs, &map_fresh);
			wc_ocall_start(fs, fid, lo, op, done, &ops[done], c);
			rc = c->oc_start_rc ? c->oc_start_rc : net_call_wait(&c->oc_call);
		}
		/* the OSS is away: wait for it and send again (these requests
		 * are idempotent: glimpse, truncate to a size, fsync, seek) */
		struct wc_wait wait = { 0 };
		for (;;) {
			bool xport = c->oc_start_rc ? c->oc_start_xport : !c->oc_call.nc_rc_remote;
			if (!xport) {
				if (c->oc_tgt)
					wc_target_up(c->oc_tgt, c->oc_sent_ns);
				break;
			}
			int wrc = wc_recover_wait(fs, c->oc_tgt, &wait, rc, c->oc_sent_ns);
			if (wrc) {
				rc = wrc;
				break;
			}
			net_call_fini(&c->oc_call);
			wc_ocall_start(fs, fid, lo, op, done, &ops[done], c);
			rc = c->oc_start_rc ? c->oc_start_rc : net_call_wait(&c->oc_call);
		}
		rc = wc_ocall_done(op, c, rc, &ops[done]);
		if (rc) {
			WEIR_LOG_WARN("op=%u fid=" WEIR_FID_F " stripe=%u ost=%u rc=%d", op,
				      WEIR_FID_P(fid), done, lo->lo_osts[done], rc);
			if (!first)
				first = wc_io_errno(rc, op == WEIR__WIRE_OP__OST_TRUNCATE ||
							    op == WEIR__WIRE_OP__OST_FALLOCATE);
		}
		net_call_fini(&c->oc_call);
		done++;
	}
	free(oc);
	return first;
}
