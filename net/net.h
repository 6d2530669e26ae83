/*
 * net/net.h - the Weir RPC layer: client connections with many calls in
 * flight, and servers with one event loop per core.
 *
 * A call is one request frame (header + protobuf body + optional bulk bytes)
 * and one reply frame matched by request id. Bulk bytes are never copied by
 * this layer: a request's bulk is sent straight from the caller's iovec with
 * writev(2), and a reply's bulk is read straight into the caller's iovec.
 *
 * Transports: TCP today (net/tcp.c); the transport interface is
 * struct net_xport_ops in net/xport.h, which RDMA implements later. Nothing
 * above net/ sees which transport carries a call.
 *
 * Thread safety: a struct net_conn may be used by any number of threads at
 * once; each struct net_call belongs to the thread that started it until
 * net_call_wait() returns. The layer starts no thread of its own: replies
 * are read by the threads waiting in net_call_wait() (see net/rpc.c).
 */
#ifndef WEIR_NET_H
#define WEIR_NET_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <protobuf-c/protobuf-c.h>

#include "frame.h"

struct net_auth;
struct net_conn;
struct net_server;
struct net_loop;

/** Most iovec segments one call may carry bulk in or out of. */
#define NET_MAX_BULK_IOV 64
/** Default per-call timeout. */
#define NET_DEFAULT_TIMEOUT_MS 30000

enum net_call_state {
	NET_CALL_IDLE = 0,
	NET_CALL_SENT,      /* waiting for the reply */
	NET_CALL_RECEIVING, /* a waiter holding the receive side is filling the reply */
	NET_CALL_DONE,
};

/**
 * One RPC. Fill the "in" fields (net_call_init() sets defaults), start it
 * with net_call_start(), collect it with net_call_wait(), release it with
 * net_call_fini().
 */
struct net_call {
	/* in */
	uint16_t nc_opcode;                 /* weir.WireOp */
	const ProtobufCMessage *nc_req;     /* request body; NULL = empty */
	const struct iovec *nc_req_bulk;    /* request bulk, caller-owned until wait returns */
	int nc_req_nr_bulk;
	const struct iovec *nc_rep_bulk;    /* where reply bulk goes, caller-owned */
	int nc_rep_nr_bulk;
	uint32_t nc_timeout_ms;             /* from start to reply */
	const struct weir_xid_hdr *nc_xid;  /* replay prefix to send (WEIR_FRAME_F_XID);
					     * NULL: none. Caller-owned until start returns */
	bool nc_background;                 /* a long poll (MDS_LEASE_POLL): its waiter reads
					     * the connection only while no other call is
					     * pending (nor was for NET_BG_GRACE_NS, 2 ms), so the
					     * other calls' waiters read their own replies */
	/* out */
	int nc_rc;                 /* 0 or negative errno (transport or remote status) */
	bool nc_rc_remote;         /* nc_rc is the peer's reply status (it answered),
				    * not a transport or local error */
	uint8_t *nc_rep_body;      /* reply body, malloc'd; freed by net_call_fini() */
	uint32_t nc_rep_body_len;  /* bytes */
	uint64_t nc_rep_bulk_len;  /* reply bulk bytes placed in nc_rep_bulk */
	bool nc_rep_txn;           /* the reply carried a reply prefix (net/frame.h,
				    * stripped from nc_rep_body): the two below are set */
	uint64_t nc_transno;       /* write seq that applied the request; 0: none */
	uint64_t nc_last_committed; /* write seq the server had synced */
	/* private to net/ */
	enum net_call_state nc_state;
	uint64_t nc_reqid;
	uint64_t nc_deadline_ns;
	struct net_conn *nc_conn;
	struct net_call *nc_next;  /* pending-table chain */
	struct net_call *nc_wnext; /* chain of calls whose waiter sleeps */
	pthread_cond_t nc_cond;
};

/** Set defaults: no body, no bulk, NET_DEFAULT_TIMEOUT_MS. */
void net_call_init(struct net_call *call, uint16_t opcode, const ProtobufCMessage *req);

/**
 * Send a call. Reconnects first if the connection was lost.
 * \return 0 when sent (then call net_call_wait()), or a negative errno, in
 *         which case the call is complete with nc_rc set:
 * \retval -ECONNREFUSED, -EHOSTUNREACH, -ETIMEDOUT  cannot (re)connect
 * \retval -ENOMEM   body does not fit in memory
 * \retval -EMSGSIZE body or bulk over the frame limits
 * \retval -ECONNRESET  the connection broke while sending
 */
int net_call_start(struct net_conn *c, struct net_call *call);

/**
 * Wait for a started call's reply or its timeout.
 * \return nc_rc: 0, the remote status as a negative errno, -ETIMEDOUT, or
 *         -ECONNRESET if the connection broke first. -EOVERFLOW when the reply
 *         bulk did not fit nc_rep_bulk (the excess is discarded).
 */
int net_call_wait(struct net_call *call);

/**
 * Send a one-way call: a request the server handles, in order with this
 * connection's other requests, and never answers (frame flag
 * WEIR_FRAME_F_NOREPLY; NFSv4's and Lustre's asynchronous close are the
 * model). For requests whose outcome the caller cannot act on, such as the
 * close of a handle that changed nothing: the frame is on the wire when
 * this returns, and the server neither sends a reply nor the caller reads
 * one. A failure on the server is logged there (WARN) and is not reported
 * to the caller; the frame is lost if the connection breaks before the
 * server read it.
 *
 * \param[in] c     The connection.
 * \param[in] call  A call set up as for net_call_start(); reply bulk, the
 *                  timeout and net_call_wait() do not apply. The request
 *                  body and bulk are only read during this call; the
 *                  caller may net_call_fini() and reuse \a call on return.
 * \return 0 when the frame is in the connection's send queue, or a
 *         negative errno as net_call_start() (reconnect failures,
 *         -EMSGSIZE, -ENOMEM, -ESHUTDOWN; -ECONNRESET when the send broke
 *         the connection).
 * Thread safety: as net_call_start().
 */
int net_call_send_oneway(struct net_conn *c, struct net_call *call);

/** net_call_start() then net_call_wait(). */
int net_call_run(struct net_conn *c, struct net_call *call);

/**
 * Unpack the reply body as message type \a d.
 * \return a message the caller frees with protobuf_c_message_free_unpacked(),
 *         or NULL if the body is malformed (logged).
 */
void *net_call_unpack(const struct net_call *call, const ProtobufCMessageDescriptor *d);

/** Free what a call holds (the reply body). Safe on a never-started call. */
void net_call_fini(struct net_call *call);

/**
 * Open a client connection to "HOST:PORT".
 * \param[in]  connect_timeout_ms  Bound on the TCP connect.
 * \param[out] out  The connection; free with net_conn_close().
 * \return 0 or a negative errno (-EINVAL bad address, -ECONNREFUSED, ...).
 */
int net_conn_open(const char *hostport, uint32_t connect_timeout_ms, struct net_conn **out);
/**
 * As net_conn_open(), with the keys of \a auth (net/auth.h) instead of the
 * process default. Every connect and reconnect runs the handshake first.
 * \param[in] auth  Not owned; must outlive the connection. NULL: the default.
 * \return as net_conn_open(), and -EACCES when authentication failed (the
 *         key differs, or one side has none: net_auth_last_error() on the
 *         calling thread says which), -EPROTO when the peer is not a Weir
 *         server of this version.
 */
int net_conn_open_auth(const char *hostport, uint32_t connect_timeout_ms, struct net_auth *auth,
		       struct net_conn **out);
/**
 * Close and free. Calls started and not yet waited for complete with
 * -ESHUTDOWN (their net_call_wait() returns at once without touching \a c).
 * No other thread may be inside net_call_start()/net_call_wait() on \a c
 * while it closes. Accepts NULL.
 */
void net_conn_close(struct net_conn *c);
/** The "HOST:PORT" this connection was opened to. Valid until close. */
const char *net_conn_peer(const struct net_conn *c);
/**
 * Replies read on \a c by the waiter of another call than theirs since the
 * connection was opened: each cost its own waiter a wakeup (a diagnostic;
 * see the leader/followers design in net/rpc.c). Thread-safe.
 */
uint64_t net_conn_handoffs(struct net_conn *c);

/* ------------------------------------------------------------------ server */

/** One received request, owned by the server until net_req_reply(). */
struct net_req {
	struct weir_frame_hdr rq_hdr;
	const uint8_t *rq_body;    /* rq_hdr.fh_body_len bytes */
	uint8_t *rq_bulk;          /* rq_hdr.fh_bulk_len bytes, writable */
	struct net_loop *rq_loop;  /* the loop thread that read it */
	void *rq_loop_priv;        /* that loop's private state (so_loop_init) */
	void *rq_srv_arg;          /* net_server_ops.so_arg */
	void *rq_conn;             /* private */
	char rq_peer[64];          /* "HOST:PORT" of the client, for logs */
	char rq_key_name[32];      /* the name of the key the connection proved
				    * (common/key.h); "" on a keyless server */
	struct sockaddr_storage rq_peer_sa; /* the client's address */
	/* The reply prefix (net/frame.h, struct weir_txn_hdr): with rq_rep_txn,
	 * net_req_reply() sends these two before the body, flagged
	 * WEIR_FRAME_F_XID. Set by the handler, read by whichever thread replies. */
	bool rq_rep_txn;
	uint64_t rq_rep_transno;
	uint64_t rq_rep_last_committed;
	/* Optional: called by net_req_reply() first, on the replying thread,
	 * to fill the two above from that thread's state. */
	void (*rq_rep_prepare)(struct net_req *rq);
	/* A request made inside the server, with no connection (mds/recovery.c
	 * re-runs a client's kept request through the usual handler):
	 * net_req_reply() calls this instead of sending (after rq_rep_prepare),
	 * with the reply's status and message (NULL: none; valid only during the
	 * call), and the callback owns \a rq from then on. NULL for a request
	 * read from a connection. */
	void (*rq_local_done)(struct net_req *rq, int rc, const ProtobufCMessage *body);
	void *rq_local_arg; /* for rq_local_done */
	/* Optional: called by net_req_reply() first, once (reset to NULL
	 * before the call). \a can_hold true (a request from a connection, a
	 * reply without bulk): the body is packed in rq_held_body, and
	 * returning true keeps the reply, which the server sends later with
	 * net_req_reply_held(), from any thread (the MDS holds a change's reply
	 * until the clients caching what it changed were called back). With
	 * \a can_hold false it must return false (the reply goes at once). */
	bool (*rq_rep_hold)(struct net_req *rq, bool can_hold);
	void *rq_hold_arg;	/* the server's, for rq_rep_hold */
	int rq_held_rc;		/* the held reply's status */
	uint8_t *rq_held_body;	/* its packed body (malloc'd; NULL: none) */
	size_t rq_held_len;	/* bytes */
};

struct net_server_ops {
	/**
	 * Handle one request, on the loop thread that read it. Must eventually
	 * call net_req_reply() exactly once, from any thread.
	 */
	void (*so_handle)(struct net_req *rq);
	/** Optional: per-loop state, created on the loop thread before it serves. */
	int (*so_loop_init)(struct net_loop *lp, void *arg, void **priv);
	/** Optional: tear down per-loop state on the loop thread. */
	void (*so_loop_fini)(struct net_loop *lp, void *arg, void *priv);
	void *so_arg;
};

struct net_server_conf {
	const char *sc_listen;         /* "HOST:PORT"; port 0 = any free port; NULL: */
	int sc_listen_fd;              /* with sc_listen NULL, a socket from net_listen(),
					* taken over (closed by net_server_stop(), and by
					* net_server_start() when it fails) */
	const char *sc_name;           /* thread name prefix, e.g. "mds" */
	uint32_t sc_nr_loops;          /* event loop threads, >= 1 */
	uint32_t sc_max_inflight;      /* per connection; reading pauses beyond it */
	struct net_auth *sc_auth;      /* keys peers must prove (net/auth.h), not owned;
					* NULL: the process default (none: any peer) */
	uint32_t sc_poll_us;           /* most a loop polls for work before it sleeps, us
					* (adaptive, net/npoll.h); 0: never polls; at most
					* NET_POLL_MAX_US (10,000) is used */
};

/**
 * Bind and listen on \a addr ("HOST:PORT"; port 0 = any free port) without
 * starting a server, so that a daemon can find its port busy before it
 * formats or loads anything; the socket then goes to net_server_start() in
 * net_server_conf.sc_listen_fd.
 * \param[out] fd    The listening socket (non-blocking, close-on-exec); the caller's.
 * \param[out] port  The port bound (may be NULL).
 * \return 0, -EINVAL (a bad or unresolvable address), -EADDRINUSE,
 *         -EADDRNOTAVAIL, -EACCES, or another -errno of bind/listen.
 */
int net_listen(const char *addr, int *fd, uint16_t *port);

/**
 * Bind, listen (or take the socket of net_listen()) and start the loop threads.
 * \return 0 or a negative errno (-EADDRINUSE, -EINVAL for a bad address, ...).
 */
int net_server_start(const struct net_server_conf *conf, const struct net_server_ops *ops,
		     struct net_server **out);
/** The TCP port actually bound (useful with port 0). */
uint16_t net_server_port(const struct net_server *s);
/**
 * Stop the loops, close every connection, free. A request still being handled
 * may be replied to later: the reply is dropped (its connection is closed).
 */
void net_server_stop(struct net_server *s);

/**
 * Watch \a fd on loop \a lp (level-triggered EPOLLIN); \a cb runs on that
 * loop's thread. Use for an io_uring completion eventfd. \return 0 or -errno.
 */
int net_loop_add_fd(struct net_loop *lp, int fd, void (*cb)(void *arg), void *arg);

/**
 * Send the reply to \a rq and free it. Thread-safe; may block while the
 * socket drains. A reply to a connection that has closed is dropped.
 * \param[in] rc    0 or a negative errno (sent as a weir.WireStatus).
 * \param[in] body  Reply message, or NULL for an empty body.
 * \param[in] bulk  Reply bulk bytes, caller-owned; sent before this returns.
 */
void net_req_reply(struct net_req *rq, int rc, const ProtobufCMessage *body,
		   const struct iovec *bulk, int nr_bulk);

/**
 * Send the reply net_req_reply() held (rq_rep_hold returned true) and free
 * \a rq, as net_req_reply() would have. Thread-safe, any thread, once.
 */
void net_req_reply_held(struct net_req *rq);

/**
 * Unpack the request body as type \a d. NULL (and a log line) when malformed:
 * reply -EPROTO then.
 */
void *net_req_unpack(const struct net_req *rq, const ProtobufCMessageDescriptor *d);

#endif /* WEIR_NET_H */
