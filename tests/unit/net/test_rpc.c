/*
 * tests/unit/net/test_rpc.c - net/rpc.c, net/server.c, net/tcp.c over real
 * loopback TCP: an in-process net_server with a test handler, and clients
 * using net_conn / net_call, plus raw sockets sending garbage.
 *
 * Test opcodes (the server does not care what an opcode means):
 *   PING         echo the request bulk, from the loop thread
 *   OST_FSYNC    ObjIoReq: sleep off ms on the loop thread, then reply
 *   OST_READ     ObjIoReq: from a new thread, after flags ms, reply ObjIoRep
 *                and len bytes of th_fill_pattern(seed = off)
 *   OST_DESTROY  reply -ENOENT
 *   OST_WRITE    ObjIoReq (-EPROTO when malformed): reply ObjIoRep
 *                {len = bulk bytes, obj_size = off + bulk bytes}
 *   other        reply -EOPNOTSUPP
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "common/le.h"
#include "common/util.h"
#include "harness.h"
#include "net/net.h"
#include "weir.pb-c.h"

static struct net_server *srv;
static uint16_t srv_port;
static char srv_addr[32];
static struct net_conn *conn;
static atomic_int srv_outstanding; /* requests handed to reply threads */
static atomic_int srv_pings;       /* PINGs handled */

/* ------------------------------------------------------------ the test server */

struct thread_reply {
	struct net_req *tr_rq;
	uint64_t tr_len;
	uint64_t tr_seed;
	uint32_t tr_delay_ms;
};

static void *reply_thread(void *arg)
{
	struct thread_reply *tr = arg;
	if (tr->tr_delay_ms)
		th_sleep_ms(tr->tr_delay_ms);
	uint8_t *buf = tr->tr_len ? malloc(tr->tr_len) : NULL;
	Weir__ObjIoRep rep = WEIR__OBJ_IO_REP__INIT;
	if (tr->tr_len && !buf) {
		net_req_reply(tr->tr_rq, -ENOMEM, NULL, NULL, 0);
	} else {
		th_fill_pattern(buf, tr->tr_len, tr->tr_seed);
		rep.len = tr->tr_len;
		rep.obj_size = tr->tr_seed;
		struct iovec iov = { buf, tr->tr_len };
		net_req_reply(tr->tr_rq, 0, &rep.base, &iov, tr->tr_len ? 1 : 0);
	}
	free(buf);
	free(tr);
	atomic_fetch_sub(&srv_outstanding, 1);
	return NULL;
}

static __thread uint64_t srv_prep_transno;

/* rq_rep_prepare: the transno as the handler's thread knows it at reply time */
static void srv_rep_prepare(struct net_req *rq)
{
	rq->rq_rep_transno = srv_prep_transno;
}

static void srv_handle(struct net_req *rq)
{
	Weir__ObjIoReq *req = NULL;
	switch (rq->rq_hdr.fh_opcode) {
	case WEIR__WIRE_OP__PING: {
		atomic_fetch_add(&srv_pings, 1);
		struct iovec iov = { rq->rq_bulk, rq->rq_hdr.fh_bulk_len };
		net_req_reply(rq, 0, NULL, &iov, rq->rq_hdr.fh_bulk_len ? 1 : 0);
		return;
	}
	case WEIR__WIRE_OP__OST_FSYNC:
		req = net_req_unpack(rq, &weir__obj_io_req__descriptor);
		if (!req) {
			net_req_reply(rq, -EPROTO, NULL, NULL, 0);
			return;
		}
		th_sleep_ms((unsigned)req->off);
		protobuf_c_message_free_unpacked(&req->base, NULL);
		net_req_reply(rq, 0, NULL, NULL, 0);
		return;
	case WEIR__WIRE_OP__OST_READ: {
		req = net_req_unpack(rq, &weir__obj_io_req__descriptor);
		if (!req) {
			net_req_reply(rq, -EPROTO, NULL, NULL, 0);
			return;
		}
		struct thread_reply *tr = calloc(1, sizeof(*tr));
		if (!tr) {
			protobuf_c_message_free_unpacked(&req->base, NULL);
			net_req_reply(rq, -ENOMEM, NULL, NULL, 0);
			return;
		}
		tr->tr_rq = rq;
		tr->tr_len = req->len;
		tr->tr_seed = req->off;
		tr->tr_delay_ms = req->flags;
		protobuf_c_message_free_unpacked(&req->base, NULL);
		atomic_fetch_add(&srv_outstanding, 1);
		pthread_t t;
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &a, reply_thread, tr))
			reply_thread(tr);
		pthread_attr_destroy(&a);
		return;
	}
	case WEIR__WIRE_OP__OST_DESTROY:
		net_req_reply(rq, -ENOENT, NULL, NULL, 0);
		return;
	case WEIR__WIRE_OP__OST_WRITE: {
		req = net_req_unpack(rq, &weir__obj_io_req__descriptor);
		if (!req) {
			net_req_reply(rq, -EPROTO, NULL, NULL, 0);
			return;
		}
		Weir__ObjIoRep rep = WEIR__OBJ_IO_REP__INIT;
		rep.len = rq->rq_hdr.fh_bulk_len;
		rep.obj_size = req->off + rq->rq_hdr.fh_bulk_len;
		protobuf_c_message_free_unpacked(&req->base, NULL);
		net_req_reply(rq, 0, &rep.base, NULL, 0);
		return;
	}
	case WEIR__WIRE_OP__MDS_GETATTR: /* ObjIoReq: reply prefix {off, len} and ObjIoRep */
	case WEIR__WIRE_OP__MDS_LOOKUP: { /* the same prefix with -ENOENT */
		req = net_req_unpack(rq, &weir__obj_io_req__descriptor);
		if (!req) {
			net_req_reply(rq, -EPROTO, NULL, NULL, 0);
			return;
		}
		rq->rq_rep_txn = true;
		rq->rq_rep_transno = 1; /* srv_rep_prepare() overwrites it */
		srv_prep_transno = req->off;
		rq->rq_rep_prepare = srv_rep_prepare;
		rq->rq_rep_last_committed = req->len;
		protobuf_c_message_free_unpacked(&req->base, NULL);
		Weir__ObjIoRep rep = WEIR__OBJ_IO_REP__INIT;
		rep.len = 99;
		if (rq->rq_hdr.fh_opcode == WEIR__WIRE_OP__MDS_LOOKUP)
			net_req_reply(rq, -ENOENT, NULL, NULL, 0);
		else
			net_req_reply(rq, 0, &rep.base, NULL, 0);
		return;
	}
	default:
		net_req_reply(rq, -EOPNOTSUPP, NULL, NULL, 0);
		return;
	}
}

static int suite_init(void)
{
	static const struct net_server_ops ops = { .so_handle = srv_handle };
	struct net_server_conf conf = {
		.sc_listen = "127.0.0.1:0",
		.sc_name = "test",
		.sc_nr_loops = 2,
		.sc_max_inflight = 64,
		.sc_poll_us = 200, /* the loops poll before sleeping, as weir-mds's */
	};
	int rc = net_server_start(&conf, &ops, &srv);
	if (rc) {
		fprintf(stderr, "net_server_start: %d\n", rc);
		return -1;
	}
	srv_port = net_server_port(srv);
	snprintf(srv_addr, sizeof(srv_addr), "127.0.0.1:%u", srv_port);
	rc = net_conn_open(srv_addr, 2000, &conn);
	if (rc) {
		fprintf(stderr, "net_conn_open %s: %d\n", srv_addr, rc);
		return -1;
	}
	return 0;
}

static int suite_clean(void)
{
	net_conn_close(conn);
	for (int i = 0; i < 1000 && atomic_load(&srv_outstanding); i++)
		th_sleep_ms(10);
	if (atomic_load(&srv_outstanding))
		return -1; /* a reply thread is stuck: do not free the server under it */
	net_server_stop(srv);
	return 0;
}

/* ------------------------------------------------------------ helpers */

/* PING with \a len bytes of pattern \a seed; \return 0 when echoed exactly. */
static int ping(struct net_conn *c, size_t len, uint64_t seed)
{
	uint8_t *out = malloc(len + 1), *in = malloc(len + 1);
	if (!out || !in) {
		free(out);
		free(in);
		return -ENOMEM;
	}
	th_fill_pattern(out, len, seed);
	memset(in, 0, len + 1);
	struct iovec oi = { out, len }, ii = { in, len };
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__PING, NULL);
	call.nc_req_bulk = &oi;
	call.nc_req_nr_bulk = len ? 1 : 0;
	call.nc_rep_bulk = &ii;
	call.nc_rep_nr_bulk = len ? 1 : 0;
	int rc = net_call_run(c, &call);
	if (!rc && (call.nc_rep_bulk_len != len || memcmp(in, out, len)))
		rc = -EBADMSG;
	net_call_fini(&call);
	free(out);
	free(in);
	return rc;
}

static void objio_init(Weir__ObjIoReq *r, uint64_t off, uint64_t len, uint32_t flags)
{
	weir__obj_io_req__init(r);
	r->off = off;
	r->len = len;
	r->flags = flags;
}

static void raw_hdr(uint8_t raw[WEIR_FRAME_HDR_SIZE], uint16_t op, uint32_t flags,
		    uint64_t reqid, uint32_t body_len, uint64_t bulk_len);

/*
 * For the hand-made servers below: answer the client's AUTH_HELLO as a
 * keyless (--insecure) server does, so the test's own frames come next.
 * \return 0, or -1 when the first frame was not a hello.
 */
static int raw_answer_hello(int fd)
{
	uint8_t raw[WEIR_FRAME_HDR_SIZE], body[512];
	struct weir_frame_hdr h;
	if (weir_read_all(fd, raw, sizeof(raw)) || weir_frame_decode(raw, &h, NULL) ||
	    h.fh_opcode != WEIR__WIRE_OP__AUTH_HELLO || h.fh_body_len > sizeof(body) ||
	    weir_read_all(fd, body, h.fh_body_len))
		return -1;
	uint8_t nonce[32] = { 1 };
	Weir__AuthHelloRep rep = WEIR__AUTH_HELLO_REP__INIT;
	rep.nonce.data = nonce;
	rep.nonce.len = sizeof(nonce);
	rep.insecure = true;
	size_t len = weir__auth_hello_rep__pack(&rep, body);
	raw_hdr(raw, h.fh_opcode, WEIR_FRAME_F_REPLY, h.fh_reqid, (uint32_t)len, 0);
	if (weir_write_all(fd, raw, sizeof(raw)) || weir_write_all(fd, body, len))
		return -1;
	return 0;
}

/* ------------------------------------------------------------ tests */

static void test_rpc_ping_bulk_in_out_bytes_equal(void)
{
	/* request bulk in three odd iovecs, reply bulk into two */
	const size_t a = 1000003, b = 7, c = 65537, total = a + b + c;
	uint8_t *src = malloc(total), *dst = malloc(total + 16);
	CU_ASSERT_PTR_NOT_NULL_FATAL(src);
	CU_ASSERT_PTR_NOT_NULL_FATAL(dst);
	th_fill_pattern(src, total, 11);
	memset(dst, 0, total + 16);
	struct iovec out[3] = { { src, a }, { src + a, b }, { src + a + b, c } };
	struct iovec in[2] = { { dst, 12345 }, { dst + 12345, total - 12345 + 16 } };
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__PING, NULL);
	call.nc_req_bulk = out;
	call.nc_req_nr_bulk = 3;
	call.nc_rep_bulk = in;
	call.nc_rep_nr_bulk = 2;
	CU_ASSERT_EQUAL(net_call_run(conn, &call), 0);
	CU_ASSERT_EQUAL(call.nc_rc, 0);
	CU_ASSERT_EQUAL(call.nc_rep_bulk_len, total);
	CU_ASSERT_EQUAL(memcmp(src, dst, total), 0);
	CU_ASSERT_EQUAL(dst[total], 0); /* nothing past the reply */
	CU_ASSERT_EQUAL(call.nc_rep_body_len, 0);
	net_call_fini(&call);
	free(src);
	free(dst);
	/* no bulk at all */
	CU_ASSERT_EQUAL(ping(conn, 0, 1), 0);
	CU_ASSERT_EQUAL(ping(conn, 1, 2), 0);
}

static void test_rpc_reply_body_unpacks(void)
{
	uint8_t data[3000];
	th_fill_pattern(data, sizeof(data), 5);
	Weir__ObjIoReq req;
	objio_init(&req, 1 << 20, sizeof(data), 0);
	struct iovec iov = { data, sizeof(data) };
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__OST_WRITE, &req.base);
	call.nc_req_bulk = &iov;
	call.nc_req_nr_bulk = 1;
	CU_ASSERT_EQUAL_FATAL(net_call_run(conn, &call), 0);
	Weir__ObjIoRep *rep = net_call_unpack(&call, &weir__obj_io_rep__descriptor);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rep);
	CU_ASSERT_EQUAL(rep->len, sizeof(data));
	CU_ASSERT_EQUAL(rep->obj_size, (1 << 20) + sizeof(data));
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	net_call_fini(&call);
}

static void test_rpc_bulk_limit_ok_over_limit_emsgsize(void)
{
	size_t max = WEIR_FRAME_MAX_BULK;
	uint8_t *buf = malloc(max + 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	/* exactly the limit goes through */
	CU_ASSERT_EQUAL(ping(conn, max, 99), 0);
	/* one byte more is refused before sending */
	struct iovec iov = { buf, max + 1 };
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__PING, NULL);
	call.nc_req_bulk = &iov;
	call.nc_req_nr_bulk = 1;
	CU_ASSERT_EQUAL(net_call_start(conn, &call), -EMSGSIZE);
	CU_ASSERT_EQUAL(net_call_wait(&call), -EMSGSIZE);
	net_call_fini(&call);
	/* more iovecs than NET_MAX_BULK_IOV */
	struct iovec many[NET_MAX_BULK_IOV + 1];
	for (int i = 0; i <= NET_MAX_BULK_IOV; i++)
		many[i] = (struct iovec){ buf + i, 1 };
	net_call_init(&call, WEIR__WIRE_OP__PING, NULL);
	call.nc_req_bulk = many;
	call.nc_req_nr_bulk = NET_MAX_BULK_IOV + 1;
	CU_ASSERT_EQUAL(net_call_run(conn, &call), -EMSGSIZE);
	net_call_fini(&call);
	free(buf);
	CU_ASSERT_EQUAL(ping(conn, 100, 3), 0); /* the connection is fine */
}

#define NR_FLIGHT 64

static void test_rpc_64_in_flight_one_conn_all_match(void)
{
	struct net_call calls[NR_FLIGHT];
	Weir__ObjIoReq reqs[NR_FLIGHT];
	uint8_t *out[NR_FLIGHT], *in[NR_FLIGHT];
	size_t len[NR_FLIGHT];
	struct iovec oiov[NR_FLIGHT], iiov[NR_FLIGHT];
	int started = 0;

	for (int i = 0; i < NR_FLIGHT; i++) {
		len[i] = 1000 + (size_t)i * 4099;
		out[i] = malloc(len[i]);
		in[i] = calloc(1, len[i]);
		CU_ASSERT_PTR_NOT_NULL_FATAL(out[i]);
		CU_ASSERT_PTR_NOT_NULL_FATAL(in[i]);
		iiov[i] = (struct iovec){ in[i], len[i] };
		if (i % 2 == 0) {
			/* echoed by the loop thread, in order */
			th_fill_pattern(out[i], len[i], 1000 + (uint64_t)i);
			oiov[i] = (struct iovec){ out[i], len[i] };
			net_call_init(&calls[i], WEIR__WIRE_OP__PING, NULL);
			calls[i].nc_req_bulk = &oiov[i];
			calls[i].nc_req_nr_bulk = 1;
		} else {
			/* answered by threads after varying delays: out of order */
			th_fill_pattern(out[i], len[i], 5000 + (uint64_t)i);
			objio_init(&reqs[i], 5000 + (uint64_t)i, len[i],
				   (uint32_t)((NR_FLIGHT - i) % 7) * 5);
			net_call_init(&calls[i], WEIR__WIRE_OP__OST_READ, &reqs[i].base);
		}
		calls[i].nc_rep_bulk = &iiov[i];
		calls[i].nc_rep_nr_bulk = 1;
	}
	for (int i = 0; i < NR_FLIGHT; i++)
		if (net_call_start(conn, &calls[i]) == 0)
			started++;
	CU_ASSERT_EQUAL(started, NR_FLIGHT);
	int ok = 0, ids_distinct = 1;
	for (int i = 0; i < NR_FLIGHT; i++) {
		int rc = net_call_wait(&calls[i]);
		if (rc == 0 && calls[i].nc_rep_bulk_len == len[i] && !memcmp(in[i], out[i], len[i]))
			ok++;
		else
			printf("\n  call %d: rc=%d bulk=%llu/%zu\n", i, rc,
			       (unsigned long long)calls[i].nc_rep_bulk_len, len[i]);
		if (i % 2) {
			Weir__ObjIoRep *rep =
				net_call_unpack(&calls[i], &weir__obj_io_rep__descriptor);
			CU_ASSERT_PTR_NOT_NULL(rep);
			if (rep) {
				CU_ASSERT_EQUAL(rep->obj_size, 5000 + (uint64_t)i);
				protobuf_c_message_free_unpacked(&rep->base, NULL);
			}
		}
		for (int j = 0; j < i; j++)
			if (calls[j].nc_reqid == calls[i].nc_reqid)
				ids_distinct = 0;
	}
	CU_ASSERT_EQUAL(ok, NR_FLIGHT);
	CU_ASSERT_TRUE(ids_distinct);
	for (int i = 0; i < NR_FLIGHT; i++) {
		net_call_fini(&calls[i]);
		free(out[i]);
		free(in[i]);
	}
}

struct pinger {
	pthread_t pi_thread;
	int pi_idx;
	int pi_bad;
};

static void *pinger_main(void *arg)
{
	struct pinger *p = arg;
	for (int i = 0; i < 50; i++)
		if (ping(conn, (size_t)(p->pi_idx * 997 + i * 131) % 70000, (uint64_t)p->pi_idx << 32 | (uint64_t)i))
			p->pi_bad++;
	return NULL;
}

static void test_rpc_threads_share_conn_all_echo(void)
{
	struct pinger p[8];
	for (int i = 0; i < 8; i++) {
		p[i].pi_idx = i;
		p[i].pi_bad = 0;
		CU_ASSERT_EQUAL_FATAL(pthread_create(&p[i].pi_thread, NULL, pinger_main, &p[i]), 0);
	}
	int bad = 0;
	for (int i = 0; i < 8; i++) {
		pthread_join(p[i].pi_thread, NULL);
		bad += p[i].pi_bad;
	}
	CU_ASSERT_EQUAL(bad, 0);
}

static void test_rpc_timeout_slow_handler_etimedout_then_ok(void)
{
	Weir__ObjIoReq req;
	objio_init(&req, 1500, 0, 0); /* the handler sleeps 1.5 s */
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__OST_FSYNC, &req.base);
	call.nc_timeout_ms = 200;
	uint64_t t0 = th_now_ms();
	CU_ASSERT_EQUAL(net_call_run(conn, &call), -ETIMEDOUT);
	uint64_t dt = th_now_ms() - t0;
	CU_ASSERT(dt >= 190 && dt < 1200);
	net_call_fini(&call);
	/* the late reply is discarded; the connection keeps working */
	CU_ASSERT_EQUAL(ping(conn, 4096, 17), 0);
	CU_ASSERT_EQUAL(ping(conn, 100000, 18), 0);
}

static void test_rpc_reply_bulk_over_buffer_eoverflow(void)
{
	Weir__ObjIoReq req;
	objio_init(&req, 77, 8192, 0);
	uint8_t want[8192], got[4096 + 8];
	th_fill_pattern(want, sizeof(want), 77);
	memset(got, 0xcc, sizeof(got));
	struct iovec iov = { got, 4096 };
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__OST_READ, &req.base);
	call.nc_rep_bulk = &iov;
	call.nc_rep_nr_bulk = 1;
	CU_ASSERT_EQUAL(net_call_run(conn, &call), -EOVERFLOW);
	CU_ASSERT_EQUAL(call.nc_rep_bulk_len, 4096);
	CU_ASSERT_EQUAL(memcmp(got, want, 4096), 0);
	CU_ASSERT_EQUAL(got[4096], 0xcc); /* not one byte past the buffer */
	net_call_fini(&call);
	/* no reply buffer at all */
	net_call_init(&call, WEIR__WIRE_OP__OST_READ, &req.base);
	CU_ASSERT_EQUAL(net_call_run(conn, &call), -EOVERFLOW);
	CU_ASSERT_EQUAL(call.nc_rep_bulk_len, 0);
	net_call_fini(&call);
	/* the excess was drained: the stream is still in step */
	CU_ASSERT_EQUAL(ping(conn, 5000, 19), 0);
}

static void test_rpc_remote_error_status_negative_errno(void)
{
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__OST_DESTROY, NULL);
	CU_ASSERT_EQUAL(net_call_run(conn, &call), -ENOENT);
	CU_ASSERT_EQUAL(call.nc_rc, -ENOENT);
	CU_ASSERT_EQUAL(call.nc_rep_body_len, 0);
	net_call_fini(&call);
	net_call_init(&call, 4242, NULL);
	CU_ASSERT_EQUAL(net_call_run(conn, &call), -EOPNOTSUPP);
	net_call_fini(&call);
	CU_ASSERT_EQUAL(ping(conn, 10, 20), 0);
}

static void test_rpc_connect_closed_port_econnrefused(void)
{
	/* a port that was just free: bind without listen, note it, close */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	CU_ASSERT_FATAL(fd >= 0);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CU_ASSERT_EQUAL_FATAL(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	socklen_t sl = sizeof(sa);
	getsockname(fd, (struct sockaddr *)&sa, &sl);
	char addr[32];
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", ntohs(sa.sin_port));
	close(fd);
	struct net_conn *c = NULL;
	CU_ASSERT_EQUAL(net_conn_open(addr, 2000, &c), -ECONNREFUSED);
	CU_ASSERT_EQUAL(net_conn_open("no-port", 2000, &c), -EINVAL);
	CU_ASSERT_EQUAL(net_conn_open("127.0.0.1:99999", 2000, &c), -EINVAL);
}

/* Signals sent to the connecting thread every 10 ms until told to stop. */
struct sig_pest {
	pthread_t sp_target;
	atomic_bool sp_stop;
	atomic_int sp_sent;
};

static void sig_noop(int sig)
{
	(void)sig;
}

static void *sig_pest_main(void *arg)
{
	struct sig_pest *sp = arg;
	while (!atomic_load(&sp->sp_stop)) {
		pthread_kill(sp->sp_target, SIGUSR1);
		atomic_fetch_add(&sp->sp_sent, 1);
		usleep(10000);
	}
	return NULL;
}

/*
 * A connect that takes long (the server's accept queue is full, so its SYNs
 * go unanswered) is not cut short by signals the application receives (its
 * timers, a profiler's): -ETIMEDOUT after the whole timeout, not -EINTR at
 * the first signal (seen with libFuzzer's SIGALRM in tests/fuzz/).
 */
static void test_rpc_connect_signals_do_not_cut_the_wait(void)
{
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CU_ASSERT_FATAL(lfd >= 0);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t sl = sizeof(sa);
	CU_ASSERT_FATAL(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CU_ASSERT_FATAL(listen(lfd, 0) == 0);
	getsockname(lfd, (struct sockaddr *)&sa, &sl);
	int fill[4];
	for (int i = 0; i < 4; i++) { /* fill the accept queue; later SYNs are dropped */
		fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		connect(fill[i], (struct sockaddr *)&sa, sizeof(sa));
	}
	th_sleep_ms(50);
	char addr[32];
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", ntohs(sa.sin_port));

	struct sigaction act = { .sa_handler = sig_noop }, old;
	sigemptyset(&act.sa_mask); /* no SA_RESTART: poll(2) is never restarted anyway */
	CU_ASSERT_FATAL(sigaction(SIGUSR1, &act, &old) == 0);
	struct sig_pest sp = { .sp_target = pthread_self() };
	pthread_t t;
	CU_ASSERT_FATAL(pthread_create(&t, NULL, sig_pest_main, &sp) == 0);
	struct net_conn *c = NULL;
	uint64_t t0 = weir_now_ns();
	int rc = net_conn_open(addr, 400, &c);
	uint64_t ms = (weir_now_ns() - t0) / 1000000;
	atomic_store(&sp.sp_stop, true);
	pthread_join(t, NULL);
	sigaction(SIGUSR1, &old, NULL);
	CU_ASSERT_EQUAL(rc, -ETIMEDOUT);
	CU_ASSERT(ms >= 390);
	CU_ASSERT(atomic_load(&sp.sp_sent) >= 10);
	if (!rc)
		net_conn_close(c);
	for (int i = 0; i < 4; i++)
		close(fill[i]);
	close(lfd);
}

static void test_rpc_close_with_call_in_flight_eshutdown(void)
{
	struct net_conn *c = NULL;
	CU_ASSERT_EQUAL_FATAL(net_conn_open(srv_addr, 2000, &c), 0);
	CU_ASSERT_STRING_EQUAL(net_conn_peer(c), srv_addr);
	Weir__ObjIoReq req;
	objio_init(&req, 1, 0, 300); /* thread replies after 300 ms */
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__OST_READ, &req.base);
	CU_ASSERT_EQUAL(net_call_start(c, &call), 0);
	net_conn_close(c);
	CU_ASSERT_EQUAL(net_call_wait(&call), -ESHUTDOWN);
	net_call_fini(&call);
	net_conn_close(NULL);
}




/*
 * 100 requests in one write, each answered 30 ms later from a thread: the
 * server reads them in one go, stops at 64 in flight (back-pressure) with
 * the rest in its receive buffer, and must come back to those when replies
 * drain although nothing new arrives on the socket. Every request is
 * answered, with its own id.
 */
static void test_rpc_buffered_requests_after_backpressure_all_answered(void)
{
	enum { NR = 100 };
	uint8_t *frames = malloc(NR * 128), body[64];
	CU_ASSERT_PTR_NOT_NULL_FATAL(frames);
	size_t len = 0;
	for (int i = 0; i < NR; i++) {
		Weir__ObjIoReq req;
		objio_init(&req, (uint64_t)i, 0, 30);
		size_t bl = protobuf_c_message_pack(&req.base, body);
		raw_hdr(frames + len, WEIR__WIRE_OP__OST_READ, 0, 1000 + (uint64_t)i, (uint32_t)bl, 0);
		memcpy(frames + len + WEIR_FRAME_HDR_SIZE, body, bl);
		len += WEIR_FRAME_HDR_SIZE + bl;
	}
	int fd = th_tcp_connect(srv_port);
	CU_ASSERT_FATAL(fd >= 0);
	struct timeval tv = { .tv_sec = 10 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	CU_ASSERT_EQUAL(weir_write_all(fd, frames, len), 0);
	uint8_t seen[NR] = { 0 };
	int got = 0;
	for (int i = 0; i < NR; i++) {
		uint8_t raw[WEIR_FRAME_HDR_SIZE], rest[256];
		struct weir_frame_hdr h;
		if (weir_read_all(fd, raw, sizeof(raw)) || weir_frame_decode(raw, &h, NULL) ||
		    h.fh_body_len + h.fh_bulk_len > sizeof(rest) ||
		    weir_read_all(fd, rest, h.fh_body_len + h.fh_bulk_len))
			break;
		if (h.fh_reqid >= 1000 && h.fh_reqid < 1000 + NR && !h.fh_status &&
		    !seen[h.fh_reqid - 1000]++)
			got++;
	}
	CU_ASSERT_EQUAL(got, NR);
	close(fd);
	free(frames);
	for (int i = 0; i < 300 && atomic_load(&srv_outstanding); i++)
		th_sleep_ms(10);
}


/* A server that answers one request with part of a reply, then stalls. */
struct staller {
	int st_lfd;
	size_t st_send;           /* bytes of the reply frame to send */
	uint32_t st_flags;        /* extra reply frame flags (WEIR_FRAME_F_XID) */
	uint32_t st_body_len;     /* reply body_len with st_flags; without: 100 */
	atomic_int st_over;       /* the stall ended */
	atomic_int st_stop;
	pthread_t st_thread;
};

static void *staller_main(void *arg)
{
	struct staller *st = arg;
	int fd = accept(st->st_lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	if (raw_answer_hello(fd)) {
		close(fd);
		return NULL;
	}
	uint8_t raw[WEIR_FRAME_HDR_SIZE], frame[WEIR_FRAME_HDR_SIZE + 100];
	struct weir_frame_hdr h;
	if (!weir_read_all(fd, raw, sizeof(raw)) && !weir_frame_decode(raw, &h, NULL)) {
		uint8_t skip[4096];
		if (h.fh_body_len + h.fh_bulk_len <= sizeof(skip))
			weir_read_all(fd, skip, h.fh_body_len + h.fh_bulk_len);
		raw_hdr(frame, h.fh_opcode, WEIR_FRAME_F_REPLY | st->st_flags, h.fh_reqid,
			st->st_flags ? st->st_body_len : 100, 0);
		memset(frame + WEIR_FRAME_HDR_SIZE, 0, 100);
		weir_write_all(fd, frame, st->st_send);
		for (int i = 0; i < 500 && !atomic_load(&st->st_stop); i++)
			th_sleep_ms(10); /* stall 5 s */
	}
	atomic_store(&st->st_over, 1);
	close(fd);
	return NULL;
}

/*
 * A call to a hand-made server that answers with the first \a send bytes of
 * a reply frame flagged \a flags with a zero body of \a body_len bytes
 * (with no \a flags: 100), then stalls. \return the call's rc; -998 if it returned only
 * because the server gave up.
 */
static int stalled_call_frame(size_t send, uint32_t flags, uint32_t body_len)
{
	struct staller st = { .st_lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0),
			      .st_send = send, .st_flags = flags, .st_body_len = body_len };
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	if (st.st_lfd < 0 || bind(st.st_lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(st.st_lfd, 1) || getsockname(st.st_lfd, (struct sockaddr *)&sa, &sl))
		return -999;
	char addr[32];
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", ntohs(sa.sin_port));
	if (pthread_create(&st.st_thread, NULL, staller_main, &st))
		return -999;
	struct net_conn *c = NULL;
	int rc = net_conn_open(addr, 2000, &c);
	if (!rc) {
		struct net_call call;
		net_call_init(&call, WEIR__WIRE_OP__PING, NULL);
		call.nc_timeout_ms = 300;
		rc = net_call_run(c, &call);
		net_call_fini(&call);
		if (atomic_load(&st.st_over))
			rc = -998; /* returned only because the server gave up */
	}
	atomic_store(&st.st_stop, 1);
	pthread_join(st.st_thread, NULL);
	net_conn_close(c);
	close(st.st_lfd);
	return rc;
}

static int stalled_call(size_t send)
{
	return stalled_call_frame(send, 0, 0);
}

/*
 * A lone caller reads its own reply: a server that sends part of a header or
 * of a body and then stalls must not hold it past its deadline (plus the
 * grace a frame once begun gets): the call fails while the server still
 * stalls, and the connection is dropped.
 */
static void test_rpc_reply_stalled_mid_frame_caller_returns(void)
{
	int rc = stalled_call(10); /* 10 bytes of the header */
	CU_ASSERT(rc == -ECONNRESET || rc == -ETIMEDOUT);
	rc = stalled_call(WEIR_FRAME_HDR_SIZE + 30); /* the header and 30 of 100 body bytes */
	CU_ASSERT(rc == -ECONNRESET || rc == -ETIMEDOUT);
}


/*
 * A client that does not read its replies stalls only itself: a 16 MiB echo
 * nobody reads does not hold the server loop, so calls of other connections
 * (two, so one shares that loop: connections are dealt round-robin over the
 * two loops) are answered within their timeout.
 */
static void test_rpc_unread_big_reply_does_not_block_other_clients(void)
{
	const size_t big = 16u << 20;
	uint8_t *frame = malloc(WEIR_FRAME_HDR_SIZE + big);
	CU_ASSERT_PTR_NOT_NULL_FATAL(frame);
	raw_hdr(frame, WEIR__WIRE_OP__PING, 0, 1, 0, big);
	memset(frame + WEIR_FRAME_HDR_SIZE, 0x5a, big);
	int fd = th_tcp_connect(srv_port);
	CU_ASSERT_FATAL(fd >= 0);
	struct net_conn *b[2] = { NULL, NULL };
	CU_ASSERT_EQUAL_FATAL(net_conn_open(srv_addr, 2000, &b[0]), 0);
	CU_ASSERT_EQUAL_FATAL(net_conn_open(srv_addr, 2000, &b[1]), 0);
	CU_ASSERT_EQUAL(weir_write_all(fd, frame, WEIR_FRAME_HDR_SIZE + big), 0);
	th_sleep_ms(100); /* the echo has filled the socket by now */
	for (int i = 0; i < 2; i++) {
		uint8_t out[100] = { 1 }, in[100];
		struct iovec oi = { out, sizeof(out) }, ii = { in, sizeof(in) };
		struct net_call call;
		net_call_init(&call, WEIR__WIRE_OP__PING, NULL);
		call.nc_req_bulk = &oi;
		call.nc_req_nr_bulk = 1;
		call.nc_rep_bulk = &ii;
		call.nc_rep_nr_bulk = 1;
		call.nc_timeout_ms = 5000;
		CU_ASSERT_EQUAL(net_call_run(b[i], &call), 0);
		net_call_fini(&call);
		net_conn_close(b[i]);
	}
	close(fd);
	free(frame);
}


/*
 * A client that sends requests and exits without reading the replies (a
 * process posting its closes, then exiting): the server handles every
 * request it received, although its replies can no longer be sent.
 */
static void test_rpc_client_gone_requests_still_handled(void)
{
	enum { NR = 50 };
	uint8_t frames[NR * WEIR_FRAME_HDR_SIZE];
	for (int i = 0; i < NR; i++)
		raw_hdr(frames + i * WEIR_FRAME_HDR_SIZE, WEIR__WIRE_OP__PING, 0,
			7000 + (uint64_t)i, 0, 0);
	int before = atomic_load(&srv_pings);
	for (int round = 0; round < 3; round++) {
		int fd = th_tcp_connect(srv_port);
		CU_ASSERT_FATAL(fd >= 0);
		CU_ASSERT_EQUAL(weir_write_all(fd, frames, sizeof(frames)), 0);
		close(fd);
		int want = before + (round + 1) * NR;
		for (int i = 0; i < 500 && atomic_load(&srv_pings) < want; i++)
			th_sleep_ms(10);
		CU_ASSERT_EQUAL(atomic_load(&srv_pings), want);
	}
}

/* ------------------------------------------------------------ one-way calls */

/* A one-way PING with \a len bytes of pattern \a seed. */
static int oneway_ping(struct net_conn *c, size_t len, uint64_t seed)
{
	uint8_t *out = malloc(len + 1);
	if (!out)
		return -ENOMEM;
	th_fill_pattern(out, len, seed);
	struct iovec oi = { out, len };
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__PING, NULL);
	call.nc_req_bulk = &oi;
	call.nc_req_nr_bulk = len ? 1 : 0;
	int rc = net_call_send_oneway(c, &call);
	memset(out, 0xee, len); /* the request bulk is reusable at once */
	net_call_fini(&call);
	free(out);
	return rc;
}

/* Wait up to 5 s for srv_pings to reach \a want; \return its value then. */
static int wait_pings(int want)
{
	for (int i = 0; i < 500 && atomic_load(&srv_pings) < want; i++)
		th_sleep_ms(10);
	return atomic_load(&srv_pings);
}

/*
 * One-way calls are handled in order before the connection's next call, and
 * nothing answers them: the next call's reply is its own, also when a
 * one-way request fails on the server.
 */
static void test_rpc_oneway_handled_in_order_no_reply(void)
{
	int before = atomic_load(&srv_pings);
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(oneway_ping(conn, 3000 * (size_t)i, 60 + (uint64_t)i), 0);
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__OST_DESTROY, NULL); /* fails: -ENOENT */
	CU_ASSERT_EQUAL(net_call_send_oneway(conn, &call), 0);
	net_call_fini(&call);
	/* one loop serves the connection, in order: the three are handled
	 * before this PING, whose reply is the next (and only) frame */
	CU_ASSERT_EQUAL(ping(conn, 5000, 64), 0);
	CU_ASSERT_EQUAL(atomic_load(&srv_pings), before + 4);
	CU_ASSERT_EQUAL(ping(conn, 10, 65), 0);

	/* on the wire: a NOREPLY frame gets no reply frame, the next one does */
	int fd = th_tcp_connect(srv_port);
	CU_ASSERT_FATAL(fd >= 0);
	uint8_t frames[3 * WEIR_FRAME_HDR_SIZE];
	raw_hdr(frames, WEIR__WIRE_OP__PING, WEIR_FRAME_F_NOREPLY, 1, 0, 0);
	raw_hdr(frames + WEIR_FRAME_HDR_SIZE, WEIR__WIRE_OP__OST_DESTROY, WEIR_FRAME_F_NOREPLY,
		2, 0, 0);
	raw_hdr(frames + 2 * WEIR_FRAME_HDR_SIZE, WEIR__WIRE_OP__PING, 0, 3, 0, 0);
	CU_ASSERT_EQUAL(weir_write_all(fd, frames, sizeof(frames)), 0);
	uint8_t rep[WEIR_FRAME_HDR_SIZE];
	CU_ASSERT_EQUAL_FATAL(weir_read_all(fd, rep, sizeof(rep)), 0);
	struct weir_frame_hdr h;
	CU_ASSERT_EQUAL(weir_frame_decode(rep, &h, NULL), 0);
	CU_ASSERT_EQUAL(h.fh_reqid, 3);
	CU_ASSERT_EQUAL(h.fh_status, 0);
	close(fd);
}

/*
 * A one-way call with nothing sent after it reaches the server, and one sent
 * just before the connection is closed is not lost.
 */
static void test_rpc_oneway_alone_or_before_close_arrives(void)
{
	struct net_conn *c = NULL;
	CU_ASSERT_EQUAL_FATAL(net_conn_open(srv_addr, 2000, &c), 0);
	CU_ASSERT_EQUAL(ping(c, 10, 70), 0); /* connected, idle */
	int before = atomic_load(&srv_pings);
	CU_ASSERT_EQUAL(oneway_ping(c, 100, 71), 0);
	CU_ASSERT_EQUAL(wait_pings(before + 1), before + 1);
	CU_ASSERT_EQUAL(oneway_ping(c, 100, 72), 0);
	CU_ASSERT_EQUAL(oneway_ping(c, 70000, 73), 0);
	net_conn_close(c);
	CU_ASSERT_EQUAL(wait_pings(before + 3), before + 3);
}

/* ------------------------------------------------------------ leader/followers */

struct slow_reader {
	pthread_t sr_thread;
	int sr_rc;
	int sr_bad;
};

/* One call answered after 800 ms: its waiter holds the receive side meanwhile. */
static void *slow_reader_main(void *arg)
{
	struct slow_reader *sr = arg;
	const size_t len = 70000;
	uint8_t *in = calloc(1, len), *want = malloc(len);
	if (!in || !want) {
		sr->sr_rc = -ENOMEM;
		free(in);
		free(want);
		return NULL;
	}
	th_fill_pattern(want, len, 4242);
	Weir__ObjIoReq req;
	objio_init(&req, 4242, len, 800);
	struct iovec iov = { in, len };
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__OST_READ, &req.base);
	call.nc_rep_bulk = &iov;
	call.nc_rep_nr_bulk = 1;
	sr->sr_rc = net_call_run(conn, &call);
	sr->sr_bad = call.nc_rep_bulk_len != len || memcmp(in, want, len);
	net_call_fini(&call);
	free(in);
	free(want);
	return NULL;
}

/*
 * While one thread waits for a slow reply (and so reads the connection),
 * other threads' calls on the same connection complete with their own bytes,
 * and a call whose deadline passes times out on its own thread.
 */
static void test_rpc_waiters_while_another_reads_complete_and_time_out(void)
{
	struct slow_reader sr = { 0 };
	CU_ASSERT_EQUAL_FATAL(pthread_create(&sr.sr_thread, NULL, slow_reader_main, &sr), 0);
	th_sleep_ms(50); /* let it take the receive side (not required for correctness) */
	int bad = 0;
	for (int i = 0; i < 20; i++)
		if (ping(conn, (size_t)(i * 3001) % 50000, 900 + (uint64_t)i))
			bad++;
	CU_ASSERT_EQUAL(bad, 0);
	Weir__ObjIoReq req;
	objio_init(&req, 1, 0, 1500); /* answered after 1.5 s */
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__OST_READ, &req.base);
	call.nc_timeout_ms = 200;
	CU_ASSERT_EQUAL(net_call_run(conn, &call), -ETIMEDOUT);
	net_call_fini(&call);
	pthread_join(sr.sr_thread, NULL);
	CU_ASSERT_EQUAL(sr.sr_rc, 0);
	CU_ASSERT_EQUAL(sr.sr_bad, 0);
	CU_ASSERT_EQUAL(ping(conn, 4096, 77), 0);
}

/* A call answered after 2 s, on a connection of its own (\a bg: a background call). */
struct parked {
	struct net_conn *pk_conn;
	bool pk_bg;
	int pk_rc;
	pthread_t pk_thread;
};

static void *parked_main(void *arg)
{
	struct parked *pk = arg;
	Weir__ObjIoReq req;
	objio_init(&req, 7, 0, 2000);
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__OST_READ, &req.base);
	call.nc_background = pk->pk_bg;
	pk->pk_rc = net_call_run(pk->pk_conn, &call);
	net_call_fini(&call);
	return NULL;
}

/* 20 pings while a call of \a bg kind is parked: \return the replies handed over meanwhile. */
static long long pings_beside_parked(bool bg)
{
	struct parked pk = { .pk_bg = bg };
	if (net_conn_open(srv_addr, 2000, &pk.pk_conn))
		return -1;
	int before = atomic_load(&srv_outstanding);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&pk.pk_thread, NULL, parked_main, &pk), 0);
	/* the server has it: its waiter takes the receive side (a background
	 * one: nothing else is pending) */
	for (int i = 0; i < 500 && atomic_load(&srv_outstanding) == before; i++)
		th_sleep_ms(10);
	th_sleep_ms(20);
	uint64_t h0 = net_conn_handoffs(pk.pk_conn);
	int bad = 0;
	for (int i = 0; i < 20; i++)
		if (ping(pk.pk_conn, 100, 300 + (uint64_t)i))
			bad++;
	uint64_t h1 = net_conn_handoffs(pk.pk_conn);
	pthread_join(pk.pk_thread, NULL);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(pk.pk_rc, 0);
	CU_ASSERT_EQUAL(ping(pk.pk_conn, 10, 1), 0);
	net_conn_close(pk.pk_conn);
	return (long long)(h1 - h0);
}

/*
 * A parked foreground call's waiter reads the connection, so it reads the
 * pings' replies too and hands each over; a parked background call (a lease
 * poll) leaves the receive side to the pings, which read their own; both
 * parked calls complete.
 */
static void test_rpc_background_call_leaves_replies_to_their_waiters(void)
{
	long long fg = pings_beside_parked(false);
	long long bg = pings_beside_parked(true);
	printf("\n    handed over during 20 pings: beside a foreground call %lld, a background"
	       " one %lld\n", fg, bg);
	CU_ASSERT(fg >= 5); /* (all 20 unless the machine is slow) */
	CU_ASSERT_EQUAL(bg, 0);
}

/* A server that answers one PING per connection, then closes it; twice. */
struct one_shot_srv {
	int os_lfd;
	atomic_int os_closed; /* connections answered and closed */
	pthread_t os_thread;
};

static void *one_shot_main(void *arg)
{
	struct one_shot_srv *os = arg;
	for (int n = 0; n < 2; n++) {
		int fd = accept(os->os_lfd, NULL, NULL);
		if (fd < 0)
			return NULL;
		if (raw_answer_hello(fd)) {
			close(fd);
			return NULL;
		}
		uint8_t raw[WEIR_FRAME_HDR_SIZE];
		struct weir_frame_hdr h;
		if (weir_read_all(fd, raw, sizeof(raw)) || weir_frame_decode(raw, &h, NULL) ||
		    h.fh_body_len || h.fh_bulk_len > 4096) {
			close(fd);
			return NULL;
		}
		uint8_t frame[WEIR_FRAME_HDR_SIZE + 4096];
		if (weir_read_all(fd, frame + WEIR_FRAME_HDR_SIZE, (size_t)h.fh_bulk_len)) {
			close(fd);
			return NULL;
		}
		raw_hdr(frame, h.fh_opcode, WEIR_FRAME_F_REPLY, h.fh_reqid, 0, h.fh_bulk_len);
		weir_write_all(fd, frame, WEIR_FRAME_HDR_SIZE + (size_t)h.fh_bulk_len);
		close(fd);
		atomic_fetch_add(&os->os_closed, 1);
	}
	return NULL;
}

/*
 * A connection the server closed while no call was pending (an idle timeout,
 * a restart) is reconnected before the next call is sent: the caller sees no
 * error. (With nobody reading an idle connection, the close is noticed when
 * the next call starts.)
 */
static void test_rpc_peer_closes_idle_conn_next_call_reconnects(void)
{
	struct one_shot_srv os = { .os_lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0) };
	CU_ASSERT_FATAL(os.os_lfd >= 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	CU_ASSERT_EQUAL_FATAL(bind(os.os_lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CU_ASSERT_EQUAL_FATAL(listen(os.os_lfd, 4), 0);
	getsockname(os.os_lfd, (struct sockaddr *)&sa, &sl);
	char addr[32];
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", ntohs(sa.sin_port));
	CU_ASSERT_EQUAL_FATAL(pthread_create(&os.os_thread, NULL, one_shot_main, &os), 0);
	struct net_conn *c = NULL;
	CU_ASSERT_EQUAL_FATAL(net_conn_open(addr, 2000, &c), 0);
	CU_ASSERT_EQUAL(ping(c, 100, 1), 0);
	for (int i = 0; i < 500 && atomic_load(&os.os_closed) < 1; i++)
		th_sleep_ms(10);
	CU_ASSERT_EQUAL(atomic_load(&os.os_closed), 1);
	th_sleep_ms(100); /* the FIN reaches the client socket (at once on loopback) */
	int rc = ping(c, 200, 2);
	CU_ASSERT_EQUAL(rc, 0);
	if (rc)
		shutdown(os.os_lfd, SHUT_RDWR); /* the server thread waits in accept() */
	pthread_join(os.os_thread, NULL);
	CU_ASSERT_EQUAL(atomic_load(&os.os_closed), 2);
	net_conn_close(c);
	close(os.os_lfd);
}

/* ------------------------------------------------------------ garbage */

static void raw_hdr(uint8_t raw[WEIR_FRAME_HDR_SIZE], uint16_t op, uint32_t flags,
		    uint64_t reqid, uint32_t body_len, uint64_t bulk_len)
{
	struct weir_frame_hdr h = { 0 };
	h.fh_opcode = op;
	h.fh_flags = flags;
	h.fh_reqid = reqid;
	h.fh_body_len = body_len;
	h.fh_bulk_len = bulk_len;
	weir_frame_encode(&h, raw);
}

/* Send \a len bytes on a new socket; \return 1 if the server then closed it. */
static int send_expect_close(const void *buf, size_t len)
{
	int fd = th_tcp_connect(srv_port);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(weir_write_all(fd, buf, len), 0);
	int closed = th_tcp_wait_closed(fd, 5000);
	close(fd);
	return closed;
}

static void test_rpc_garbage_closes_socket_server_keeps_serving(void)
{
	uint8_t buf[8192];
	uint8_t raw[WEIR_FRAME_HDR_SIZE];

	/* random bytes */
	th_fill_pattern(buf, sizeof(buf), 1234);
	CU_ASSERT_EQUAL(send_expect_close(buf, sizeof(buf)), 1);
	CU_ASSERT_EQUAL(ping(conn, 1000, 21), 0);

	/* a valid header announcing a 4 GiB body */
	raw_hdr(raw, WEIR__WIRE_OP__PING, 0, 1, 0xffffffffU, 0);
	CU_ASSERT_EQUAL(send_expect_close(raw, sizeof(raw)), 1);
	CU_ASSERT_EQUAL(ping(conn, 1000, 22), 0);

	/* bulk over the limit */
	raw_hdr(raw, WEIR__WIRE_OP__PING, 0, 1, 0, WEIR_FRAME_MAX_BULK + 1);
	CU_ASSERT_EQUAL(send_expect_close(raw, sizeof(raw)), 1);

	/* bad checksum */
	raw_hdr(raw, WEIR__WIRE_OP__PING, 0, 1, 0, 0);
	raw[20] ^= 1;
	CU_ASSERT_EQUAL(send_expect_close(raw, sizeof(raw)), 1);

	/* a reply frame sent to a server */
	raw_hdr(raw, WEIR__WIRE_OP__PING, WEIR_FRAME_F_REPLY, 1, 0, 0);
	CU_ASSERT_EQUAL(send_expect_close(raw, sizeof(raw)), 1);
	CU_ASSERT_EQUAL(ping(conn, 1000, 23), 0);

	/* a truncated frame, then our close */
	raw_hdr(raw, WEIR__WIRE_OP__PING, 0, 1, 0, 100);
	int fd = th_tcp_connect(srv_port);
	CU_ASSERT_FATAL(fd >= 0);
	memcpy(buf, raw, sizeof(raw));
	CU_ASSERT_EQUAL(weir_write_all(fd, buf, sizeof(raw) + 10), 0);
	close(fd);
	/* half a header, then close */
	fd = th_tcp_connect(srv_port);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(weir_write_all(fd, raw, 20), 0);
	close(fd);
	/* many connections that say nothing */
	for (int i = 0; i < 100; i++) {
		fd = th_tcp_connect(srv_port);
		CU_ASSERT(fd >= 0);
		if (fd >= 0)
			close(fd);
	}
	th_sleep_ms(50);
	CU_ASSERT_EQUAL(ping(conn, 1000, 24), 0);
	CU_ASSERT_EQUAL(ping(conn, 2 << 20, 25), 0);
}

static void test_rpc_malformed_body_gets_eproto_reply(void)
{
	int fd = th_tcp_connect(srv_port);
	CU_ASSERT_FATAL(fd >= 0);
	/* field 1 as a varint tag with its value missing: not a valid ObjIoReq */
	static const uint8_t bodies[][12] = {
		{ 0x08 },
		{ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 },
	};
	static const uint32_t body_lens[] = { 1, 12 };
	for (int k = 0; k < 2; k++) {
		uint8_t frame[WEIR_FRAME_HDR_SIZE + 12];
		raw_hdr(frame, WEIR__WIRE_OP__OST_WRITE, 0, 4242 + (uint64_t)k, body_lens[k], 0);
		memcpy(frame + WEIR_FRAME_HDR_SIZE, bodies[k], body_lens[k]);
		CU_ASSERT_EQUAL(weir_write_all(fd, frame, WEIR_FRAME_HDR_SIZE + body_lens[k]), 0);
		uint8_t rep[WEIR_FRAME_HDR_SIZE];
		CU_ASSERT_EQUAL_FATAL(weir_read_all(fd, rep, sizeof(rep)), 0);
		struct weir_frame_hdr h;
		CU_ASSERT_EQUAL(weir_frame_decode(rep, &h, NULL), 0);
		CU_ASSERT_EQUAL(h.fh_flags, WEIR_FRAME_F_REPLY);
		CU_ASSERT_EQUAL(h.fh_reqid, 4242 + (uint64_t)k);
		CU_ASSERT_EQUAL(h.fh_opcode, WEIR__WIRE_OP__OST_WRITE);
		CU_ASSERT_EQUAL(h.fh_status, WEIR__WIRE_STATUS__WS_EPROTO);
		CU_ASSERT_EQUAL(h.fh_body_len, 0);
		CU_ASSERT_EQUAL(h.fh_bulk_len, 0);
	}
	/* the same raw socket still works for a valid PING */
	uint8_t frame[WEIR_FRAME_HDR_SIZE + 3];
	raw_hdr(frame, WEIR__WIRE_OP__PING, 0, 7, 0, 3);
	memcpy(frame + WEIR_FRAME_HDR_SIZE, "abc", 3);
	CU_ASSERT_EQUAL(weir_write_all(fd, frame, sizeof(frame)), 0);
	uint8_t rep[WEIR_FRAME_HDR_SIZE + 3];
	CU_ASSERT_EQUAL_FATAL(weir_read_all(fd, rep, sizeof(rep)), 0);
	struct weir_frame_hdr h;
	CU_ASSERT_EQUAL(weir_frame_decode(rep, &h, NULL), 0);
	CU_ASSERT_EQUAL(h.fh_status, 0);
	CU_ASSERT_EQUAL(h.fh_reqid, 7);
	CU_ASSERT_EQUAL(h.fh_bulk_len, 3);
	CU_ASSERT_EQUAL(memcmp(rep + WEIR_FRAME_HDR_SIZE, "abc", 3), 0);
	close(fd);
}

/*
 * A reply the server flags with the reply prefix (rq_rep_txn, rq_rep_prepare
 * on the replying thread) reaches the caller as nc_transno and
 * nc_last_committed, with the body after it intact; an error reply carries
 * it too; a reply without it leaves nc_rep_txn false.
 */
static void test_rpc_reply_prefix_round_trips(void)
{
	static const uint16_t ops[] = { WEIR__WIRE_OP__MDS_GETATTR, WEIR__WIRE_OP__MDS_LOOKUP };
	for (int k = 0; k < 2; k++) {
		Weir__ObjIoReq req;
		objio_init(&req, 0x1122334455667788ULL + (uint64_t)k, 0x0102030405060708ULL, 0);
		struct net_call call;
		net_call_init(&call, ops[k], &req.base);
		int rc = net_call_run(conn, &call);
		CU_ASSERT_EQUAL(rc, k ? -ENOENT : 0);
		CU_ASSERT(call.nc_rep_txn);
		CU_ASSERT_EQUAL(call.nc_transno, 0x1122334455667788ULL + (uint64_t)k);
		CU_ASSERT_EQUAL(call.nc_last_committed, 0x0102030405060708ULL);
		if (!k) {
			Weir__ObjIoRep *rep = net_call_unpack(&call, &weir__obj_io_rep__descriptor);
			CU_ASSERT_FATAL(rep != NULL);
			CU_ASSERT_EQUAL(rep->len, 99);
			protobuf_c_message_free_unpacked(&rep->base, NULL);
		} else {
			CU_ASSERT_EQUAL(call.nc_rep_body_len, 0);
		}
		net_call_fini(&call);
	}
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__OST_DESTROY, NULL);
	CU_ASSERT_EQUAL(net_call_run(conn, &call), -ENOENT);
	CU_ASSERT(!call.nc_rep_txn);
	CU_ASSERT_EQUAL(call.nc_transno, 0);
	net_call_fini(&call);
	CU_ASSERT_EQUAL(ping(conn, 100, 5), 0); /* the connection is as good as before */
}

/*
 * A reply flagged WEIR_FRAME_F_XID whose body is shorter than the reply
 * prefix (8 of 16 bytes, or none) fails its call with -EPROTO; the frame
 * itself was whole, so the call returns at once, not at its timeout.
 */
static void test_rpc_reply_prefix_truncated_eproto(void)
{
	CU_ASSERT_EQUAL(stalled_call_frame(WEIR_FRAME_HDR_SIZE + 8, WEIR_FRAME_F_XID, 8), -EPROTO);
	CU_ASSERT_EQUAL(stalled_call_frame(WEIR_FRAME_HDR_SIZE, WEIR_FRAME_F_XID, 0), -EPROTO);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_rpc_ping_bulk_in_out_bytes_equal),
		TH_TEST(test_rpc_background_call_leaves_replies_to_their_waiters),
		TH_TEST(test_rpc_reply_body_unpacks),
		TH_TEST(test_rpc_bulk_limit_ok_over_limit_emsgsize),
		TH_TEST(test_rpc_64_in_flight_one_conn_all_match),
		TH_TEST(test_rpc_threads_share_conn_all_echo),
		TH_TEST(test_rpc_timeout_slow_handler_etimedout_then_ok),
		TH_TEST(test_rpc_reply_bulk_over_buffer_eoverflow),
		TH_TEST(test_rpc_remote_error_status_negative_errno),
		TH_TEST(test_rpc_connect_closed_port_econnrefused),
		TH_TEST(test_rpc_connect_signals_do_not_cut_the_wait),
		TH_TEST(test_rpc_close_with_call_in_flight_eshutdown),
		TH_TEST(test_rpc_waiters_while_another_reads_complete_and_time_out),
		TH_TEST(test_rpc_peer_closes_idle_conn_next_call_reconnects),
		TH_TEST(test_rpc_oneway_handled_in_order_no_reply),
		TH_TEST(test_rpc_oneway_alone_or_before_close_arrives),
		TH_TEST(test_rpc_buffered_requests_after_backpressure_all_answered),
		TH_TEST(test_rpc_reply_stalled_mid_frame_caller_returns),
		TH_TEST(test_rpc_unread_big_reply_does_not_block_other_clients),
		TH_TEST(test_rpc_client_gone_requests_still_handled),
		TH_TEST(test_rpc_garbage_closes_socket_server_keeps_serving),
		TH_TEST(test_rpc_malformed_body_gets_eproto_reply),
		TH_TEST(test_rpc_reply_prefix_round_trips),
		TH_TEST(test_rpc_reply_prefix_truncated_eproto),
		TH_TEST_END,
	};
	return th_cunit_run("rpc", suite_init, suite_clean, tests);
}
