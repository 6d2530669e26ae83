/*
 * net/server.c - server side of the RPC layer over TCP.
 *
 * DESIGN. Threads:
 *   "<name>-loopN" (sc_nr_loops of them): each owns an epoll set, the
 *       connections assigned to it, and whatever per-loop state the server
 *       creates in so_loop_init (the OSS puts its io_uring ring there). It
 *       reads frames without blocking and calls so_handle for each complete
 *       request, in arrival order per connection.
 *   Loop 0 also owns the listening socket and deals new connections to the
 *   loops round-robin (epoll_ctl is thread-safe).
 * Replies (net_req_reply) may come from any thread: each connection has a
 * send lock, under which a reply is written whole without blocking; what
 * the socket does not take goes to the connection's output queue (a copy),
 * which the loop flushes when EPOLLOUT says the peer made room, so a client
 * that is slow to read its replies stalls only itself, never the loop or
 * other clients. Past SRV_OQ_MAX queued bytes a reply waits (poll, up to
 * NET_SEND_TIMEOUT_MS, after which the connection is dropped). A peer that
 * is gone (EPIPE, ECONNRESET) gets no more replies, but the requests it
 * sent before going are still read and handled (so the one-way closes a
 * client sent just before it exited are not lost). A request flagged
 * WEIR_FRAME_F_NOREPLY (net_call_send_oneway) is handled like any other;
 * its reply is dropped, and logged when it is an error. A connection is reference counted: one reference for its loop,
 * one per request being handled; the fd is closed at the last put, so a
 * late reply never writes to a reused descriptor.
 * A connection with sc_max_inflight requests being handled stops being
 * read until replies drain (back-pressure instead of unbounded memory).
 * Reading: one recv(2) of up to SRV_RXBUF bytes into the connection's
 * buffer brings in the headers and bodies of as many small requests as have
 * arrived; a large body or bulk is read straight into its request's buffer.
 * A recv that returns less than it asked for means the socket is empty, so
 * the loop goes back to epoll (level-triggered) instead of trying again.
 * When whole frames stay buffered with nothing left on the socket (the
 * connection was paused, or a round's frame budget ran out), the connection
 * is armed for EPOLLOUT as well, which fires at once, so the loop comes
 * back to them.
 * Any malformed frame closes its connection with a log line.
 */
#define _GNU_SOURCE
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "auth_int.h"
#include "npoll.h"
#include "xport.h"
#include "weir.pb-c.h"

#define NET_SEND_TIMEOUT_MS 30000
/* Per-connection receive buffer (bytes); bodies of half of it or more bypass it. */
#define SRV_RXBUF 16384
/* Most reply bytes queued per connection before a reply waits for room (bytes). */
#define SRV_OQ_MAX (64u << 20)

enum ev_kind { EV_LISTEN = 1, EV_CONN, EV_WAKE, EV_USER };

struct ev_src {
	enum ev_kind es_kind;
};

struct srv_conn {
	struct ev_src sc_ev; /* first: epoll data points here */
	int sc_fd;
	atomic_int sc_refs;
	atomic_int sc_inflight;
	atomic_bool sc_dead;      /* no more sends; the loop will drop it */
	atomic_bool sc_loop_gone; /* the loop dropped its reference */
	bool sc_paused;           /* under sc_pause_lock */
	pthread_mutex_t sc_pause_lock;
	pthread_mutex_t sc_send_lock;
	struct net_loop *sc_loop; /* not to be used once sc_loop_gone (the server may be gone) */
	uint32_t sc_max_inflight; /* copy of the server's, for replies after its stop */
	struct srv_conn *sc_prev, *sc_next; /* the loop's live list, under ns_conns_lock */
	char sc_peer[64];
	struct sockaddr_storage sc_peer_sa;
	struct net_auth_srv sc_auth; /* the handshake (loop thread only) */
	uint64_t sc_accept_ns;       /* CLOCK_MONOTONIC of the accept */
	bool sc_out_read;         /* EPOLLOUT for buffered frames, under sc_pause_lock */
	bool sc_out_write;        /* EPOLLOUT for the output queue, under sc_pause_lock */
	/* output queue, under sc_send_lock */
	uint8_t *sc_oq;
	size_t sc_oq_off, sc_oq_len, sc_oq_cap;
	bool sc_send_dead;        /* the peer is gone: replies are dropped */
	/* read state (loop thread only) */
	uint8_t *sc_rb;           /* SRV_RXBUF bytes received, not yet parsed */
	uint32_t sc_rb_off;       /* first unparsed byte */
	uint32_t sc_rb_len;       /* unparsed bytes from sc_rb_off */
	uint8_t sc_hdr_raw[WEIR_FRAME_HDR_SIZE];
	size_t sc_hdr_got;
	struct net_req *sc_rq; /* request being read */
	uint8_t *sc_buf;       /* body + bulk */
	uint64_t sc_buf_len;
	uint64_t sc_buf_got;
};

struct user_fd {
	struct ev_src uf_ev;
	int uf_fd;
	void (*uf_cb)(void *);
	void *uf_arg;
	struct user_fd *uf_next;
};

struct net_loop {
	struct net_server *lp_srv;
	unsigned lp_idx;
	int lp_epfd;
	int lp_wakefd;
	struct ev_src lp_wake_ev;
	pthread_t lp_thread;
	void *lp_priv;
	struct user_fd *lp_user;
	struct srv_conn *lp_conns; /* live connections, for stop; under ns_conns_lock */
	int lp_init_rc;
	pthread_mutex_t lp_init_lock;
	pthread_cond_t lp_init_cond;
	bool lp_init_done;
	struct net_poll lp_poll;   /* polling before epoll_wait sleeps (net/npoll.h) */
	uint64_t lp_sweep_ns;      /* last look for connections stuck before their handshake */
};

struct net_server {
	struct net_server_conf ns_conf;
	struct net_server_ops ns_ops;
	char ns_name[32];
	int ns_listen_fd;
	struct ev_src ns_listen_ev;
	uint16_t ns_port;
	atomic_bool ns_stop;
	unsigned ns_next_loop;
	struct net_loop *ns_loops;
	/* all live connections, for stop */
	pthread_mutex_t ns_conns_lock;
};

static void conn_put(struct srv_conn *sc)
{
	if (atomic_fetch_sub(&sc->sc_refs, 1) != 1)
		return;
	close(sc->sc_fd);
	free(sc->sc_oq);
	free(sc->sc_rb);
	free(sc->sc_buf);
	free(sc->sc_rq);
	pthread_mutex_destroy(&sc->sc_send_lock);
	pthread_mutex_destroy(&sc->sc_pause_lock);
	free(sc);
}

static void conn_link(struct srv_conn *sc)
{
	struct net_loop *lp = sc->sc_loop;
	pthread_mutex_lock(&lp->lp_srv->ns_conns_lock);
	sc->sc_prev = NULL;
	sc->sc_next = lp->lp_conns;
	if (lp->lp_conns)
		lp->lp_conns->sc_prev = sc;
	lp->lp_conns = sc;
	pthread_mutex_unlock(&lp->lp_srv->ns_conns_lock);
}

static void conn_unlink(struct srv_conn *sc)
{
	struct net_loop *lp = sc->sc_loop;
	pthread_mutex_lock(&lp->lp_srv->ns_conns_lock);
	if (sc->sc_prev)
		sc->sc_prev->sc_next = sc->sc_next;
	else if (lp->lp_conns == sc)
		lp->lp_conns = sc->sc_next;
	if (sc->sc_next)
		sc->sc_next->sc_prev = sc->sc_prev;
	sc->sc_prev = sc->sc_next = NULL;
	pthread_mutex_unlock(&lp->lp_srv->ns_conns_lock);
}

/*
 * Drop a connection: loop thread only (the loop owns its epoll membership
 * and its reference). Other threads mark it dead and shut the socket down,
 * which wakes the loop with EPOLLHUP to finish the job here.
 */
static void conn_kill(struct srv_conn *sc, const char *why, int rc)
{
	pthread_mutex_lock(&sc->sc_pause_lock); /* conn_set_paused may be using sc_loop */
	bool gone = atomic_exchange(&sc->sc_loop_gone, true);
	pthread_mutex_unlock(&sc->sc_pause_lock);
	if (gone)
		return;
	conn_unlink(sc);
	atomic_store(&sc->sc_dead, true);
	if (why) /* rate-limited: a peer may send garbage on purpose */
		WEIR_LOG_WARN_RL("peer=%s rc=%d: %s; closing connection", sc->sc_peer, rc, why);
	epoll_ctl(sc->sc_loop->lp_epfd, EPOLL_CTL_DEL, sc->sc_fd, NULL);
	shutdown(sc->sc_fd, SHUT_RDWR);
	conn_put(sc); /* the loop's reference */
}

/* Set the connection's epoll events. Called with sc_pause_lock held. */
static void conn_arm_locked(struct srv_conn *sc)
{
	if (atomic_load(&sc->sc_loop_gone))
		return;
	uint32_t events = sc->sc_paused ? 0 : EPOLLIN;
	if (sc->sc_out_write || (sc->sc_out_read && !sc->sc_paused))
		events |= EPOLLOUT;
	struct epoll_event ev = { .events = events, .data.ptr = &sc->sc_ev };
	epoll_ctl(sc->sc_loop->lp_epfd, EPOLL_CTL_MOD, sc->sc_fd, &ev);
}

/*
 * Pause or resume reading a connection (back-pressure), under sc_pause_lock.
 * A resume also arms EPOLLOUT: frames may be waiting in the connection's
 * buffer with nothing new on the socket to wake the loop.
 */
static void conn_set_paused(struct srv_conn *sc, bool paused)
{
	pthread_mutex_lock(&sc->sc_pause_lock);
	if (sc->sc_paused != paused) {
		sc->sc_paused = paused;
		if (!paused)
			sc->sc_out_read = true;
		conn_arm_locked(sc);
	}
	pthread_mutex_unlock(&sc->sc_pause_lock);
}

/* Arm or disarm EPOLLOUT for the output queue. Called with sc_send_lock held. */
static void conn_want_write(struct srv_conn *sc, bool on)
{
	pthread_mutex_lock(&sc->sc_pause_lock);
	if (sc->sc_out_write != on) {
		sc->sc_out_write = on;
		conn_arm_locked(sc);
	}
	pthread_mutex_unlock(&sc->sc_pause_lock);
}

/*
 * Send \a *iov / \a *nr (advanced past what went). On a full socket: with
 * \a deadline_ns 0, return at once with the rest left in \a *iov; else wait
 * for room until then. Called with sc_send_lock held.
 * \return 0 (sent, or the rest is left), -ETIMEDOUT, or -errno.
 */
static int send_iov(struct srv_conn *sc, struct iovec **iov, int *nr, uint64_t deadline_ns)
{
	while (*nr > 0) {
		struct msghdr mh = { .msg_iov = *iov, .msg_iovlen = (size_t)*nr };
		ssize_t n = sendmsg(sc->sc_fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			if (!deadline_ns)
				return 0;
			uint64_t now = weir_now_ns();
			if (now >= deadline_ns)
				return -ETIMEDOUT;
			struct pollfd pfd = { .fd = sc->sc_fd, .events = POLLOUT };
			poll(&pfd, 1, (int)((deadline_ns - now) / 1000000ULL) + 1);
			continue;
		}
		net_iov_advance(iov, nr, (size_t)n);
	}
	return 0;
}

/*
 * Send the output queue without blocking (or, with \a deadline_ns, waiting
 * for room until then). Called with sc_send_lock held.
 * \return 0 (sent, or the rest waits for EPOLLOUT), or -errno.
 */
static int oq_flush(struct srv_conn *sc, uint64_t deadline_ns)
{
	struct iovec q = { sc->sc_oq + sc->sc_oq_off, sc->sc_oq_len }, *p = &q;
	int nr = sc->sc_oq_len ? 1 : 0;
	int rc = send_iov(sc, &p, &nr, deadline_ns);
	size_t left = nr ? p->iov_len : 0;
	sc->sc_oq_off += sc->sc_oq_len - left;
	sc->sc_oq_len = left;
	if (rc || left)
		return rc;
	sc->sc_oq_off = 0;
	if (sc->sc_oq_cap > SRV_RXBUF * 4) { /* give a large queue's memory back */
		free(sc->sc_oq);
		sc->sc_oq = NULL;
		sc->sc_oq_cap = 0;
	}
	return 0;
}

/* Append the rest of a reply to the output queue. Called with sc_send_lock held. */
static int oq_append(struct srv_conn *sc, const struct iovec *iov, int nr, size_t len)
{
	if (sc->sc_oq_off + sc->sc_oq_len + len > sc->sc_oq_cap) {
		if (sc->sc_oq_off) {
			memmove(sc->sc_oq, sc->sc_oq + sc->sc_oq_off, sc->sc_oq_len);
			sc->sc_oq_off = 0;
		}
		if (sc->sc_oq_len + len > sc->sc_oq_cap) {
			size_t cap = WEIR_MAX(sc->sc_oq_len + len, (size_t)SRV_RXBUF);
			uint8_t *q = realloc(sc->sc_oq, cap);
			if (!q)
				return -ENOMEM;
			sc->sc_oq = q;
			sc->sc_oq_cap = cap;
		}
	}
	uint8_t *d = sc->sc_oq + sc->sc_oq_off + sc->sc_oq_len;
	for (int i = 0; i < nr; i++) {
		memcpy(d, iov[i].iov_base, iov[i].iov_len);
		d += iov[i].iov_len;
	}
	sc->sc_oq_len += len;
	return 0;
}

/*
 * Send one reply frame: at once what the socket takes, the rest to the
 * output queue (behind anything queued before it). Called with sc_send_lock
 * held. \return 0 or -errno.
 */
static int conn_send(struct srv_conn *sc, struct iovec *iov, int nr)
{
	if (!sc->sc_oq_len) {
		int rc = send_iov(sc, &iov, &nr, 0);
		if (rc || !nr)
			return rc;
	}
	size_t left = 0;
	for (int i = 0; i < nr; i++)
		left += iov[i].iov_len;
	if (sc->sc_oq_len + left > SRV_OQ_MAX) {
		/* the client does not read: wait for room, as long as a send may take */
		uint64_t deadline = weir_now_ns() + (uint64_t)NET_SEND_TIMEOUT_MS * 1000000ULL;
		int rc = oq_flush(sc, deadline);
		if (rc)
			return rc;
		conn_want_write(sc, false);
		return send_iov(sc, &iov, &nr, deadline);
	}
	bool was_empty = !sc->sc_oq_len;
	int rc = oq_append(sc, iov, nr, left);
	if (rc)
		return rc;
	if (was_empty)
		conn_want_write(sc, true);
	return 0;
}

/*
 * After a failed send (\a rc != 0): a peer that is gone gets no more
 * replies but its requests already sent are still handled; any other
 * failure drops the connection. Called with sc_send_lock held.
 */
static void conn_send_failed(struct srv_conn *sc, int rc)
{
	if (!rc)
		return;
	sc->sc_send_dead = true;
	sc->sc_oq_len = 0;
	conn_want_write(sc, false);
	if (rc == -EPIPE || rc == -ECONNRESET) {
		WEIR_LOG_INFO("peer=%s rc=%d: peer gone; its remaining requests are handled"
			      " without replies", sc->sc_peer, rc);
		return;
	}
	WEIR_LOG_WARN("peer=%s rc=%d: reply send failed; closing connection", sc->sc_peer, rc);
	atomic_store(&sc->sc_dead, true);
	shutdown(sc->sc_fd, SHUT_RDWR); /* the loop sees EPOLLHUP */
}

/* EPOLLOUT on the loop: flush the output queue. */
static void conn_writable(struct srv_conn *sc)
{
	pthread_mutex_lock(&sc->sc_send_lock);
	if (sc->sc_oq_len && !sc->sc_send_dead) {
		int rc = oq_flush(sc, 0);
		if (rc)
			conn_send_failed(sc, rc);
	}
	if (!sc->sc_oq_len)
		conn_want_write(sc, false); /* under sc_send_lock: no append can be missed */
	pthread_mutex_unlock(&sc->sc_send_lock);
}

/* A request is answered (or dropped): free it, resume reading when paused. */
static void req_done(struct srv_conn *sc, struct net_req *rq)
{
	int left = atomic_fetch_sub(&sc->sc_inflight, 1) - 1;
	if (left < (int)(sc->sc_max_inflight + 1) / 2)
		conn_set_paused(sc, false);
	free((void *)rq->rq_body); /* body and bulk are one allocation */
	free(rq);
	conn_put(sc);
}

static void reply_send(struct net_req *rq, int rc, const ProtobufCMessage *body,
		       const uint8_t *packed, size_t packed_len, const struct iovec *bulk,
		       int nr_bulk);

void net_req_reply(struct net_req *rq, int rc, const ProtobufCMessage *body,
		   const struct iovec *bulk, int nr_bulk)
{
	if (rq->rq_rep_hold && (rq->rq_local_done || nr_bulk)) {
		bool (*hold)(struct net_req *, bool) = rq->rq_rep_hold;
		rq->rq_rep_hold = NULL;
		hold(rq, false);
	} else if (rq->rq_rep_hold) {
		bool (*hold)(struct net_req *, bool) = rq->rq_rep_hold;
		rq->rq_rep_hold = NULL;
		/* packed first: once held, another thread may send it at once */
		rq->rq_held_rc = rc;
		rq->rq_held_body = NULL;
		rq->rq_held_len = 0;
		if (body && !rc) {
			rq->rq_held_len = protobuf_c_message_get_packed_size(body);
			rq->rq_held_body = malloc(rq->rq_held_len ? rq->rq_held_len : 1);
			if (rq->rq_held_body)
				protobuf_c_message_pack(body, rq->rq_held_body);
			else
				rq->rq_held_rc = -ENOMEM;
		}
		/* the reply prefix from the handler's thread (its transno): a held
		 * reply is sent from another one */
		if (rq->rq_rep_prepare) {
			rq->rq_rep_prepare(rq);
			rq->rq_rep_prepare = NULL;
		}
		if (hold(rq, true))
			return;
		net_req_reply_held(rq);
		return;
	}
	reply_send(rq, rc, body, NULL, 0, bulk, nr_bulk);
}

void net_req_reply_held(struct net_req *rq)
{
	uint8_t *body = rq->rq_held_body;
	rq->rq_held_body = NULL;
	reply_send(rq, rq->rq_held_rc, NULL, body, body ? rq->rq_held_len : 0, NULL, 0);
	free(body);
}

/* net_req_reply() with the body as a message (\a body) or packed (\a packed, \a packed_len). */
static void reply_send(struct net_req *rq, int rc, const ProtobufCMessage *body,
		       const uint8_t *packed, size_t packed_len, const struct iovec *bulk,
		       int nr_bulk)
{
	if (rq->rq_local_done) { /* made in the server: nothing to send */
		if (rq->rq_rep_prepare)
			rq->rq_rep_prepare(rq);
		rq->rq_local_done(rq, rc, rc ? NULL : body);
		return;
	}
	struct srv_conn *sc = rq->rq_conn;
	if (rq->rq_hdr.fh_flags & WEIR_FRAME_F_NOREPLY) {
		char eb[64];
		if (rc)
			WEIR_LOG_WARN("peer=%s op=%u reqid=%llu rc=%d (%s): one-way request failed"
				      " (the client is not told)", rq->rq_peer,
				      rq->rq_hdr.fh_opcode, (unsigned long long)rq->rq_hdr.fh_reqid,
				      rc, weir_rc_str(rc, eb, sizeof(eb)));
		req_done(sc, rq);
		return;
	}
	uint8_t small[2048];
	uint8_t *buf = NULL;
	size_t body_len = 0;
	uint64_t bulk_len = 0;
	struct iovec iov[NET_IOV_MAX_TCP];
	int nr = 0;
	uint8_t raw[WEIR_FRAME_HDR_SIZE];
	uint8_t txn[WEIR_TXN_HDR_SIZE];

	if (rq->rq_rep_prepare)
		rq->rq_rep_prepare(rq);

	if (nr_bulk > NET_MAX_BULK_IOV) {
		rc = -EMSGSIZE;
		nr_bulk = 0;
	}
	for (int i = 0; i < nr_bulk; i++)
		bulk_len += bulk[i].iov_len;
	if (packed && !rc) {
		buf = (uint8_t *)packed; /* not freed here: the caller's */
		body_len = packed_len;
	} else if (body && !rc) {
		body_len = protobuf_c_message_get_packed_size(body);
		buf = body_len <= sizeof(small) ? small : malloc(body_len);
		if (!buf) {
			rc = -ENOMEM;
			body_len = 0;
		} else {
			protobuf_c_message_pack(body, buf);
		}
	}
	if (rc) {
		body_len = 0;
		bulk_len = 0;
		nr_bulk = 0;
	}
	struct weir_frame_hdr h = {
		.fh_opcode = rq->rq_hdr.fh_opcode,
		.fh_flags = WEIR_FRAME_F_REPLY,
		.fh_status = weir_status_from_errno(rc),
		.fh_reqid = rq->rq_hdr.fh_reqid,
		.fh_body_len = (uint32_t)body_len,
		.fh_bulk_len = bulk_len,
	};
	if (rq->rq_rep_txn) { /* the reply prefix, before the body (net/frame.h) */
		struct weir_txn_hdr t = { rq->rq_rep_transno, rq->rq_rep_last_committed };
		weir_txn_encode(&t, txn);
		h.fh_flags |= WEIR_FRAME_F_XID;
		h.fh_body_len += WEIR_TXN_HDR_SIZE;
	}
	weir_frame_encode(&h, raw);
	iov[nr++] = (struct iovec){ raw, sizeof(raw) };
	if (rq->rq_rep_txn)
		iov[nr++] = (struct iovec){ txn, sizeof(txn) };
	if (body_len)
		iov[nr++] = (struct iovec){ buf, body_len };
	for (int i = 0; i < nr_bulk; i++)
		if (bulk[i].iov_len)
			iov[nr++] = bulk[i];

	pthread_mutex_lock(&sc->sc_send_lock);
	if (!atomic_load(&sc->sc_dead) && !sc->sc_send_dead)
		conn_send_failed(sc, conn_send(sc, iov, nr));
	pthread_mutex_unlock(&sc->sc_send_lock);
	if (buf && buf != small && buf != packed)
		free(buf);

	req_done(sc, rq);
}

void *net_req_unpack(const struct net_req *rq, const ProtobufCMessageDescriptor *d)
{
	void *m = protobuf_c_message_unpack(d, NULL, rq->rq_hdr.fh_body_len, rq->rq_body);
	if (!m)
		WEIR_LOG_WARN_RL("peer=%s op=%u reqid=%llu: malformed %s body (%u bytes)", rq->rq_peer,
			      rq->rq_hdr.fh_opcode, (unsigned long long)rq->rq_hdr.fh_reqid,
			      d->name, rq->rq_hdr.fh_body_len);
	return m;
}

static struct net_auth *srv_auth(const struct net_server *s)
{
	return s->ns_conf.sc_auth ? s->ns_conf.sc_auth : net_auth_get_default();
}

/*
 * A frame of a connection that has not finished the handshake: answer it
 * here (the server's handler never sees it). \return true when it was a
 * handshake frame (answered, and the connection closed on failure), false
 * when it is a request to serve (a keyless server serving a peer that
 * skipped the handshake).
 */
static bool auth_frame(struct srv_conn *sc, struct net_req *rq)
{
	struct net_server *s = sc->sc_loop->lp_srv;
	struct net_auth_srv_reply ar;
	int rc = net_auth_srv_frame(srv_auth(s), &sc->sc_auth, rq->rq_hdr.fh_opcode, rq->rq_body,
				    rq->rq_hdr.fh_body_len, sc->sc_peer, &ar);
	if (ar.ar_pass)
		return false;
	Weir__AuthHelloRep hr = WEIR__AUTH_HELLO_REP__INIT;
	const ProtobufCMessage *body = NULL;
	if (!rc && rq->rq_hdr.fh_opcode == WEIR__WIRE_OP__AUTH_HELLO) {
		hr.nonce.data = ar.ar_nonce;
		hr.nonce.len = sizeof(ar.ar_nonce);
		hr.insecure = ar.ar_insecure;
		if (!ar.ar_insecure) {
			hr.proof.data = ar.ar_proof;
			hr.proof.len = sizeof(ar.ar_proof);
		}
		body = &hr.base;
	}
	rq->rq_hdr.fh_flags &= ~WEIR_FRAME_F_NOREPLY; /* a refusal is always answered */
	atomic_fetch_add(&sc->sc_refs, 1);
	atomic_fetch_add(&sc->sc_inflight, 1);
	net_req_reply(rq, rc, body, NULL, 0);
	if (ar.ar_close) {
		/*
		 * The reason was logged (rate-limited). Not conn_kill() here: the
		 * reply has already put its reference, so dropping the loop's would
		 * free sc under conn_readable(), which reads it again when dispatch()
		 * returns (found by tests/fuzz/fuzz_net_server.c). Marked dead and
		 * shut down, the loop sees it end and drops it on the next event
		 * (EPOLLHUP), as after a failed send.
		 */
		atomic_store(&sc->sc_dead, true);
		shutdown(sc->sc_fd, SHUT_RDWR);
	}
	return true;
}

static void dispatch(struct srv_conn *sc)
{
	struct net_req *rq = sc->sc_rq;
	struct net_server *s = sc->sc_loop->lp_srv;
	rq->rq_body = sc->sc_buf;
	rq->rq_bulk = rq->rq_hdr.fh_bulk_len ? sc->sc_buf + rq->rq_hdr.fh_body_len : NULL;
	rq->rq_loop = sc->sc_loop;
	rq->rq_loop_priv = sc->sc_loop->lp_priv;
	rq->rq_srv_arg = s->ns_ops.so_arg;
	rq->rq_conn = sc;
	memcpy(rq->rq_peer, sc->sc_peer, sizeof(rq->rq_peer));
	sc->sc_rq = NULL;
	sc->sc_buf = NULL;
	sc->sc_buf_len = sc->sc_buf_got = 0;
	sc->sc_hdr_got = 0;
	if (sc->sc_auth.as_state != NET_AUTH_DONE && auth_frame(sc, rq))
		return;
	memcpy(rq->rq_key_name, sc->sc_auth.as_key_name, sizeof(rq->rq_key_name));
	rq->rq_peer_sa = sc->sc_peer_sa;
	atomic_fetch_add(&sc->sc_refs, 1);
	int inflight = atomic_fetch_add(&sc->sc_inflight, 1) + 1;
	if (inflight >= (int)s->ns_conf.sc_max_inflight) {
		conn_set_paused(sc, true);
		/* a reply may have drained it meanwhile: re-check under the lock */
		if (atomic_load(&sc->sc_inflight) < (int)(s->ns_conf.sc_max_inflight + 1) / 2)
			conn_set_paused(sc, false);
	}
	s->ns_ops.so_handle(rq);
}

/*
 * Copy up to \a want buffered bytes to \a dst, receiving into the buffer
 * first when it is empty and the socket has not been found empty yet.
 * \return bytes copied (> 0), -EAGAIN (nothing more for now), 0 at EOF, or
 *         a negative errno.
 */
static ssize_t conn_take(struct srv_conn *sc, uint8_t *dst, size_t want, bool *drained)
{
	if (!sc->sc_rb_len) {
		if (*drained)
			return -EAGAIN;
		ssize_t n = recv(sc->sc_fd, sc->sc_rb, SRV_RXBUF, MSG_DONTWAIT);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? -EAGAIN : -errno;
		if (n == 0)
			return 0;
		if (n < SRV_RXBUF)
			*drained = true;
		sc->sc_rb_off = 0;
		sc->sc_rb_len = (uint32_t)n;
	}
	size_t n = WEIR_MIN(want, (size_t)sc->sc_rb_len);
	memcpy(dst, sc->sc_rb + sc->sc_rb_off, n);
	sc->sc_rb_off += (uint32_t)n;
	sc->sc_rb_len -= (uint32_t)n;
	return (ssize_t)n;
}

/* Read what is available on \a sc; dispatch complete frames. */
static void conn_readable(struct srv_conn *sc, uint32_t events)
{
	if (atomic_load(&sc->sc_dead)) {
		conn_kill(sc, NULL, 0);
		return;
	}
	if (!sc->sc_rb) {
		sc->sc_rb = malloc(SRV_RXBUF);
		if (!sc->sc_rb) {
			conn_kill(sc, "out of memory for a receive buffer", -ENOMEM);
			return;
		}
	}
	if (events & EPOLLOUT) {
		conn_writable(sc);
		pthread_mutex_lock(&sc->sc_pause_lock);
		bool rd = sc->sc_out_read;
		if (rd) {
			sc->sc_out_read = false;
			conn_arm_locked(sc);
		}
		pthread_mutex_unlock(&sc->sc_pause_lock);
		if (!rd && !(events & EPOLLIN))
			return;
	}
	bool drained = false;
	for (int rounds = 0; !atomic_load(&sc->sc_dead); rounds++) {
		pthread_mutex_lock(&sc->sc_pause_lock);
		bool paused = sc->sc_paused;
		if (!paused && rounds == 64 && sc->sc_rb_len) {
			sc->sc_out_read = true; /* come back for the buffered frames */
			conn_arm_locked(sc);
		}
		pthread_mutex_unlock(&sc->sc_pause_lock);
		if (paused || rounds == 64)
			return;
		if (sc->sc_hdr_got < WEIR_FRAME_HDR_SIZE) {
			ssize_t n = conn_take(sc, sc->sc_hdr_raw + sc->sc_hdr_got,
					      WEIR_FRAME_HDR_SIZE - sc->sc_hdr_got, &drained);
			if (n == -EAGAIN)
				return;
			if (n < 0) {
				conn_kill(sc, "read failed", (int)n);
				return;
			}
			if (n == 0) {
				if (sc->sc_hdr_got)
					conn_kill(sc, "peer closed mid-frame", -EPIPE);
				else
					conn_kill(sc, NULL, 0);
				return;
			}
			sc->sc_hdr_got += (size_t)n;
			if (sc->sc_hdr_got < WEIR_FRAME_HDR_SIZE)
				continue;
			struct weir_frame_hdr h;
			const char *why;
			int rc = weir_frame_decode(sc->sc_hdr_raw, &h, &why);
			if (!rc && (h.fh_flags & WEIR_FRAME_F_REPLY)) {
				rc = -EPROTO;
				why = "reply frame sent to a server";
			}
			if (!rc && sc->sc_auth.as_state != NET_AUTH_DONE &&
			    net_auth_srv_secure(srv_auth(sc->sc_loop->lp_srv)) &&
			    (h.fh_body_len > NET_AUTH_MAX_BODY || h.fh_bulk_len)) {
				/* nobody gets to make us allocate before proving the key */
				rc = -EACCES;
				why = "a large frame before authentication";
			}
			if (rc) {
				conn_kill(sc, why, rc);
				return;
			}
			sc->sc_rq = calloc(1, sizeof(*sc->sc_rq));
			sc->sc_buf_len = h.fh_body_len + h.fh_bulk_len;
			sc->sc_buf = sc->sc_buf_len ? malloc(sc->sc_buf_len) : NULL;
			if (!sc->sc_rq || (sc->sc_buf_len && !sc->sc_buf)) {
				conn_kill(sc, "out of memory for a request", -ENOMEM);
				return;
			}
			sc->sc_rq->rq_hdr = h;
			sc->sc_buf_got = 0;
		}
		while (sc->sc_buf_got < sc->sc_buf_len) {
			uint64_t left = sc->sc_buf_len - sc->sc_buf_got;
			ssize_t n;
			if (!sc->sc_rb_len && left >= SRV_RXBUF / 2) {
				/* bulk: straight into the request's buffer */
				if (drained)
					return;
				n = recv(sc->sc_fd, sc->sc_buf + sc->sc_buf_got, (size_t)left,
					 MSG_DONTWAIT);
				if (n < 0)
					n = errno == EAGAIN || errno == EINTR ? -EAGAIN : -errno;
				else if (n > 0 && (uint64_t)n < left)
					drained = true;
			} else {
				n = conn_take(sc, sc->sc_buf + sc->sc_buf_got, (size_t)left, &drained);
			}
			if (n == -EAGAIN)
				return;
			if (n < 0) {
				conn_kill(sc, "read failed", (int)n);
				return;
			}
			if (n == 0) {
				conn_kill(sc, "peer closed mid-frame", -EPIPE);
				return;
			}
			sc->sc_buf_got += (uint64_t)n;
		}
		dispatch(sc);
	}
}

static void accept_conns(struct net_server *s)
{
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(s->ns_listen_fd, (struct sockaddr *)&ss, &sl,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR)
				WEIR_LOG_WARN("accept failed: %s", strerror(errno));
			return;
		}
		net_tcp_tune(fd);
		struct srv_conn *sc = calloc(1, sizeof(*sc));
		if (!sc) {
			close(fd);
			continue;
		}
		sc->sc_ev.es_kind = EV_CONN;
		sc->sc_fd = fd;
		atomic_init(&sc->sc_refs, 1);
		pthread_mutex_init(&sc->sc_send_lock, NULL);
		pthread_mutex_init(&sc->sc_pause_lock, NULL);
		char host[INET6_ADDRSTRLEN] = "?";
		uint16_t port = 0;
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *a = (struct sockaddr_in *)&ss;
			inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
			port = ntohs(a->sin_port);
		} else if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
			inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
			port = ntohs(a->sin6_port);
		}
		snprintf(sc->sc_peer, sizeof(sc->sc_peer), "%s:%u", host, port);
		sc->sc_peer_sa = ss;
		sc->sc_accept_ns = weir_now_ns();
		struct net_loop *lp = &s->ns_loops[s->ns_next_loop++ % s->ns_conf.sc_nr_loops];
		sc->sc_loop = lp;
		sc->sc_max_inflight = s->ns_conf.sc_max_inflight;
		conn_link(sc); /* before the loop can see (and kill) it */
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &sc->sc_ev };
		if (epoll_ctl(lp->lp_epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			conn_unlink(sc);
			conn_put(sc);
			continue;
		}
		WEIR_LOG_DEBUG("peer=%s loop=%u: connected", sc->sc_peer, lp->lp_idx);
	}
}

struct loop_waitarg {
	struct net_loop *la_lp;
	struct epoll_event *la_evs;
	int la_max;
};

static int loop_epoll(struct loop_waitarg *a, int timeout_ms)
{
	int n = epoll_wait(a->la_lp->lp_epfd, a->la_evs, a->la_max, timeout_ms);
	return n < 0 ? 0 : n; /* EINTR: nothing yet */
}

static int loop_check(void *arg)
{
	return loop_epoll(arg, 0);
}

static int loop_block(void *arg)
{
	return loop_epoll(arg, 1000);
}

/*
 * Wait for events: after a wait that brought work, poll for up to the
 * adaptive window first (net/npoll.h), then sleep (1 s at most, so the loop
 * sees ns_stop). \return epoll_wait's count (0 on timeout or EINTR).
 */
static int loop_wait(struct net_loop *lp, struct epoll_event *evs, int max, bool busy)
{
	struct loop_waitarg a = { lp, evs, max };
	if (!busy)
		return loop_block(&a);
	return net_poll_wait(&lp->lp_poll, 0, loop_check, loop_block, &a);
}

/*
 * On a server that demands the handshake, close this loop's connections that
 * have not finished it within NET_AUTH_TIMEOUT_MS of their accept: a peer
 * without the key cannot hold sockets open. Loop thread only; looks at most
 * once a second.
 */
static void loop_sweep_unauthenticated(struct net_loop *lp)
{
	struct net_server *s = lp->lp_srv;
	uint64_t now = weir_now_ns();
	struct srv_conn *late[64];
	int n = 0;

	if (now - lp->lp_sweep_ns < 1000000000ULL || !net_auth_srv_secure(srv_auth(s)))
		return;
	lp->lp_sweep_ns = now;
	pthread_mutex_lock(&s->ns_conns_lock);
	for (struct srv_conn *sc = lp->lp_conns; sc && n < 64; sc = sc->sc_next)
		if (sc->sc_auth.as_state != NET_AUTH_DONE &&
		    now - sc->sc_accept_ns > NET_AUTH_TIMEOUT_MS * 1000000ULL) {
			atomic_fetch_add(&sc->sc_refs, 1);
			late[n++] = sc;
		}
	pthread_mutex_unlock(&s->ns_conns_lock);
	for (int i = 0; i < n; i++) {
		conn_kill(late[i], "no handshake within 10 s of the connect", -EACCES);
		conn_put(late[i]);
	}
}

static void *loop_main(void *arg)
{
	struct net_loop *lp = arg;
	struct net_server *s = lp->lp_srv;
	char name[64];
	snprintf(name, sizeof(name), "%.8s-loop%u", s->ns_name, lp->lp_idx);
	weir_thread_name(name);

	int rc = 0;
	if (s->ns_ops.so_loop_init)
		rc = s->ns_ops.so_loop_init(lp, s->ns_ops.so_arg, &lp->lp_priv);
	pthread_mutex_lock(&lp->lp_init_lock);
	lp->lp_init_rc = rc;
	lp->lp_init_done = true;
	pthread_cond_broadcast(&lp->lp_init_cond);
	pthread_mutex_unlock(&lp->lp_init_lock);
	if (rc)
		return NULL;

	struct epoll_event evs[64];
	bool busy = false; /* the last wait brought work */
	net_poll_init(&lp->lp_poll, WEIR_MIN(s->ns_conf.sc_poll_us, NET_POLL_MAX_US));
	while (!atomic_load(&s->ns_stop)) {
		int n = loop_wait(lp, evs, 64, busy);
		busy = n > 0;
		loop_sweep_unauthenticated(lp);
		for (int i = 0; i < n; i++) {
			struct ev_src *src = evs[i].data.ptr;
			switch (src->es_kind) {
			case EV_LISTEN:
				accept_conns(s);
				break;
			case EV_CONN: {
				struct srv_conn *sc = (struct srv_conn *)src;
				if ((evs[i].events & (EPOLLHUP | EPOLLERR)) &&
				    !(evs[i].events & EPOLLIN))
					conn_kill(sc, "connection reset", -ECONNRESET);
				else if (evs[i].events & (EPOLLIN | EPOLLOUT))
					conn_readable(sc, evs[i].events);
				break;
			}
			case EV_WAKE: {
				uint64_t v;
				ssize_t r = read(lp->lp_wakefd, &v, sizeof(v));
				(void)r;
				break;
			}
			case EV_USER: {
				struct user_fd *uf = (struct user_fd *)src;
				uf->uf_cb(uf->uf_arg);
				break;
			}
			}
		}
	}
	if (s->ns_ops.so_loop_fini)
		s->ns_ops.so_loop_fini(lp, s->ns_ops.so_arg, lp->lp_priv);
	return NULL;
}

int net_loop_add_fd(struct net_loop *lp, int fd, void (*cb)(void *arg), void *arg)
{
	struct user_fd *uf = calloc(1, sizeof(*uf));
	if (!uf)
		return -ENOMEM;
	uf->uf_ev.es_kind = EV_USER;
	uf->uf_fd = fd;
	uf->uf_cb = cb;
	uf->uf_arg = arg;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &uf->uf_ev };
	if (epoll_ctl(lp->lp_epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int rc = -errno;
		free(uf);
		return rc;
	}
	uf->uf_next = lp->lp_user;
	lp->lp_user = uf;
	return 0;
}

/* The port \a fd is bound to, or 0. */
static uint16_t listen_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		return 0;
	return ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
					     : ((struct sockaddr_in6 *)&ss)->sin6_port);
}

int net_listen(const char *addr, int *out_fd, uint16_t *out_port)
{
	char host[200];
	uint16_t port;
	int rc = weir_parse_hostport(addr, host, sizeof(host), &port);
	if (rc)
		return rc;
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE };
	struct addrinfo *res;
	char ps[8];
	snprintf(ps, sizeof(ps), "%u", port);
	if (getaddrinfo(host[0] ? host : NULL, ps, &hints, &res))
		return -EINVAL;
	rc = -EADDRNOTAVAIL;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 1024) < 0) {
			rc = -errno;
			close(fd);
			continue;
		}
		if (out_port)
			*out_port = listen_port(fd);
		*out_fd = fd;
		rc = 0;
		break;
	}
	freeaddrinfo(res);
	return rc;
}

int net_server_start(const struct net_server_conf *conf, const struct net_server_ops *ops,
		     struct net_server **out)
{
	int rc;
	struct net_server *s = calloc(1, sizeof(*s));
	if (!s) {
		if (!conf->sc_listen)
			close(conf->sc_listen_fd);
		return -ENOMEM;
	}
	s->ns_conf = *conf;
	if (!s->ns_conf.sc_nr_loops)
		s->ns_conf.sc_nr_loops = 1;
	if (!s->ns_conf.sc_max_inflight)
		s->ns_conf.sc_max_inflight = 64;
	s->ns_ops = *ops;
	snprintf(s->ns_name, sizeof(s->ns_name), "%s", conf->sc_name ? conf->sc_name : "srv");
	pthread_mutex_init(&s->ns_conns_lock, NULL);
	if (conf->sc_listen) {
		rc = net_listen(conf->sc_listen, &s->ns_listen_fd, &s->ns_port);
	} else {
		s->ns_listen_fd = conf->sc_listen_fd;
		s->ns_port = listen_port(conf->sc_listen_fd);
		rc = 0;
	}
	if (rc) {
		free(s);
		return rc;
	}
	s->ns_listen_ev.es_kind = EV_LISTEN;
	unsigned nl = s->ns_conf.sc_nr_loops;
	s->ns_loops = calloc(nl, sizeof(*s->ns_loops));
	if (!s->ns_loops) {
		close(s->ns_listen_fd);
		free(s);
		return -ENOMEM;
	}
	unsigned started = 0;
	for (unsigned i = 0; i < nl; i++) {
		struct net_loop *lp = &s->ns_loops[i];
		lp->lp_srv = s;
		lp->lp_idx = i;
		lp->lp_epfd = epoll_create1(EPOLL_CLOEXEC);
		lp->lp_wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		lp->lp_wake_ev.es_kind = EV_WAKE;
		pthread_mutex_init(&lp->lp_init_lock, NULL);
		pthread_cond_init(&lp->lp_init_cond, NULL);
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &lp->lp_wake_ev };
		epoll_ctl(lp->lp_epfd, EPOLL_CTL_ADD, lp->lp_wakefd, &ev);
		rc = -pthread_create(&lp->lp_thread, NULL, loop_main, lp);
		if (rc)
			break;
		started++;
		pthread_mutex_lock(&lp->lp_init_lock);
		while (!lp->lp_init_done)
			pthread_cond_wait(&lp->lp_init_cond, &lp->lp_init_lock);
		rc = lp->lp_init_rc;
		pthread_mutex_unlock(&lp->lp_init_lock);
		if (rc)
			break;
	}
	if (!rc) {
		/*
		 * Accept only once every loop runs: loop 0 hands connections to the
		 * others, and a socket from net_listen() may hold connections already.
		 */
		struct epoll_event lev = { .events = EPOLLIN, .data.ptr = &s->ns_listen_ev };
		if (epoll_ctl(s->ns_loops[0].lp_epfd, EPOLL_CTL_ADD, s->ns_listen_fd, &lev) < 0)
			rc = -errno;
	}
	if (rc) {
		atomic_store(&s->ns_stop, true);
		for (unsigned i = 0; i < started; i++) {
			uint64_t one = 1;
			ssize_t w = write(s->ns_loops[i].lp_wakefd, &one, sizeof(one));
			(void)w;
			pthread_join(s->ns_loops[i].lp_thread, NULL);
		}
		close(s->ns_listen_fd);
		free(s->ns_loops);
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

uint16_t net_server_port(const struct net_server *s)
{
	return s->ns_port;
}

void net_server_stop(struct net_server *s)
{
	if (!s)
		return;
	atomic_store(&s->ns_stop, true);
	for (unsigned i = 0; i < s->ns_conf.sc_nr_loops; i++) {
		uint64_t one = 1;
		ssize_t w = write(s->ns_loops[i].lp_wakefd, &one, sizeof(one));
		(void)w;
	}
	for (unsigned i = 0; i < s->ns_conf.sc_nr_loops; i++) {
		struct net_loop *lp = &s->ns_loops[i];
		pthread_join(lp->lp_thread, NULL);
		/* close the connections still open (freed at their last reference) */
		pthread_mutex_lock(&s->ns_conns_lock);
		while (lp->lp_conns) {
			struct srv_conn *sc = lp->lp_conns;
			pthread_mutex_unlock(&s->ns_conns_lock);
			conn_kill(sc, NULL, 0);
			pthread_mutex_lock(&s->ns_conns_lock);
		}
		pthread_mutex_unlock(&s->ns_conns_lock);
		close(lp->lp_epfd);
		close(lp->lp_wakefd);
		while (lp->lp_user) {
			struct user_fd *uf = lp->lp_user;
			lp->lp_user = uf->uf_next;
			free(uf);
		}
	}
	close(s->ns_listen_fd);
	free(s->ns_loops);
	free(s);
}
