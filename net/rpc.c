/*
 * net/rpc.c - client side of the RPC layer.
 *
 * DESIGN. Any number of caller threads start calls on a struct net_conn and
 * wait for them. There is no receiver thread: the replies are read by the
 * waiters themselves, one at a time ("leader/followers", as in ACE's
 * Leader/Followers pattern and the pollers of gRPC's completion queues).
 * A waiter whose call is not done takes the receive side if nobody holds it,
 * reads reply frames -- each straight into its own call's buffers, whoever
 * waits for it -- until its own call is done, then hands the receive side to
 * one sleeping waiter whose call is not done yet. A lone synchronous caller
 * so reads its own reply on its own thread: no thread hand-off and no
 * context switch beyond the one the reply's arrival costs. (The old design,
 * one receiver thread per connection completing calls through condition
 * variables, paid two more context switches per call.)
 *
 * Locks (docs/lock-ordering.md):
 *   nc_conn_lock (reconnect) -> nc_send_lock (one frame at a time, owns nc_x
 *   for sending) -> nc_lock (pending table, call states, waiters, nc_alive,
 *   nc_reading). The receive side (nc_reading) is a role, not a lock: its
 *   holder reads nc_x without any lock held.
 * A call is in the pending table from just before its frame is sent until
 * it completes. The reader marks a call RECEIVING while it reads the
 * reply's body and bulk straight into the caller's buffers; a waiter whose
 * deadline passes gives up only while the call is still SENT (a late reply
 * is then read and discarded). A reply frame once begun must arrive whole
 * by the reader's deadline (and the deadline of the call it belongs to),
 * and never less than NET_FRAME_GRACE_NS after its first byte; a peer that
 * stalls mid-frame past that breaks the connection, which fails every
 * pending call with -ECONNRESET. (A waiter whose reply is being read by
 * another thread past its deadline also shuts the transport down.) The next call on a dead connection reconnects; a
 * connection found closed by the peer while no call was pending is
 * reconnected before the next call is sent on it (so a server restart
 * between calls costs no error).
 *
 * A call with nc_xid sends the replay prefix (net/frame.h) at the head of
 * its body, flagged WEIR_FRAME_F_XID; this layer never resends by itself:
 * the caller does (client/recover.c), keeping the prefix. nc_rc_remote
 * tells the caller whether nc_rc is the peer's answer or a transport error.
 * A reply flagged WEIR_FRAME_F_XID starts with the reply prefix (transno,
 * last_committed): it is taken off the body into nc_transno and
 * nc_last_committed (nc_rep_txn); a body too short for it is -EPROTO.
 *
 * Background calls (nc_background: a client's long poll for lease
 * callbacks, parked at the server for seconds): were such a waiter the
 * reader, every other call's reply would reach its waiter through it, two
 * context switches more per call. So a background waiter takes the receive
 * side only when no other call is pending and none was for NET_BG_GRACE_NS;
 * otherwise it sleeps (until the last foreground call leaves, then that
 * long), its reply read meanwhile by whoever reads. A foreground call sent while a background waiter reads
 * kicks it off the receive side (nc_kick_fd, an eventfd in its poll set).
 *
 * One-way calls (net_call_send_oneway) carry WEIR_FRAME_F_NOREPLY: the
 * server handles them in order with the connection's other requests and
 * sends nothing back, so they never enter the pending table. (Holding them
 * back with MSG_MORE to share a segment with the next call was tried: no
 * measurable gain, and a close then reached the MDS up to 200 ms late when
 * nothing followed it.)
 */
#define _GNU_SOURCE
#include "net.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "auth_int.h"
#include "xport.h"

#define NET_PENDING_BUCKETS 64
/* Least time a reply frame once begun has to arrive whole (ns). */
#define NET_FRAME_GRACE_NS 1000000000ULL
/* How long after the last foreground call a background waiter leaves the receive side (ns). */
#define NET_BG_GRACE_NS 2000000ULL
/* How often a background waiter looks again while foreground calls are pending (ns;
 * the last of them to complete wakes it, nc_bg_busy: this is a safety net). */
#define NET_BG_BUSY_LOOK_NS 100000000ULL

struct net_conn {
	pthread_mutex_t nc_conn_lock;
	pthread_mutex_t nc_send_lock;
	pthread_mutex_t nc_lock;
	const struct net_xport_ops *nc_ops;
	struct net_xport *nc_x;
	char nc_peer[256];
	char nc_host[200];
	uint16_t nc_port;
	uint32_t nc_connect_timeout_ms;
	bool nc_alive;
	bool nc_closing;
	bool nc_reading;             /* a waiter holds the receive side */
	pthread_cond_t nc_idle_cond; /* signalled when nc_reading clears */
	uint32_t nc_npending;        /* calls in nc_pending */
	uint32_t nc_nfg;             /* of which not nc_background */
	uint64_t nc_fg_last_ns;      /* when a foreground call was last sent or completed */
	bool nc_reader_bg;           /* the receive side's holder waits for a background call */
	bool nc_bg_busy;             /* a background waiter sleeps until no foreground call
				      * is pending: the last to leave wakes it */
	int nc_kick_fd;              /* eventfd that ends a background reader's wait; -1: none */
	uint64_t nc_handoffs;        /* replies read for another waiter's call (net_conn_handoffs) */
	struct net_call *nc_waiters; /* calls whose waiter sleeps (nc_wnext) */
	uint64_t nc_next_reqid;
	struct net_auth *nc_auth;    /* keys for the handshake (NULL: the process default) */
	struct net_call *nc_pending[NET_PENDING_BUCKETS];
};

static struct net_call **pending_slot(struct net_conn *c, uint64_t reqid)
{
	return &c->nc_pending[reqid % NET_PENDING_BUCKETS];
}

/*
 * The last foreground call left while a background waiter slept for that:
 * wake it, to wait for NET_BG_GRACE_NS more and then read. nc_lock held.
 */
static void conn_wake_bg_locked(struct net_conn *c)
{
	c->nc_bg_busy = false;
	for (struct net_call *w = c->nc_waiters; w; w = w->nc_wnext)
		if (w->nc_background && w->nc_state != NET_CALL_DONE)
			pthread_cond_signal(&w->nc_cond);
}

static void pending_remove(struct net_conn *c, struct net_call *call)
{
	struct net_call **pp = pending_slot(c, call->nc_reqid);
	while (*pp) {
		if (*pp == call) {
			*pp = call->nc_next;
			call->nc_next = NULL;
			c->nc_npending--;
			if (!call->nc_background) {
				c->nc_nfg--;
				c->nc_fg_last_ns = weir_now_ns();
				if (!c->nc_nfg && c->nc_bg_busy)
					conn_wake_bg_locked(c);
			}
			return;
		}
		pp = &(*pp)->nc_next;
	}
}

static struct net_call *pending_find(struct net_conn *c, uint64_t reqid)
{
	for (struct net_call *p = *pending_slot(c, reqid); p; p = p->nc_next)
		if (p->nc_reqid == reqid)
			return p;
	return NULL;
}

static void call_complete_locked(struct net_conn *c, struct net_call *call, int rc)
{
	pending_remove(c, call);
	call->nc_rc = rc;
	call->nc_state = NET_CALL_DONE;
	pthread_cond_signal(&call->nc_cond);
}

/*
 * Take the reply prefix (net/frame.h, struct weir_txn_hdr) off the head of a
 * received body into the call's nc_transno and nc_last_committed. A body
 * too short for it fails the call with -EPROTO (the frame itself was whole:
 * the connection stays).
 */
static void rx_strip_txn(struct net_conn *c, const struct weir_frame_hdr *h,
			 struct net_call *call, int *call_rc)
{
	if (call->nc_rep_body_len < WEIR_TXN_HDR_SIZE) {
		WEIR_LOG_WARN("peer=%s reqid=%llu op=%u: reply prefix truncated (%u bytes of"
			      " body); -EPROTO", c->nc_peer, (unsigned long long)h->fh_reqid,
			      h->fh_opcode, call->nc_rep_body_len);
		*call_rc = -EPROTO;
		return;
	}
	struct weir_txn_hdr t;
	weir_txn_decode(call->nc_rep_body, &t);
	call->nc_rep_txn = true;
	call->nc_transno = t.th_transno;
	call->nc_last_committed = t.th_last_committed;
	call->nc_rep_body_len -= WEIR_TXN_HDR_SIZE;
	memmove(call->nc_rep_body, call->nc_rep_body + WEIR_TXN_HDR_SIZE, call->nc_rep_body_len);
}

/* Read the body and bulk of one reply into \a call. */
static int rx_fill(struct net_conn *c, struct net_xport *x, const struct weir_frame_hdr *h,
		   struct net_call *call, int *call_rc, uint64_t deadline_ns)
{
	int rc;
	*call_rc = weir_status_to_errno(h->fh_status);
	if (h->fh_body_len) {
		call->nc_rep_body = malloc(h->fh_body_len);
		if (!call->nc_rep_body) {
			*call_rc = -ENOMEM;
			return c->nc_ops->xo_discard(x, h->fh_body_len + h->fh_bulk_len,
						     deadline_ns);
		}
		struct iovec iov = { call->nc_rep_body, h->fh_body_len };
		rc = c->nc_ops->xo_recvv(x, &iov, 1, deadline_ns);
		if (rc)
			return rc;
		call->nc_rep_body_len = h->fh_body_len;
	}
	if (h->fh_flags & WEIR_FRAME_F_XID)
		rx_strip_txn(c, h, call, call_rc);
	if (!h->fh_bulk_len)
		return 0;
	struct iovec iov[NET_MAX_BULK_IOV];
	int nr = 0;
	uint64_t want = h->fh_bulk_len;
	for (int i = 0; i < call->nc_rep_nr_bulk && i < NET_MAX_BULK_IOV && want; i++) {
		size_t n = call->nc_rep_bulk[i].iov_len;
		if (n > want)
			n = (size_t)want;
		iov[nr].iov_base = call->nc_rep_bulk[i].iov_base;
		iov[nr].iov_len = n;
		nr++;
		want -= n;
	}
	rc = c->nc_ops->xo_recvv(x, iov, nr, deadline_ns);
	if (rc)
		return rc;
	call->nc_rep_bulk_len = h->fh_bulk_len - want;
	if (want) {
		WEIR_LOG_WARN("peer=%s reqid=%llu op=%u: reply bulk of %llu bytes does not fit the"
			      " %llu bytes of buffer; %llu bytes discarded",
			      c->nc_peer, (unsigned long long)h->fh_reqid, h->fh_opcode,
			      (unsigned long long)h->fh_bulk_len,
			      (unsigned long long)call->nc_rep_bulk_len, (unsigned long long)want);
		*call_rc = -EOVERFLOW;
		return c->nc_ops->xo_discard(x, want, deadline_ns);
	}
	return 0;
}

/* Fail every pending call; the connection is dead. Called with nc_lock held. */
static void conn_fail_locked(struct net_conn *c, int why)
{
	if (c->nc_alive && !c->nc_closing && why != -EPIPE)
		WEIR_LOG_WARN("peer=%s rc=%d: connection lost", c->nc_peer, why);
	c->nc_alive = false;
	int fail = c->nc_closing ? -ESHUTDOWN : -ECONNRESET;
	for (int b = 0; b < NET_PENDING_BUCKETS; b++)
		while (c->nc_pending[b]) {
			struct net_call *call = c->nc_pending[b];
			call_complete_locked(c, call, fail);
			if (c->nc_closing)
				call->nc_conn = NULL; /* its wait must not touch a freed connection */
		}
}

/* Log a reply that stopped arriving mid-frame; \return \a rc. */
static int rx_stalled(struct net_conn *c, int rc)
{
	if (rc == -ETIMEDOUT)
		WEIR_LOG_WARN("peer=%s: reply frame stalled mid-way; closing connection",
			      c->nc_peer);
	return rc;
}

/*
 * Read one reply frame, if one arrives before \a deadline_ns, and complete
 * its call (\a may_poll, \a kick_fd: see xo_wait_readable). Called by the holder of the
 * receive side, without nc_lock.
 * \return 0 (a frame was read, or none came in time), or a negative errno
 *         when the connection is unusable.
 */
static int rx_one(struct net_conn *c, struct net_xport *x, uint64_t deadline_ns, bool may_poll,
		  int kick_fd, const struct net_call *own)
{
	uint8_t raw[WEIR_FRAME_HDR_SIZE];
	int rc = c->nc_ops->xo_wait_readable(x, deadline_ns, may_poll, kick_fd);
	if (rc == -ETIMEDOUT || rc == -EAGAIN) /* (-EAGAIN: kicked, see the file comment) */
		return 0;
	if (rc)
		return rc;
	/* A frame once begun is read whole by the reader's deadline, and never
	 * less than NET_FRAME_GRACE_NS from now (a frame arriving in pieces is
	 * not a stall); a stalled peer then breaks the connection. */
	uint64_t frame_deadline = WEIR_MAX(deadline_ns, weir_now_ns() + NET_FRAME_GRACE_NS);
	struct iovec iov = { raw, sizeof(raw) };
	rc = c->nc_ops->xo_recvv(x, &iov, 1, frame_deadline);
	if (rc)
		return rx_stalled(c, rc);
	struct weir_frame_hdr h;
	const char *why;
	rc = weir_frame_decode(raw, &h, &why);
	if (rc || (h.fh_flags & ~WEIR_FRAME_F_XID) != WEIR_FRAME_F_REPLY) {
		WEIR_LOG_ERROR("peer=%s: malformed reply frame (%s); closing connection",
			       c->nc_peer, rc ? why : "not a reply, or a reply flagged NOREPLY");
		return rc ? rc : -EPROTO;
	}
	pthread_mutex_lock(&c->nc_lock);
	struct net_call *call = pending_find(c, h.fh_reqid);
	if (call) {
		if (call != own)
			c->nc_handoffs++;
		call->nc_state = NET_CALL_RECEIVING;
		frame_deadline = WEIR_MAX(frame_deadline, call->nc_deadline_ns);
	}
	pthread_mutex_unlock(&c->nc_lock);
	if (!call) {
		WEIR_LOG_INFO("peer=%s reqid=%llu: late reply discarded", c->nc_peer,
			      (unsigned long long)h.fh_reqid);
		return rx_stalled(c, c->nc_ops->xo_discard(x, h.fh_body_len + h.fh_bulk_len,
							   frame_deadline));
	}
	int call_rc = 0;
	rc = rx_stalled(c, rx_fill(c, x, &h, call, &call_rc, frame_deadline));
	pthread_mutex_lock(&c->nc_lock);
	call->nc_rc_remote = !rc;
	call_complete_locked(c, call, rc ? -ECONNRESET : call_rc);
	pthread_mutex_unlock(&c->nc_lock);
	return rc;
}

/* Wait until nobody holds the receive side. Called with nc_lock held. */
static void conn_wait_reader_locked(struct net_conn *c)
{
	while (c->nc_reading)
		pthread_cond_wait(&c->nc_idle_cond, &c->nc_lock);
}

/* Called with nc_conn_lock held. */
static int conn_connect(struct net_conn *c)
{
	struct net_xport *x;
	pthread_mutex_lock(&c->nc_lock);
	conn_wait_reader_locked(c);
	pthread_mutex_unlock(&c->nc_lock);
	pthread_mutex_lock(&c->nc_send_lock);
	if (c->nc_x) {
		c->nc_ops->xo_close(c->nc_x);
		c->nc_x = NULL;
	}
	int rc = c->nc_ops->xo_connect(c->nc_host, c->nc_port, c->nc_connect_timeout_ms, &x);
	if (!rc) {
		/* every connection, and every reconnection, proves the key first */
		rc = net_auth_client(c->nc_auth, c->nc_ops, x, c->nc_peer, c->nc_connect_timeout_ms);
		if (rc)
			c->nc_ops->xo_close(x);
	}
	if (rc) {
		pthread_mutex_unlock(&c->nc_send_lock);
		return rc;
	}
	c->nc_x = x;
	pthread_mutex_lock(&c->nc_lock);
	c->nc_alive = true;
	pthread_mutex_unlock(&c->nc_lock);
	pthread_mutex_unlock(&c->nc_send_lock);
	return 0;
}

int net_conn_open(const char *hostport, uint32_t connect_timeout_ms, struct net_conn **out)
{
	return net_conn_open_auth(hostport, connect_timeout_ms, NULL, out);
}

int net_conn_open_auth(const char *hostport, uint32_t connect_timeout_ms, struct net_auth *auth,
		       struct net_conn **out)
{
	struct net_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	int rc = weir_parse_hostport(hostport, c->nc_host, sizeof(c->nc_host), &c->nc_port);
	if (rc) {
		free(c);
		return rc;
	}
	snprintf(c->nc_peer, sizeof(c->nc_peer), "%s", hostport);
	pthread_mutex_init(&c->nc_conn_lock, NULL);
	pthread_mutex_init(&c->nc_send_lock, NULL);
	pthread_mutex_init(&c->nc_lock, NULL);
	pthread_cond_init(&c->nc_idle_cond, NULL);
	c->nc_ops = &net_tcp_ops;
	c->nc_connect_timeout_ms = connect_timeout_ms ? connect_timeout_ms : 5000;
	c->nc_next_reqid = 1;
	c->nc_auth = auth;
	/* without one, background calls read as the others do */
	c->nc_kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	pthread_mutex_lock(&c->nc_conn_lock);
	rc = conn_connect(c);
	pthread_mutex_unlock(&c->nc_conn_lock);
	if (rc) {
		if (c->nc_kick_fd >= 0)
			close(c->nc_kick_fd);
		pthread_cond_destroy(&c->nc_idle_cond);
		pthread_mutex_destroy(&c->nc_lock);
		pthread_mutex_destroy(&c->nc_send_lock);
		pthread_mutex_destroy(&c->nc_conn_lock);
		free(c);
		return rc;
	}
	*out = c;
	return 0;
}

void net_conn_close(struct net_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->nc_conn_lock);
	pthread_mutex_lock(&c->nc_lock);
	c->nc_closing = true;
	pthread_mutex_unlock(&c->nc_lock);
	pthread_mutex_lock(&c->nc_send_lock);
	if (c->nc_x)
		c->nc_ops->xo_shutdown(c->nc_x);
	pthread_mutex_unlock(&c->nc_send_lock);
	pthread_mutex_lock(&c->nc_lock);
	conn_wait_reader_locked(c);
	conn_fail_locked(c, -ESHUTDOWN);
	pthread_mutex_unlock(&c->nc_lock);
	if (c->nc_x)
		c->nc_ops->xo_close(c->nc_x);
	pthread_mutex_unlock(&c->nc_conn_lock);
	if (c->nc_kick_fd >= 0)
		close(c->nc_kick_fd);
	pthread_cond_destroy(&c->nc_idle_cond);
	pthread_mutex_destroy(&c->nc_lock);
	pthread_mutex_destroy(&c->nc_send_lock);
	pthread_mutex_destroy(&c->nc_conn_lock);
	free(c);
}

const char *net_conn_peer(const struct net_conn *c)
{
	return c->nc_peer;
}

uint64_t net_conn_handoffs(struct net_conn *c)
{
	pthread_mutex_lock(&c->nc_lock);
	uint64_t n = c->nc_handoffs;
	pthread_mutex_unlock(&c->nc_lock);
	return n;
}

void net_call_init(struct net_call *call, uint16_t opcode, const ProtobufCMessage *req)
{
	memset(call, 0, sizeof(*call));
	call->nc_opcode = opcode;
	call->nc_req = req;
	call->nc_timeout_ms = NET_DEFAULT_TIMEOUT_MS;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&call->nc_cond, &ca);
	pthread_condattr_destroy(&ca);
}

static int call_fail(struct net_call *call, int rc)
{
	call->nc_rc = rc;
	call->nc_state = NET_CALL_DONE;
	return rc;
}

static int call_send(struct net_conn *c, struct net_call *call, bool oneway);

static int call_start(struct net_conn *c, struct net_call *call, bool oneway)
{
	pthread_mutex_lock(&c->nc_lock);
	bool closing = c->nc_closing;
	pthread_mutex_unlock(&c->nc_lock);
	if (closing)
		return call_fail(call, -ESHUTDOWN);
	return call_send(c, call, oneway);
}

int net_call_start(struct net_conn *c, struct net_call *call)
{
	return call_start(c, call, false);
}

int net_call_send_oneway(struct net_conn *c, struct net_call *call)
{
	return call_start(c, call, true);
}

/*
 * The body of net_call_start (\a oneway false) and net_call_send_oneway
 * (true: no pending-table entry, the frame flagged WEIR_FRAME_F_NOREPLY).
 */
static int call_send(struct net_conn *c, struct net_call *call, bool oneway)
{
	uint8_t small[1024];
	uint8_t xid[WEIR_XID_HDR_SIZE];
	uint8_t *body = NULL;
	size_t body_len = 0;
	uint64_t bulk_len = 0;
	int rc;

	call->nc_rep_txn = false; /* a call run again does not keep an old reply's prefix */
	call->nc_transno = 0;
	call->nc_last_committed = 0;
	if (call->nc_req_nr_bulk > NET_MAX_BULK_IOV || call->nc_rep_nr_bulk > NET_MAX_BULK_IOV)
		return call_fail(call, -EMSGSIZE);
	for (int i = 0; i < call->nc_req_nr_bulk; i++)
		bulk_len += call->nc_req_bulk[i].iov_len;
	if (bulk_len > WEIR_FRAME_MAX_BULK)
		return call_fail(call, -EMSGSIZE);
	if (call->nc_req) {
		body_len = protobuf_c_message_get_packed_size(call->nc_req);
		if (body_len + (call->nc_xid ? WEIR_XID_HDR_SIZE : 0) > WEIR_FRAME_MAX_BODY)
			return call_fail(call, -EMSGSIZE);
		body = body_len <= sizeof(small) ? small : malloc(body_len);
		if (!body)
			return call_fail(call, -ENOMEM);
		protobuf_c_message_pack(call->nc_req, body);
	}

	/* Reconnect if the connection was lost. With no call pending nobody
	 * reads the connection, so look whether the peer closed it meanwhile. */
	pthread_mutex_lock(&c->nc_lock);
	/* (a parked background call does not read: it does not count) */
	if (c->nc_alive && !c->nc_nfg && !c->nc_reading && c->nc_ops->xo_peer_gone(c->nc_x)) {
		WEIR_LOG_INFO("peer=%s: connection closed by the peer while idle", c->nc_peer);
		conn_fail_locked(c, -EPIPE);
	}
	bool alive = c->nc_alive;
	pthread_mutex_unlock(&c->nc_lock);
	if (!alive) {
		pthread_mutex_lock(&c->nc_conn_lock);
		pthread_mutex_lock(&c->nc_lock);
		alive = c->nc_alive;
		bool closing = c->nc_closing;
		pthread_mutex_unlock(&c->nc_lock);
		rc = 0;
		if (closing)
			rc = -ESHUTDOWN;
		else if (!alive)
			rc = conn_connect(c);
		pthread_mutex_unlock(&c->nc_conn_lock);
		if (rc) {
			if (body != small)
				free(body);
			return call_fail(call, rc);
		}
		if (!alive)
			WEIR_LOG_NOTICE("peer=%s: reconnected", c->nc_peer);
	}

	struct weir_frame_hdr h = { 0 };
	uint8_t raw[WEIR_FRAME_HDR_SIZE];
	struct iovec iov[NET_IOV_MAX_TCP];
	int nr = 0;

	pthread_mutex_lock(&c->nc_send_lock);
	pthread_mutex_lock(&c->nc_lock);
	if (!c->nc_alive) {
		pthread_mutex_unlock(&c->nc_lock);
		pthread_mutex_unlock(&c->nc_send_lock);
		if (body != small)
			free(body);
		return call_fail(call, -ECONNRESET);
	}
	call->nc_reqid = c->nc_next_reqid++;
	if (oneway) {
		call->nc_state = NET_CALL_DONE;
		h.fh_flags = WEIR_FRAME_F_NOREPLY;
	} else {
		call->nc_conn = c;
		call->nc_state = NET_CALL_SENT;
		call->nc_deadline_ns =
			weir_now_ns() + (uint64_t)call->nc_timeout_ms * 1000000ULL;
		struct net_call **slot = pending_slot(c, call->nc_reqid);
		call->nc_next = *slot;
		*slot = call;
		c->nc_npending++;
		if (!call->nc_background) {
			c->nc_nfg++;
			c->nc_fg_last_ns = weir_now_ns();
			if (c->nc_reading && c->nc_reader_bg) {
				/* its waiter will read its own reply */
				uint64_t one = 1;
				if (write(c->nc_kick_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
					WEIR_LOG_DEBUG("peer=%s: kick: %s", c->nc_peer,
						       strerror(errno));
			}
		}
	}
	pthread_mutex_unlock(&c->nc_lock);

	h.fh_opcode = call->nc_opcode;
	h.fh_reqid = call->nc_reqid;
	h.fh_body_len = (uint32_t)body_len;
	h.fh_bulk_len = bulk_len;
	if (call->nc_xid) {
		/* the replay prefix rides at the head of the body */
		h.fh_flags |= WEIR_FRAME_F_XID;
		h.fh_body_len += WEIR_XID_HDR_SIZE;
		weir_xid_encode(call->nc_xid, xid);
	}
	weir_frame_encode(&h, raw);
	iov[nr++] = (struct iovec){ raw, sizeof(raw) };
	if (call->nc_xid)
		iov[nr++] = (struct iovec){ xid, sizeof(xid) };
	if (body_len)
		iov[nr++] = (struct iovec){ body, body_len };
	for (int i = 0; i < call->nc_req_nr_bulk; i++)
		if (call->nc_req_bulk[i].iov_len)
			iov[nr++] = call->nc_req_bulk[i];
	rc = c->nc_ops->xo_sendv(c->nc_x, iov, nr);
	if (rc) {
		/* A partial frame poisons the stream: drop the connection; the
		 * receiver fails every pending call, this one included. */
		WEIR_LOG_WARN("peer=%s op=%u rc=%d: send failed; closing connection", c->nc_peer,
			      call->nc_opcode, rc);
		c->nc_ops->xo_shutdown(c->nc_x);
	}
	pthread_mutex_unlock(&c->nc_send_lock);
	if (body != small)
		free(body);
	if (oneway && rc)
		return call_fail(call, -ECONNRESET);
	return 0;
}

/* Whether a background waiter may take the receive side now (see the file comment). */
static bool conn_bg_may_read(const struct net_conn *c, uint64_t now)
{
	return c->nc_nfg == 0 && now >= c->nc_fg_last_ns + NET_BG_GRACE_NS;
}

/* A waiter for a background call (that can be kicked off the receive side). */
static bool call_is_bg(const struct net_conn *c, const struct net_call *call)
{
	return call->nc_background && c->nc_kick_fd >= 0;
}

/*
 * Wake one sleeping waiter whose call is not done, to take the free receive
 * side: a foreground one (a background waiter looks again by itself).
 */
static void conn_handoff_locked(struct net_conn *c)
{
	if (c->nc_reading)
		return;
	for (struct net_call *w = c->nc_waiters; w; w = w->nc_wnext)
		if (w->nc_state != NET_CALL_DONE && !call_is_bg(c, w)) {
			pthread_cond_signal(&w->nc_cond);
			return;
		}
}

static void waiter_remove(struct net_conn *c, struct net_call *call)
{
	for (struct net_call **pp = &c->nc_waiters; *pp; pp = &(*pp)->nc_wnext)
		if (*pp == call) {
			*pp = call->nc_wnext;
			call->nc_wnext = NULL;
			return;
		}
}

int net_call_wait(struct net_call *call)
{
	struct net_conn *c = call->nc_conn;
	if (!c) /* never sent: completed by net_call_start */
		return call->nc_rc;
	bool shut = false;
	pthread_mutex_lock(&c->nc_lock);
	bool bg = call_is_bg(c, call);
	while (call->nc_state != NET_CALL_DONE) {
		uint64_t now = weir_now_ns();
		if (now >= call->nc_deadline_ns) {
			if (call->nc_state == NET_CALL_SENT) {
				WEIR_LOG_WARN("peer=%s op=%u reqid=%llu: timed out after %u ms",
					      c->nc_peer, call->nc_opcode,
					      (unsigned long long)call->nc_reqid,
					      call->nc_timeout_ms);
				call_complete_locked(c, call, -ETIMEDOUT);
				break;
			}
			if (!shut && call->nc_state == NET_CALL_RECEIVING) {
				/* stuck mid-reply: break the connection */
				shut = true;
				c->nc_ops->xo_shutdown(c->nc_x);
			}
			now = weir_now_ns();
			call->nc_deadline_ns = now + 1000000000ULL;
		}
		if (!c->nc_reading && c->nc_alive && (!bg || conn_bg_may_read(c, now))) {
			/* take the receive side until this call is done (a
			 * background call: until a foreground one is sent) */
			struct net_xport *x = c->nc_x;
			c->nc_reading = true;
			c->nc_reader_bg = bg;
			if (bg) {
				uint64_t v; /* a kick meant for an earlier reader */
				while (read(c->nc_kick_fd, &v, sizeof(v)) > 0)
					;
			}
			/* poll before sleeping only for a lone call: with
			 * several in flight (W3's readers, striped I/O) the
			 * CPU is better left to the threads producing them
			 * (a parked background call does not count) */
			bool lone = !bg && c->nc_nfg == 1;
			pthread_mutex_unlock(&c->nc_lock);
			int rc = rx_one(c, x, call->nc_deadline_ns, lone, bg ? c->nc_kick_fd : -1,
					call);
			pthread_mutex_lock(&c->nc_lock);
			c->nc_reading = false;
			c->nc_reader_bg = false;
			pthread_cond_broadcast(&c->nc_idle_cond);
			if (rc)
				conn_fail_locked(c, rc);
			continue;
		}
		uint64_t until = call->nc_deadline_ns;
		if (bg) {
			/* a foreground waiter may be asleep, waiting for the side just left */
			conn_handoff_locked(c);
			/* with foreground calls pending, their waiters read (this
			 * reply too): until the last of them leaves (nc_bg_busy) */
			if (c->nc_nfg)
				c->nc_bg_busy = true;
			uint64_t look = c->nc_nfg ? now + NET_BG_BUSY_LOOK_NS
						  : WEIR_MAX(c->nc_fg_last_ns, now) + NET_BG_GRACE_NS;
			until = WEIR_MIN(until, look);
		}
		struct timespec ts = { .tv_sec = (time_t)(until / 1000000000ULL),
				       .tv_nsec = (long)(until % 1000000000ULL) };
		call->nc_wnext = c->nc_waiters;
		c->nc_waiters = call;
		pthread_cond_timedwait(&call->nc_cond, &c->nc_lock, &ts);
		waiter_remove(c, call);
	}
	conn_handoff_locked(c);
	int rc = call->nc_rc;
	call->nc_conn = NULL; /* a second wait returns at once */
	pthread_mutex_unlock(&c->nc_lock);
	return rc;
}

int net_call_run(struct net_conn *c, struct net_call *call)
{
	int rc = net_call_start(c, call);
	if (rc)
		return rc;
	return net_call_wait(call);
}

void *net_call_unpack(const struct net_call *call, const ProtobufCMessageDescriptor *d)
{
	void *m = protobuf_c_message_unpack(d, NULL, call->nc_rep_body_len, call->nc_rep_body);
	if (!m)
		WEIR_LOG_ERROR("op=%u: malformed %s reply body (%u bytes)", call->nc_opcode,
			       d->name, call->nc_rep_body_len);
	return m;
}

void net_call_fini(struct net_call *call)
{
	free(call->nc_rep_body);
	call->nc_rep_body = NULL;
	pthread_cond_destroy(&call->nc_cond);
}
