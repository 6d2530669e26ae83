/*
 * oss/uring.c - the per-loop io_uring: the only file in Weir that calls
 * liburing.
 *
 * Each event loop thread owns one ring (OSS_URING_DEPTH submission entries,
 * twice that many completion entries) and one eventfd registered with
 * io_uring_register_eventfd(). The eventfd is watched by the loop's epoll
 * set (net_loop_add_fd), so completions wake the loop like socket data does;
 * uring_reap() then runs every finished I/O's callback on the loop thread.
 *
 * At most cq_entries I/Os are in the kernel at once (so the completion queue
 * never overflows); the rest wait in a FIFO (u_wait) and are sent as
 * completions free room. A short read or write goes back to the head of the
 * FIFO for the remainder; -EAGAIN/-EINTR are retried the same way.
 * Submission is batched: queued I/Os are pushed with one io_uring_submit()
 * per handler call or reap pass. A buffered read of cached pages completes
 * inside io_uring_submit(); oss_uring_poll(), called after each request's
 * handler, runs its callback (the reply) at once instead of on the loop's
 * next turn. Buffered writes (ext4 has no non-blocking buffered write) and
 * sync_file_range/fsync/fallocate run on io_uring's io-wq worker threads.
 */
#define _GNU_SOURCE
#include "oss_int.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

/** Largest single read/write SQE (the kernel caps one at ~2 GiB anyway). */
#define OSS_URING_MAX_SQE_LEN (1U << 30)

struct oss_uring {
	struct io_uring u_ring;
	int u_efd;                 /* completion eventfd, also poked to retry a submit */
	uint32_t u_inflight;       /* SQEs prepared and not yet reaped */
	uint32_t u_max_inflight;   /* completion queue entries */
	struct oss_io *u_wait;     /* FIFO of I/O waiting for room */
	struct oss_io *u_wait_tail;
	bool u_submit_failing;     /* io_uring_submit() failed; logged once per run */
	uint32_t u_writebacks;     /* early writebacks in flight (svc_op_writeback) */
};

/*
 * Early writebacks in flight per ring. They wait in io-wq like the buffered
 * writes and share the ring's FIFO with reads; more than a few would only
 * queue reads behind disk I/O (and hold an fd each).
 */
#define OSS_URING_MAX_WRITEBACKS 8

bool oss_uring_writeback_begin(struct oss_uring *u)
{
	if (u->u_writebacks >= OSS_URING_MAX_WRITEBACKS)
		return false;
	u->u_writebacks++;
	return true;
}

void oss_uring_writeback_end(struct oss_uring *u)
{
	u->u_writebacks--;
}

static void uring_wait_push_head(struct oss_uring *u, struct oss_io *io)
{
	io->io_next = u->u_wait;
	u->u_wait = io;
	if (!u->u_wait_tail)
		u->u_wait_tail = io;
}

static void uring_wait_push_tail(struct oss_uring *u, struct oss_io *io)
{
	io->io_next = NULL;
	if (u->u_wait_tail)
		u->u_wait_tail->io_next = io;
	else
		u->u_wait = io;
	u->u_wait_tail = io;
}

static struct oss_io *uring_wait_pop(struct oss_uring *u)
{
	struct oss_io *io = u->u_wait;
	if (io) {
		u->u_wait = io->io_next;
		if (!u->u_wait)
			u->u_wait_tail = NULL;
		io->io_next = NULL;
	}
	return io;
}

static void uring_prep(struct io_uring_sqe *sqe, struct oss_io *io)
{
	uint64_t left = io->io_len - io->io_done;
	unsigned n = (unsigned)WEIR_MIN(left, (uint64_t)OSS_URING_MAX_SQE_LEN);

	switch (io->io_kind) {
	case OSS_IO_READ:
		io_uring_prep_read(sqe, io->io_fd, io->io_buf + io->io_done, n,
				   io->io_off + io->io_done);
		break;
	case OSS_IO_WRITE:
		io_uring_prep_write(sqe, io->io_fd, io->io_buf + io->io_done, n,
				    io->io_off + io->io_done);
		break;
	case OSS_IO_FSYNC:
		io_uring_prep_fsync(sqe, io->io_fd, io->io_datasync ? IORING_FSYNC_DATASYNC : 0);
		break;
	case OSS_IO_WRITEBACK:
		/* IORING_OP_SYNC_FILE_RANGE (Linux 5.2), on io-wq: start writeback only */
		io_uring_prep_sync_file_range(sqe, io->io_fd,
					      (unsigned)WEIR_MIN(io->io_len, UINT32_MAX),
					      (uint64_t)io->io_off, SYNC_FILE_RANGE_WRITE);
		break;
	case OSS_IO_FALLOCATE:
		/* IORING_OP_FALLOCATE (Linux 5.6): fallocate(2) run by the kernel's io-wq */
		io_uring_prep_fallocate(sqe, io->io_fd, io->io_mode, (off_t)io->io_off,
					(off_t)io->io_len);
		break;
	}
	io_uring_sqe_set_data(sqe, io);
}

/* Push prepared SQEs to the kernel. A failure leaves them in the SQ ring;
 * poking our own eventfd makes the loop call uring_reap() (and so retry)
 * on its next turn. */
static void uring_flush(struct oss_uring *u)
{
	if (!io_uring_sq_ready(&u->u_ring))
		return;
	int rc = io_uring_submit(&u->u_ring);
	if (rc >= 0) {
		if (u->u_submit_failing)
			WEIR_LOG_NOTICE("op=uring_submit: submitting again");
		u->u_submit_failing = false;
		return;
	}
	if (!u->u_submit_failing) {
		char rcs[96];
		WEIR_LOG_ERROR("op=uring_submit rc=%s: io_uring_submit failed; retrying",
			       weir_rc_str(rc, rcs, sizeof(rcs)));
	}
	u->u_submit_failing = true;
	if (eventfd_write(u->u_efd, 1) < 0)
		WEIR_LOG_ERROR("op=uring_submit: cannot poke eventfd: %s", strerror(errno));
}

/* Move waiting I/O into the ring while there is room, then submit. */
static void uring_kick(struct oss_uring *u)
{
	while (u->u_wait && u->u_inflight < u->u_max_inflight) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&u->u_ring);
		if (!sqe) {
			uring_flush(u);
			sqe = io_uring_get_sqe(&u->u_ring);
			if (!sqe)
				break;
		}
		uring_prep(sqe, uring_wait_pop(u));
		u->u_inflight++;
	}
	uring_flush(u);
}

/* One completion: finish \a io, or queue it again for the rest. */
static void uring_complete(struct oss_uring *u, struct oss_io *io, int res)
{
	if (res == -EAGAIN || res == -EINTR) {
		uring_wait_push_head(u, io);
		return;
	}
	if (res < 0) {
		io->io_cb(io, res);
		return;
	}
	if (io->io_kind == OSS_IO_FSYNC || io->io_kind == OSS_IO_FALLOCATE ||
	    io->io_kind == OSS_IO_WRITEBACK) {
		io->io_cb(io, 0);
		return;
	}
	io->io_done += (uint64_t)res;
	if (io->io_done >= io->io_len) {
		io->io_cb(io, 0);
		return;
	}
	if (res == 0) {
		/* end of file for a read; a write that makes no progress is an error */
		io->io_cb(io, io->io_kind == OSS_IO_READ ? 0 : -EIO);
		return;
	}
	WEIR_LOG_DEBUG("op=uring fd=%d kind=%d done=%llu len=%llu: short I/O; resubmitting",
		       io->io_fd, (int)io->io_kind, (unsigned long long)io->io_done,
		       (unsigned long long)io->io_len);
	uring_wait_push_head(u, io); /* short read or write: the rest */
}

/* Run the callbacks of every completion posted so far, then refill the ring. */
static void uring_reap(struct oss_uring *u)
{
	struct io_uring_cqe *cqe;

	while (io_uring_peek_cqe(&u->u_ring, &cqe) == 0) {
		struct oss_io *io = io_uring_cqe_get_data(cqe);
		int res = cqe->res;
		io_uring_cqe_seen(&u->u_ring, cqe);
		u->u_inflight--;
		uring_complete(u, io, res);
	}
	uring_kick(u);
}

/* Loop callback: the eventfd is readable. */
static void uring_event(void *arg)
{
	struct oss_uring *u = arg;
	eventfd_t v;

	(void)eventfd_read(u->u_efd, &v); /* non-blocking; EAGAIN is harmless */
	uring_reap(u);
}

int oss_uring_new(struct net_loop *lp, struct oss_uring **out)
{
	int rc;
	struct oss_uring *u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;

	rc = io_uring_queue_init(OSS_URING_DEPTH, &u->u_ring, 0);
	if (rc) {
		char rcs[96];
		WEIR_LOG_ERROR("op=uring_init rc=%s: cannot create an io_uring (is io_uring "
			       "disabled? see /proc/sys/kernel/io_uring_disabled)",
			       weir_rc_str(rc, rcs, sizeof(rcs)));
		goto out_free;
	}
	u->u_max_inflight = u->u_ring.cq.ring_entries;
	u->u_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (u->u_efd < 0) {
		rc = -errno;
		goto out_exit;
	}
	rc = io_uring_register_eventfd(&u->u_ring, u->u_efd);
	if (rc)
		goto out_close;
	rc = net_loop_add_fd(lp, u->u_efd, uring_event, u);
	if (rc)
		goto out_close;
	*out = u;
	return 0;

out_close:
	close(u->u_efd);
out_exit:
	io_uring_queue_exit(&u->u_ring);
out_free:
	free(u);
	return rc;
}

void oss_uring_free(struct oss_uring *u)
{
	if (!u)
		return;
	/* drain: the loop no longer runs, so wait here for what is in flight */
	for (;;) {
		uring_kick(u);
		if (!u->u_inflight)
			break;
		int rc = io_uring_submit_and_wait(&u->u_ring, 1);
		if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
			char rcs[96];
			WEIR_LOG_ERROR("op=uring_drain rc=%s: %u I/Os abandoned",
				       weir_rc_str(rc, rcs, sizeof(rcs)), u->u_inflight);
			break;
		}
		uring_reap(u);
	}
	/* whatever could not be sent at all fails */
	struct oss_io *io;
	while ((io = uring_wait_pop(u)))
		io->io_cb(io, -ESHUTDOWN);
	io_uring_unregister_eventfd(&u->u_ring);
	io_uring_queue_exit(&u->u_ring);
	close(u->u_efd); /* also leaves the (stopped) loop's epoll set */
	free(u);
}

void oss_uring_submit(struct oss_uring *u, struct oss_io *io)
{
	io->io_done = 0;
	uring_wait_push_tail(u, io);
	uring_kick(u);
}

void oss_uring_poll(struct oss_uring *u)
{
	if (io_uring_cq_ready(&u->u_ring))
		uring_reap(u);
}
