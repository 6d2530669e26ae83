/*
 * tests/unit/net/test_auth.c - the cluster key file (common/key.c) and the
 * connection handshake (net/auth.c) over real loopback TCP: in-process
 * net_servers with keys, clients with the same, another or no key, raw
 * sockets that replay or forge handshakes, key rotation through the file,
 * and the rate limit on the server's log lines.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "common/key.h"
#include "common/log.h"
#include "common/util.h"
#include "harness.h"
#include "th_auth.h"
#include "net/auth.h"
#include "net/net.h"
#include "weir.pb-c.h"

static char dir[64];          /* a temporary directory for key files */
static char key_a[128], key_b[128], key_ab[128], key_none[128];
static char log_path[128];

static void srv_handle(struct net_req *rq)
{
	net_req_reply(rq, 0, NULL, NULL, 0); /* every request: an empty OK */
}

struct srv {
	struct net_server *s_srv;
	struct net_auth *s_auth;
	char s_addr[32];
};

static int srv_start(struct srv *s, const char *key_file, bool insecure)
{
	static const struct net_server_ops ops = { .so_handle = srv_handle };
	memset(s, 0, sizeof(*s));
	int rc = net_auth_new(key_file, insecure, &s->s_auth, NULL, 0);
	if (rc)
		return rc;
	struct net_server_conf conf = {
		.sc_listen = "127.0.0.1:0",
		.sc_name = "auth",
		.sc_nr_loops = 1,
		.sc_max_inflight = 16,
		.sc_auth = s->s_auth,
	};
	rc = net_server_start(&conf, &ops, &s->s_srv);
	if (rc) {
		net_auth_free(s->s_auth);
		return rc;
	}
	snprintf(s->s_addr, sizeof(s->s_addr), "127.0.0.1:%u", net_server_port(s->s_srv));
	return 0;
}

static void srv_stop(struct srv *s)
{
	net_server_stop(s->s_srv);
	net_auth_free(s->s_auth);
}

/* Connect with \a key_file (NULL with insecure) and PING. \return 0 or -errno. */
static int try_conn(const char *addr, const char *key_file, bool insecure)
{
	struct net_auth *a;
	int rc = net_auth_new(key_file, insecure, &a, NULL, 0);
	if (rc)
		return -999;
	struct net_conn *c = NULL;
	rc = net_conn_open_auth(addr, 2000, a, &c);
	if (!rc) {
		struct net_call call;
		net_call_init(&call, WEIR__WIRE_OP__PING, NULL);
		rc = net_call_run(c, &call);
		net_call_fini(&call);
	}
	net_conn_close(c);
	net_auth_free(a);
	return rc;
}

static int write_keys(const char *path, const struct weir_key *k, unsigned n)
{
	struct weir_keyring kr = { .kr_nr = n };
	for (unsigned i = 0; i < n; i++)
		kr.kr_keys[i] = k[i];
	return weir_keyring_save(path, &kr, false);
}

static struct weir_key ka, kb;

static int suite_init(void)
{
	snprintf(dir, sizeof(dir), "/tmp/weir-auth-test-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(key_a, sizeof(key_a), "%s/a.key", dir);
	snprintf(key_b, sizeof(key_b), "%s/b.key", dir);
	snprintf(key_ab, sizeof(key_ab), "%s/ab.key", dir);
	snprintf(key_none, sizeof(key_none), "%s/missing.key", dir);
	snprintf(log_path, sizeof(log_path), "%s/server.log", dir);
	struct weir_key both[2];
	if (weir_key_generate("alpha", &ka) || weir_key_generate("beta", &kb))
		return -1;
	both[0] = kb;
	both[1] = ka;
	if (write_keys(key_a, &ka, 1) || write_keys(key_b, &kb, 1) || write_keys(key_ab, both, 2))
		return -1;
	return 0;
}

static int suite_clean(void)
{
	th_rm_rf(dir);
	return 0;
}

/* ------------------------------------------------------------ the key file */

static void test_key_file_roundtrip_and_ids(void)
{
	struct weir_keyring kr;
	char why[256];
	CU_ASSERT_EQUAL_FATAL(weir_keyring_load(key_ab, &kr, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(kr.kr_nr, 2);
	CU_ASSERT_STRING_EQUAL(kr.kr_keys[0].wk_name, "beta");
	CU_ASSERT_EQUAL(memcmp(kr.kr_keys[0].wk_key, kb.wk_key, WEIR_KEY_LEN), 0);
	CU_ASSERT_EQUAL(memcmp(kr.kr_keys[1].wk_key, ka.wk_key, WEIR_KEY_LEN), 0);
	CU_ASSERT_PTR_EQUAL(weir_keyring_find(&kr, ka.wk_id), &kr.kr_keys[1]);
	CU_ASSERT_NOT_EQUAL(memcmp(ka.wk_id, kb.wk_id, WEIR_KEY_ID_LEN), 0);
	struct stat st;
	CU_ASSERT_EQUAL(stat(key_ab, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 0777, 0600);
	/* a new file refuses to clobber an existing one */
	struct weir_keyring one = { .kr_nr = 1, .kr_keys = { ka } };
	CU_ASSERT_EQUAL(weir_keyring_save(key_a, &one, true), -EEXIST);
}

static void test_key_file_bad_mode_content_missing(void)
{
	struct weir_keyring kr;
	char why[256], p[160];
	snprintf(p, sizeof(p), "%s/open.key", dir);
	CU_ASSERT_EQUAL_FATAL(write_keys(p, &ka, 1), 0);
	chmod(p, 0644);
	CU_ASSERT_EQUAL(weir_keyring_load(p, &kr, why, sizeof(why)), -EPERM);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "chmod 600"));
	chmod(p, 0660);
	CU_ASSERT_EQUAL(weir_keyring_load(p, &kr, why, sizeof(why)), -EPERM);
	chmod(p, 0640); /* a group of client users may read it */
	CU_ASSERT_EQUAL(weir_keyring_load(p, &kr, why, sizeof(why)), 0);
	static const char *bad[] = {
		"weir-key-v1 x 00\n",                                   /* short key */
		"weir-key-v2 x 0000000000000000000000000000000000000000000000000000000000000000\n",
		"weir-key-v1 b@d 0000000000000000000000000000000000000000000000000000000000000000\n",
		"# only a comment\n",
		"weir-key-v1 x 000000000000000000000000000000000000000000000000000000000000000g\n",
		"weir-key-v1 x 0000000000000000000000000000000000000000000000000000000000000000\n"
		"weir-key-v1 x 1111111111111111111111111111111111111111111111111111111111111111\n",
	};
	for (size_t i = 0; i < WEIR_ARRAY_SIZE(bad); i++) {
		int fd = open(p, O_WRONLY | O_TRUNC);
		CU_ASSERT_FATAL(fd >= 0);
		fchmod(fd, 0600);
		CU_ASSERT_EQUAL(write(fd, bad[i], strlen(bad[i])), (ssize_t)strlen(bad[i]));
		close(fd);
		CU_ASSERT_EQUAL(weir_keyring_load(p, &kr, why, sizeof(why)), -EINVAL);
	}
	CU_ASSERT_EQUAL(weir_keyring_load(key_none, &kr, why, sizeof(why)), -ENOENT);
}

/* ------------------------------------------------------------ the handshake */

static void test_auth_same_key_serves_other_key_refused(void)
{
	struct srv s;
	CU_ASSERT_EQUAL_FATAL(srv_start(&s, key_a, false), 0);
	CU_ASSERT_EQUAL(try_conn(s.s_addr, key_a, false), 0);
	CU_ASSERT_EQUAL(try_conn(s.s_addr, key_b, false), -EACCES);
	CU_ASSERT_PTR_NOT_NULL(strstr(net_auth_last_error(), "the cluster key differs"));
	CU_ASSERT_PTR_NOT_NULL(strstr(net_auth_last_error(), s.s_addr));
	CU_ASSERT_EQUAL(try_conn(s.s_addr, NULL, true), -EACCES);
	CU_ASSERT_PTR_NOT_NULL(strstr(net_auth_last_error(), "has none"));
	/* a client holding both keys connects with its first one (beta): refused */
	CU_ASSERT_EQUAL(try_conn(s.s_addr, key_ab, false), -EACCES);
	srv_stop(&s);
}

static void test_auth_insecure_server_refused_by_keyed_client(void)
{
	struct srv s;
	CU_ASSERT_EQUAL_FATAL(srv_start(&s, NULL, true), 0);
	CU_ASSERT_EQUAL(try_conn(s.s_addr, key_a, false), -EACCES);
	CU_ASSERT_PTR_NOT_NULL(strstr(net_auth_last_error(), "--insecure"));
	CU_ASSERT_EQUAL(try_conn(s.s_addr, NULL, true), 0);
	srv_stop(&s);
}

/* Rotation: the server accepts both keys of its file, then only the new one. */
static void test_auth_rotation_old_key_until_retired(void)
{
	char p[160];
	struct weir_key both[2] = { kb, ka };
	snprintf(p, sizeof(p), "%s/rot.key", dir);
	CU_ASSERT_EQUAL_FATAL(write_keys(p, &ka, 1), 0);
	struct srv s;
	CU_ASSERT_EQUAL_FATAL(srv_start(&s, p, false), 0);
	CU_ASSERT_EQUAL(try_conn(s.s_addr, key_a, false), 0);
	CU_ASSERT_EQUAL(try_conn(s.s_addr, key_b, false), -EACCES);
	th_sleep_ms(1100); /* the file is looked at no more than once a second */
	CU_ASSERT_EQUAL_FATAL(write_keys(p, both, 2), 0); /* rotate: beta first, alpha kept */
	CU_ASSERT_EQUAL(try_conn(s.s_addr, key_b, false), 0);
	CU_ASSERT_EQUAL(try_conn(s.s_addr, key_a, false), 0);
	th_sleep_ms(1100);
	CU_ASSERT_EQUAL_FATAL(write_keys(p, &kb, 1), 0); /* retire alpha */
	CU_ASSERT_EQUAL(try_conn(s.s_addr, key_b, false), 0);
	CU_ASSERT_EQUAL(try_conn(s.s_addr, key_a, false), -EACCES);
	srv_stop(&s);
}

/* ------------------------------------------------------------ raw peers */

/* Whether the server closed \a fd (EOF within 2 s). */
static bool raw_closed(int fd)
{
	uint8_t b;
	struct timeval tv = { 2, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return read(fd, &b, 1) == 0;
}

/* Send one frame with body \a m (NULL: empty). */
static int raw_send(int fd, uint16_t op, const ProtobufCMessage *m)
{
	uint8_t raw[WEIR_FRAME_HDR_SIZE], body[512];
	size_t len = m ? protobuf_c_message_pack(m, body) : 0;
	struct weir_frame_hdr h = { .fh_opcode = op, .fh_reqid = 7, .fh_body_len = (uint32_t)len };
	weir_frame_encode(&h, raw);
	if (weir_write_all(fd, raw, sizeof(raw)) || (len && weir_write_all(fd, body, len)))
		return -1;
	return 0;
}

/* Read a reply: its status; its body into \a body (\a len in/out). */
static int raw_recv(int fd, int *status, uint8_t *body, size_t *len)
{
	uint8_t raw[WEIR_FRAME_HDR_SIZE];
	struct weir_frame_hdr h;
	if (weir_read_all(fd, raw, sizeof(raw)) || weir_frame_decode(raw, &h, NULL) ||
	    h.fh_body_len > *len || weir_read_all(fd, body, h.fh_body_len))
		return -1;
	*len = h.fh_body_len;
	*status = weir_status_to_errno(h.fh_status);
	return 0;
}

/* A raw handshake with key alpha (tests/lib/th_auth.c); a refusal must close the socket. */
static int raw_handshake(uint16_t port, const uint8_t *nc, const uint8_t *replay, uint8_t *sent)
{
	int fd = th_tcp_connect(port);
	if (fd < 0)
		return -1000;
	int rc = th_auth_raw(fd, &ka, nc, replay, sent);
	if (rc == -EACCES)
		CU_ASSERT(raw_closed(fd));
	close(fd);
	return rc;
}

/* A recorded client proof is useless on a new connection: the server's nonce changed. */
static void test_auth_replayed_proof_refused(void)
{
	struct srv s;
	CU_ASSERT_EQUAL_FATAL(srv_start(&s, key_a, false), 0);
	uint16_t port = net_server_port(s.s_srv);
	uint8_t nc[32], recorded[32];
	memset(nc, 0x5a, sizeof(nc));
	CU_ASSERT_EQUAL(raw_handshake(port, nc, NULL, recorded), 0);
	CU_ASSERT_EQUAL(raw_handshake(port, nc, recorded, NULL), -EACCES);
	srv_stop(&s);
}

/* A request before the handshake: -EACCES and the connection closed. A big frame: closed. */
static void test_auth_request_before_handshake_refused(void)
{
	struct srv s;
	CU_ASSERT_EQUAL_FATAL(srv_start(&s, key_a, false), 0);
	uint16_t port = net_server_port(s.s_srv);
	int fd = th_tcp_connect(port), status = 0;
	uint8_t body[64];
	size_t len = sizeof(body);
	CU_ASSERT_EQUAL(raw_send(fd, WEIR__WIRE_OP__PING, NULL), 0);
	CU_ASSERT_EQUAL(raw_recv(fd, &status, body, &len), 0);
	CU_ASSERT_EQUAL(status, -EACCES);
	CU_ASSERT(raw_closed(fd));
	close(fd);
	/* 1 MiB announced before the handshake: closed without a reply */
	fd = th_tcp_connect(port);
	uint8_t raw[WEIR_FRAME_HDR_SIZE];
	struct weir_frame_hdr h = { .fh_opcode = WEIR__WIRE_OP__AUTH_HELLO, .fh_reqid = 1,
				    .fh_body_len = 1 << 20 };
	weir_frame_encode(&h, raw);
	CU_ASSERT_EQUAL(weir_write_all(fd, raw, sizeof(raw)), 0);
	CU_ASSERT(raw_closed(fd));
	close(fd);
	/* a silent peer is closed 10 s after its connect (it cannot hold sockets) */
	uint64_t t0 = th_now_ms();
	fd = th_tcp_connect(port);
	CU_ASSERT_EQUAL(th_tcp_wait_closed(fd, 15000), 1);
	uint64_t waited = th_now_ms() - t0;
	CU_ASSERT(waited >= 9000 && waited <= 14000);
	close(fd);
	/* and a keyed client still gets in */
	CU_ASSERT_EQUAL(try_conn(s.s_addr, key_a, false), 0);
	srv_stop(&s);
}

/*
 * Every kind of refused handshake, many times, while an authenticated
 * connection stays open: the server frees each refused connection once and
 * keeps serving (the refusal used to free the connection under the loop
 * that was still reading it: a use-after-free on every refused handshake,
 * which `make SAN=1` reports here; found by tests/fuzz/fuzz_net_server.c).
 */
static void test_auth_refused_connections_freed_once(void)
{
	struct srv s;
	int old = weir_log_level_cur;
	weir_log_set_level(WEIR_LOG_LVL_ERROR); /* 160 refusals */
	CU_ASSERT_EQUAL_FATAL(srv_start(&s, key_a, false), 0);
	uint16_t port = net_server_port(s.s_srv);
	struct net_auth *a;
	CU_ASSERT_EQUAL_FATAL(net_auth_new(key_a, false, &a, NULL, 0), 0);
	struct net_conn *good;
	CU_ASSERT_EQUAL_FATAL(net_conn_open_auth(s.s_addr, 2000, a, &good), 0);
	uint8_t nc[32], recorded[32], body[64];
	memset(nc, 0x3c, sizeof(nc));
	CU_ASSERT_EQUAL(raw_handshake(port, nc, NULL, recorded), 0);
	for (int i = 0; i < 40; i++) {
		CU_ASSERT_EQUAL(try_conn(s.s_addr, key_b, false), -EACCES); /* another key */
		CU_ASSERT_EQUAL(try_conn(s.s_addr, NULL, true), -EACCES);   /* no key */
		CU_ASSERT_EQUAL(raw_handshake(port, nc, recorded, NULL), -EACCES); /* replay */
		int fd = th_tcp_connect(port), status = 0;
		size_t len = sizeof(body);
		CU_ASSERT_EQUAL(raw_send(fd, WEIR__WIRE_OP__PING, NULL), 0); /* request first */
		CU_ASSERT_EQUAL(raw_recv(fd, &status, body, &len), 0);
		CU_ASSERT_EQUAL(status, -EACCES);
		CU_ASSERT(raw_closed(fd));
		close(fd);
	}
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__PING, NULL);
	CU_ASSERT_EQUAL(net_call_run(good, &call), 0);
	net_call_fini(&call);
	net_conn_close(good);
	net_auth_free(a);
	CU_ASSERT_EQUAL(try_conn(s.s_addr, key_a, false), 0);
	srv_stop(&s);
	weir_log_set_level(old);
}

/* 300 failed handshakes make at most a burst of log lines, and a count of the rest. */
static void test_auth_failures_logged_rate_limited(void)
{
	struct srv s;
	CU_ASSERT_EQUAL_FATAL(weir_log_open(log_path), 0);
	int old = weir_log_level_cur;
	weir_log_set_level(WEIR_LOG_LVL_NOTICE);
	CU_ASSERT_EQUAL_FATAL(srv_start(&s, key_a, false), 0);
	for (int i = 0; i < 300; i++)
		CU_ASSERT_EQUAL(try_conn(s.s_addr, key_b, false), -EACCES);
	srv_stop(&s);
	weir_log_rl_flush_all(); /* nothing: the interval has not ended */
	th_sleep_ms(WEIR_LOG_RL_INTERVAL_S * 1000 + 100);
	weir_log_rl_flush_all(); /* now the count of suppressed lines */
	weir_log_open("stderr");
	weir_log_set_level(old);
	static char text[1 << 20];
	int fd = open(log_path, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0);
	ssize_t got = read(fd, text, sizeof(text) - 1);
	close(fd);
	CU_ASSERT_FATAL(got > 0 && got < (ssize_t)sizeof(text) - 1);
	text[got] = '\0';
	int server_lines = 0, suppressed = 0;
	for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n")) {
		if (strstr(l, "auth.c") && strstr(l, "the cluster key differs (-EACCES)") &&
		    strstr(l, "key_id="))
			server_lines++;
		const char *q = strstr(l, " similar lines suppressed");
		if (q && strstr(l, "auth.c")) {
			const char *d = q;
			while (d > l && d[-1] >= '0' && d[-1] <= '9')
				d--;
			suppressed += atoi(d);
		}
	}
	CU_ASSERT(server_lines >= 1 && server_lines <= WEIR_LOG_RL_BURST);
	CU_ASSERT_EQUAL(server_lines + suppressed, 300);
	if (server_lines + suppressed != 300)
		fprintf(stderr, "server lines %d, suppressed %d\n", server_lines, suppressed);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_key_file_roundtrip_and_ids),
		TH_TEST(test_key_file_bad_mode_content_missing),
		TH_TEST(test_auth_same_key_serves_other_key_refused),
		TH_TEST(test_auth_insecure_server_refused_by_keyed_client),
		TH_TEST(test_auth_rotation_old_key_until_retired),
		TH_TEST(test_auth_replayed_proof_refused),
		TH_TEST(test_auth_request_before_handshake_refused),
		TH_TEST(test_auth_failures_logged_rate_limited),
		/* after the rate limit's count, which its refusals would disturb */
		TH_TEST(test_auth_refused_connections_freed_once),
		TH_TEST_END,
	};
	return th_cunit_run("auth", suite_init, suite_clean, tests);
}
