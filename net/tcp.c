/*
 * net/tcp.c - the TCP transport: client side of struct net_xport_ops.
 * (The server side, an epoll loop per core, is in net/server.c.)
 */
#define _GNU_SOURCE
#include "xport.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "npoll.h"

/*
 * Receive buffer: small reads (a reply's header and body) are served from
 * one recv(2) of up to TCP_RXBUF bytes, so a reply costs one system call
 * rather than one per part; reads of TCP_RXBUF/2 bytes or more (bulk) go
 * straight into the caller's buffers once the buffered bytes are used up.
 */
#define TCP_RXBUF 16384

struct net_xport {
	int tx_fd;
	uint32_t tx_rb_off;  /* first unread byte in tx_rb */
	uint32_t tx_rb_len;  /* unread bytes in tx_rb from tx_rb_off */
	struct net_poll tx_poll; /* polling before a wait for a reply sleeps */
	uint8_t tx_rb[TCP_RXBUF];
};

/* The client's most polling per wait, us: WEIR_POLL_US, read once. */
static pthread_once_t poll_once = PTHREAD_ONCE_INIT;
static uint32_t poll_us = NET_POLL_DEFAULT_US;

static void poll_setting(void)
{
	const char *e = getenv("WEIR_POLL_US");
	if (!e || !*e)
		return;
	char *end;
	errno = 0;
	unsigned long v = strtoul(e, &end, 10);
	if (errno || *end || v > NET_POLL_MAX_US) {
		WEIR_LOG_WARN("WEIR_POLL_US=%s: want 0..%u (microseconds); using %u", e,
			      NET_POLL_MAX_US, NET_POLL_DEFAULT_US);
		return;
	}
	poll_us = (uint32_t)v;
}

void net_tcp_tune(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
}

static int tcp_connect(const char *host, uint16_t port, uint32_t timeout_ms,
		       struct net_xport **out)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	char portstr[8];
	snprintf(portstr, sizeof(portstr), "%u", port);
	int gai = getaddrinfo(host, portstr, &hints, &res);
	if (gai)
		return gai == EAI_NONAME ? -EHOSTUNREACH : -EINVAL;
	int rc = -ECONNREFUSED;
	int fd = -1;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0) {
			rc = -errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			goto connected;
		if (errno == EINPROGRESS) {
			/* a signal (the application's timers, a profiler's) does not end
			 * the wait: poll again for what is left of the timeout */
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };
			uint64_t deadline = weir_now_ns() + (uint64_t)timeout_ms * 1000000ULL;
			int n;
			for (;;) {
				uint64_t now = weir_now_ns();
				int left = now >= deadline ? 0
							   : (int)((deadline - now + 999999) / 1000000);
				n = poll(&pfd, 1, left);
				if (n >= 0 || errno != EINTR)
					break;
			}
			if (n == 1) {
				int err = 0;
				socklen_t el = sizeof(err);
				getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
				if (!err)
					goto connected;
				rc = -err;
			} else {
				rc = n == 0 ? -ETIMEDOUT : -errno;
			}
		} else {
			rc = -errno;
		}
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return rc;
connected:
	freeaddrinfo(res);
	{
		int fl = fcntl(fd, F_GETFL);
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	}
	net_tcp_tune(fd);
	struct net_xport *x = calloc(1, sizeof(*x));
	if (!x) {
		close(fd);
		return -ENOMEM;
	}
	x->tx_fd = fd;
	pthread_once(&poll_once, poll_setting);
	net_poll_init(&x->tx_poll, poll_us);
	*out = x;
	return 0;
}

static int tcp_sendv(struct net_xport *x, const struct iovec *iov_in, int nr)
{
	struct iovec iov[NET_IOV_MAX_TCP];
	if (nr > NET_IOV_MAX_TCP)
		return -EMSGSIZE;
	memcpy(iov, iov_in, sizeof(*iov) * (size_t)nr);
	struct iovec *p = iov;
	while (nr > 0) {
		struct msghdr mh = { .msg_iov = p, .msg_iovlen = (size_t)nr };
		ssize_t n = sendmsg(x->tx_fd, &mh, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		net_iov_advance(&p, &nr, (size_t)n);
	}
	return 0;
}

/* Copy buffered bytes into the front of \a p[0..*nr); advances the iovecs. */
static void tcp_rb_drain(struct net_xport *x, struct iovec **pp, int *nr)
{
	struct iovec *p = *pp;
	while (*nr > 0 && x->tx_rb_len) {
		size_t n = WEIR_MIN(p->iov_len, (size_t)x->tx_rb_len);
		memcpy(p->iov_base, x->tx_rb + x->tx_rb_off, n);
		x->tx_rb_off += (uint32_t)n;
		x->tx_rb_len -= (uint32_t)n;
		p->iov_base = (char *)p->iov_base + n;
		p->iov_len -= n;
		while (*nr > 0 && p->iov_len == 0) {
			p++;
			(*nr)--;
		}
	}
	if (!x->tx_rb_len)
		x->tx_rb_off = 0;
	*pp = p;
}

/*
 * Wait for the socket to be readable by \a deadline_ns (0: no deadline).
 * \return 0, -ETIMEDOUT or -errno.
 */
/* Wait for the socket, or for \a kick_fd (-1: none: -EAGAIN then), until \a deadline_ns. */
static int tcp_wait_kick(struct net_xport *x, uint64_t deadline_ns, int kick_fd)
{
	for (;;) {
		int ms = -1;
		if (deadline_ns) {
			uint64_t now = weir_now_ns();
			if (now >= deadline_ns)
				return -ETIMEDOUT;
			ms = (int)WEIR_MIN((deadline_ns - now + 999999) / 1000000, (uint64_t)INT32_MAX);
		}
		struct pollfd pfd[2] = { { .fd = x->tx_fd, .events = POLLIN },
					 { .fd = kick_fd, .events = POLLIN } };
		int n = poll(pfd, kick_fd >= 0 ? 2 : 1, ms);
		if (n > 0 && kick_fd >= 0 && pfd[1].revents)
			return -EAGAIN; /* first: the reply may be the kicker's */
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

static int tcp_wait_deadline(struct net_xport *x, uint64_t deadline_ns)
{
	return tcp_wait_kick(x, deadline_ns, -1);
}

static int tcp_recvv(struct net_xport *x, const struct iovec *iov_in, int nr, uint64_t deadline_ns)
{
	struct iovec iov[NET_IOV_MAX_TCP];
	if (nr > NET_IOV_MAX_TCP)
		return -EMSGSIZE;
	memcpy(iov, iov_in, sizeof(*iov) * (size_t)nr);
	struct iovec *p = iov;
	while (nr > 0 && p->iov_len == 0) {
		p++;
		nr--;
	}
	tcp_rb_drain(x, &p, &nr);
	while (nr > 0) {
		size_t want = 0;
		for (int i = 0; i < nr && want < TCP_RXBUF / 2; i++)
			want += p[i].iov_len;
		ssize_t n;
		if (want < TCP_RXBUF / 2) {
			/* small: fill the buffer with whatever has arrived */
			n = recv(x->tx_fd, x->tx_rb, TCP_RXBUF, MSG_DONTWAIT);
			if (n > 0) {
				x->tx_rb_off = 0;
				x->tx_rb_len = (uint32_t)n;
				tcp_rb_drain(x, &p, &nr);
				continue;
			}
		} else {
			struct msghdr mh = { .msg_iov = p, .msg_iovlen = (size_t)WEIR_MIN(nr, IOV_MAX) };
			n = recvmsg(x->tx_fd, &mh, MSG_DONTWAIT);
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			int rc = tcp_wait_deadline(x, deadline_ns);
			if (rc)
				return rc;
			continue;
		}
		if (n == 0)
			return -EPIPE;
		net_iov_advance(&p, &nr, (size_t)n);
	}
	return 0;
}

struct tcp_wait {
	struct net_xport *tw_x;
	uint64_t tw_deadline_ns;
};

/* net_poll_wait's check: 1 when readable, else 0 (EINTR too). */
static int tcp_wait_check(void *arg)
{
	struct tcp_wait *w = arg;
	struct pollfd pfd = { .fd = w->tw_x->tx_fd, .events = POLLIN };
	return poll(&pfd, 1, 0) > 0;
}

/* net_poll_wait's block: 1 when readable, -ETIMEDOUT or -errno. */
static int tcp_wait_block(void *arg)
{
	struct tcp_wait *w = arg;
	int rc = tcp_wait_deadline(w->tw_x, w->tw_deadline_ns);
	return rc ? rc : 1;
}

/* Wait for a reply: poll for up to the adaptive window, then sleep (net/npoll.h). */
static int tcp_wait_readable(struct net_xport *x, uint64_t deadline_ns, bool may_poll, int kick_fd)
{
	if (x->tx_rb_len)
		return 0;
	if (kick_fd >= 0) /* a background wait (net/rpc.c): never polls */
		return tcp_wait_kick(x, deadline_ns, kick_fd);
	if (!may_poll)
		return tcp_wait_deadline(x, deadline_ns);
	struct tcp_wait w = { x, deadline_ns };
	int n = net_poll_wait(&x->tx_poll, deadline_ns, tcp_wait_check, tcp_wait_block, &w);
	return n > 0 ? 0 : n;
}

static bool tcp_peer_gone(struct net_xport *x)
{
	struct pollfd pfd = { .fd = x->tx_fd, .events = POLLIN | POLLRDHUP };
	if (poll(&pfd, 1, 0) != 1)
		return false;
	return pfd.revents & (POLLRDHUP | POLLHUP | POLLERR);
}

static int tcp_discard(struct net_xport *x, uint64_t len, uint64_t deadline_ns)
{
	char buf[65536];
	while (len) {
		size_t n = len > sizeof(buf) ? sizeof(buf) : (size_t)len;
		struct iovec iov = { buf, n };
		int rc = tcp_recvv(x, &iov, 1, deadline_ns);
		if (rc)
			return rc;
		len -= n;
	}
	return 0;
}

static void tcp_shutdown(struct net_xport *x)
{
	shutdown(x->tx_fd, SHUT_RDWR);
}

static void tcp_close(struct net_xport *x)
{
	if (!x)
		return;
	close(x->tx_fd);
	free(x);
}

const struct net_xport_ops net_tcp_ops = {
	.xo_name = "tcp",
	.xo_connect = tcp_connect,
	.xo_sendv = tcp_sendv,
	.xo_recvv = tcp_recvv,
	.xo_wait_readable = tcp_wait_readable,
	.xo_peer_gone = tcp_peer_gone,
	.xo_discard = tcp_discard,
	.xo_shutdown = tcp_shutdown,
	.xo_close = tcp_close,
};
