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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"

struct net_xport {
	int tx_fd;
};

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
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };
			int n = poll(&pfd, 1, (int)timeout_ms);
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
		while (nr > 0 && (size_t)n >= p->iov_len) {
			n -= (ssize_t)p->iov_len;
			p++;
			nr--;
		}
		if (nr > 0) {
			p->iov_base = (char *)p->iov_base + n;
			p->iov_len -= (size_t)n;
		}
	}
	return 0;
}

static int tcp_recvv(struct net_xport *x, const struct iovec *iov_in, int nr)
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
	while (nr > 0) {
		ssize_t n = readv(x->tx_fd, p, nr);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EPIPE;
		while (nr > 0 && (size_t)n >= p->iov_len) {
			n -= (ssize_t)p->iov_len;
			p++;
			nr--;
		}
		if (nr > 0) {
			p->iov_base = (char *)p->iov_base + n;
			p->iov_len -= (size_t)n;
		}
	}
	return 0;
}

static int tcp_discard(struct net_xport *x, uint64_t len)
{
	char buf[65536];
	while (len) {
		size_t n = len > sizeof(buf) ? sizeof(buf) : (size_t)len;
		struct iovec iov = { buf, n };
		int rc = tcp_recvv(x, &iov, 1);
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
	.xo_discard = tcp_discard,
	.xo_shutdown = tcp_shutdown,
	.xo_close = tcp_close,
};
