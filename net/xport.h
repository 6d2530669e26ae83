/*
 * net/xport.h - the transport interface, private to net/.
 *
 * A transport moves whole frames between two endpoints. The RPC layer
 * (rpc.c) owns request ids, the pending table and timeouts; it calls these
 * ops and nothing else of the transport. TCP (tcp.c) is the one in tree;
 * an RDMA transport (rdma.c, later) implements the same ops, moving bulk by
 * RDMA READ/WRITE into registered memory instead of after the header.
 */
#ifndef WEIR_NET_XPORT_H
#define WEIR_NET_XPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct net_xport;

struct net_xport_ops {
	const char *xo_name;
	/** Connect to host:port within timeout_ms. \return 0 or -errno. */
	int (*xo_connect)(const char *host, uint16_t port, uint32_t timeout_ms,
			  struct net_xport **out);
	/**
	 * Send one whole frame: \a iov holds header, body and bulk segments.
	 * Callers serialise sends per connection. \return 0 or -errno.
	 */
	int (*xo_sendv)(struct net_xport *x, const struct iovec *iov, int nr);
	/**
	 * Receive exactly the bytes \a iov describes, by \a deadline_ns
	 * (CLOCK_MONOTONIC ns; 0 = no deadline).
	 * \return 0, -EPIPE at EOF, -ETIMEDOUT (some bytes may have been
	 *         consumed: the stream is then unusable), or -errno.
	 */
	int (*xo_recvv)(struct net_xport *x, const struct iovec *iov, int nr, uint64_t deadline_ns);
	/**
	 * Wait until bytes can be received (or the stream ended or broke: the
	 * next xo_recvv() then says which), until \a deadline_ns
	 * (CLOCK_MONOTONIC ns; 0 = no deadline). \a may_poll: the transport
	 * may poll before it sleeps (net/npoll.h); the RPC layer allows it only
	 * for a lone call, whose reply nothing else on this thread's CPU is
	 * waiting to produce. \a kick_fd: a file descriptor (an eventfd) whose
	 * becoming readable ends the wait too (-1: none); the caller drains it.
	 * \return 0 when readable, -EAGAIN when \a kick_fd became readable
	 *         first, -ETIMEDOUT, or -errno.
	 */
	int (*xo_wait_readable)(struct net_xport *x, uint64_t deadline_ns, bool may_poll,
				int kick_fd);
	/**
	 * Whether the peer has closed or reset the connection (checked without
	 * blocking; bytes still unread do not count as alive).
	 */
	bool (*xo_peer_gone)(struct net_xport *x);
	/** Discard \a len incoming bytes by \a deadline_ns (as xo_recvv). \return 0 or -errno. */
	int (*xo_discard)(struct net_xport *x, uint64_t len, uint64_t deadline_ns);
	/** Wake a blocked receiver with an error (used by close). */
	void (*xo_shutdown)(struct net_xport *x);
	/** Free. */
	void (*xo_close)(struct net_xport *x);
};

/** Most iovec segments in one frame: header, body and NET_MAX_BULK_IOV bulk. */
#define NET_IOV_MAX_TCP 72

extern const struct net_xport_ops net_tcp_ops;

/** Step \a *iov / \a *nr past \a n bytes just sent or received. */
static inline void net_iov_advance(struct iovec **iov, int *nr, size_t n)
{
	struct iovec *p = *iov;
	while (*nr > 0 && n >= p->iov_len) {
		n -= p->iov_len;
		p++;
		(*nr)--;
	}
	if (*nr > 0) {
		p->iov_base = (char *)p->iov_base + n;
		p->iov_len -= n;
	}
	*iov = p;
}

/** Set the usual TCP options on a connected socket (NODELAY, keepalive). */
void net_tcp_tune(int fd);

#endif /* WEIR_NET_XPORT_H */
