/*
 * net/auth.c - the cluster-key handshake, both sides (see auth.h).
 *
 * DESIGN
 * The client side runs inside net_conn's connect (rpc.c): blocking, on the
 * connecting thread, straight over the transport, before the connection is
 * handed to callers. The server side runs on the loop thread that read the
 * frame (server.c hands every frame of a connection that has not finished
 * the handshake to net_auth_srv_frame()); it keeps its state in the
 * connection (struct net_auth_srv) and never blocks.
 *
 * The key file is read again when it changes (its mtime, size or inode),
 * looked at no more than once a second and only when a handshake needs a
 * key, so a server picks up a rotated key file without a restart. A file
 * that cannot be read leaves the last good keys in place (logged).
 *
 * Failures are logged on the server with WEIR_LOG_RL (rate-limited), so a
 * peer hammering the port cannot fill the disk.
 */
#define _GNU_SOURCE
#include "auth.h"
#include "auth_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "frame.h"
#include "weir.pb-c.h"

#define AUTH_VERSION 1
#define AUTH_RELOAD_NS 1000000000ULL /* look at the key file at most once a second */
#define AUTH_REQID_HELLO 0xfffffffffffffff0ULL
#define AUTH_REQID_PROOF 0xfffffffffffffff1ULL

static const char TAG_SERVER[] = "weir-auth-v1 server";
static const char TAG_CLIENT[] = "weir-auth-v1 client";

struct net_auth {
	bool na_insecure;
	char na_path[4096];
	pthread_mutex_t na_lock;   /* guards what follows */
	struct weir_keyring na_kr;
	struct timespec na_mtime;
	off_t na_size;
	ino_t na_ino;
	uint64_t na_checked_ns;    /* CLOCK_MONOTONIC of the last look at the file */
};

/*
 * The keys this process last read from a file, by path: a process that read
 * the key file and then gave up the right to read it (a daemon dropping
 * privileges; a program under the LD_PRELOAD shim, which reads the key at
 * start, that then switches to another user) still connects with them.
 */
static pthread_mutex_t auth_memo_lock = PTHREAD_MUTEX_INITIALIZER;
static char auth_memo_path[4096];
static struct weir_keyring auth_memo_kr;

static struct net_auth *auth_default;
static pthread_mutex_t auth_default_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread char auth_last_err[192];
static char auth_name[64];

static void set_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void set_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(auth_last_err, sizeof(auth_last_err), fmt, ap);
	va_end(ap);
}

const char *net_auth_last_error(void)
{
	return auth_last_err;
}

void net_auth_set_name(const char *name)
{
	snprintf(auth_name, sizeof(auth_name), "%s", name ? name : "");
}

void net_auth_set_default(struct net_auth *a)
{
	pthread_mutex_lock(&auth_default_lock);
	auth_default = a;
	pthread_mutex_unlock(&auth_default_lock);
}

struct net_auth *net_auth_get_default(void)
{
	pthread_mutex_lock(&auth_default_lock);
	struct net_auth *a = auth_default;
	pthread_mutex_unlock(&auth_default_lock);
	return a;
}

bool net_auth_insecure(const struct net_auth *a)
{
	return !a || a->na_insecure;
}

const char *net_auth_key_file(const struct net_auth *a)
{
	return a && !a->na_insecure ? a->na_path : "";
}

int net_auth_new(const char *key_file, bool insecure, struct net_auth **out, char *why,
		 size_t why_len)
{
	struct net_auth *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	pthread_mutex_init(&a->na_lock, NULL);
	a->na_insecure = insecure;
	if (!insecure) {
		struct stat st;
		snprintf(a->na_path, sizeof(a->na_path), "%s",
			 key_file ? key_file : WEIR_KEY_FILE_DEFAULT);
		int rc = weir_keyring_load(a->na_path, &a->na_kr, why, why_len);
		if (!rc && stat(a->na_path, &st))
			rc = -errno;
		pthread_mutex_lock(&auth_memo_lock);
		if (!rc) {
			snprintf(auth_memo_path, sizeof(auth_memo_path), "%s", a->na_path);
			auth_memo_kr = a->na_kr;
		} else if (rc == -EACCES && auth_memo_kr.kr_nr &&
			   !strcmp(auth_memo_path, a->na_path)) {
			a->na_kr = auth_memo_kr; /* read before this process lost access */
			memset(&st, 0, sizeof(st));
			rc = 0;
		}
		pthread_mutex_unlock(&auth_memo_lock);
		if (rc) {
			net_auth_free(a);
			return rc;
		}
		a->na_mtime = st.st_mtim;
		a->na_size = st.st_size;
		a->na_ino = st.st_ino;
		a->na_checked_ns = weir_now_ns();
	}
	*out = a;
	return 0;
}

int net_auth_setup(const char *prog, const char *key_file, bool insecure, struct net_auth **out)
{
	char why[512] = "";
	const char *path = key_file && key_file[0] ? key_file : WEIR_KEY_FILE_DEFAULT;
	int rc = net_auth_new(path, insecure, out, why, sizeof(why));
	if (rc) {
		fprintf(stderr, "%s: no usable cluster key: %s\n", prog, why);
		if (rc == -ENOENT)
			fprintf(stderr,
				"  make one with: weir key gen %s\n"
				"  and copy it (mode 0600) to every server and client of the cluster;\n"
				"  or, on a trusted network only, run without authentication: --insecure\n",
				path);
		return rc;
	}
	if (insecure)
		WEIR_LOG_WARN("running --insecure: no cluster key; every peer that reaches this"
			      " process's ports is trusted");
	else
		WEIR_LOG_NOTICE("key_file=%s: %u keys (current: %s)", path, (*out)->na_kr.kr_nr,
				(*out)->na_kr.kr_keys[0].wk_name);
	net_auth_set_default(*out);
	return 0;
}

void net_auth_free(struct net_auth *a)
{
	if (!a)
		return;
	weir_keyring_wipe(&a->na_kr);
	pthread_mutex_destroy(&a->na_lock);
	free(a);
}

/* Copy the current keys into \a kr, reading the file again if it changed. */
static void auth_keys(struct net_auth *a, struct weir_keyring *kr)
{
	pthread_mutex_lock(&a->na_lock);
	uint64_t now = weir_now_ns();
	if (now - a->na_checked_ns >= AUTH_RELOAD_NS) {
		struct stat st;
		a->na_checked_ns = now;
		if (!stat(a->na_path, &st) &&
		    (st.st_mtim.tv_sec != a->na_mtime.tv_sec ||
		     st.st_mtim.tv_nsec != a->na_mtime.tv_nsec || st.st_size != a->na_size ||
		     st.st_ino != a->na_ino)) {
			struct weir_keyring nk;
			char why[256];
			int rc = weir_keyring_load(a->na_path, &nk, why, sizeof(why));
			if (rc) {
				WEIR_LOG_WARN_RL("key_file=%s rc=%d: cannot read the changed key file (%s);"
						 " keeping the %u keys loaded before",
						 a->na_path, rc, why, a->na_kr.kr_nr);
			} else {
				weir_keyring_wipe(&a->na_kr);
				a->na_kr = nk;
				weir_keyring_wipe(&nk);
				a->na_mtime = st.st_mtim;
				a->na_size = st.st_size;
				a->na_ino = st.st_ino;
				WEIR_LOG_NOTICE("key_file=%s: reloaded, %u keys (current: %s)",
						a->na_path, a->na_kr.kr_nr, a->na_kr.kr_keys[0].wk_name);
			}
		}
	}
	*kr = a->na_kr;
	pthread_mutex_unlock(&a->na_lock);
}

static void auth_proof(const uint8_t *key, const char *tag, size_t tag_len, const uint8_t *key_id,
		       const uint8_t *nc, const uint8_t *ns, uint8_t out[WEIR_HMAC_LEN])
{
	struct iovec iov[4] = {
		{ (void *)tag, tag_len },
		{ (void *)key_id, WEIR_KEY_ID_LEN },
		{ (void *)nc, NET_AUTH_NONCE_LEN },
		{ (void *)ns, NET_AUTH_NONCE_LEN },
	};
	weir_hmac_sha256(key, WEIR_KEY_LEN, iov, 4, out);
}

/* ---------------------------------------------------------------- client side */

/* Send one handshake frame. */
static int cli_send(const struct net_xport_ops *ops, struct net_xport *x, uint16_t op,
		    uint64_t reqid, const ProtobufCMessage *m)
{
	uint8_t raw[WEIR_FRAME_HDR_SIZE], body[512];
	size_t len = protobuf_c_message_get_packed_size(m);
	if (len > sizeof(body))
		return -EMSGSIZE;
	protobuf_c_message_pack(m, body);
	struct weir_frame_hdr h = {
		.fh_magic = WEIR_FRAME_MAGIC,
		.fh_version = WEIR_FRAME_VERSION,
		.fh_opcode = op,
		.fh_reqid = reqid,
		.fh_body_len = (uint32_t)len,
	};
	weir_frame_encode(&h, raw);
	struct iovec iov[2] = { { raw, sizeof(raw) }, { body, len } };
	return ops->xo_sendv(x, iov, len ? 2 : 1);
}

/* Receive one handshake reply: its status in *status, its body in body/len. */
static int cli_recv(const struct net_xport_ops *ops, struct net_xport *x, uint64_t reqid,
		    uint64_t deadline_ns, int *status, uint8_t *body, size_t *len)
{
	uint8_t raw[WEIR_FRAME_HDR_SIZE];
	struct iovec iov = { raw, sizeof(raw) };
	int rc = ops->xo_recvv(x, &iov, 1, deadline_ns);
	if (rc)
		return rc;
	struct weir_frame_hdr h;
	const char *why;
	rc = weir_frame_decode(raw, &h, &why);
	if (rc || h.fh_flags != WEIR_FRAME_F_REPLY || h.fh_reqid != reqid || h.fh_bulk_len ||
	    h.fh_body_len > *len)
		return -EPROTO;
	iov.iov_base = body;
	iov.iov_len = h.fh_body_len;
	if (h.fh_body_len && (rc = ops->xo_recvv(x, &iov, 1, deadline_ns)))
		return rc;
	*len = h.fh_body_len;
	*status = weir_status_to_errno(h.fh_status);
	return 0;
}

int net_auth_client(struct net_auth *a, const struct net_xport_ops *ops, struct net_xport *x,
		    const char *peer, uint32_t timeout_ms)
{
	struct weir_keyring kr = { 0 };
	uint8_t nc[NET_AUTH_NONCE_LEN], body[512];
	size_t len = sizeof(body);
	int status = 0, rc;
	char name[80];

	auth_last_err[0] = '\0';
	if (!a)
		a = net_auth_get_default();
	bool keyed = a && !a->na_insecure;
	if (keyed)
		auth_keys(a, &kr);
	if (weir_random_bytes(nc, sizeof(nc)))
		return -EIO;
	if (auth_name[0])
		snprintf(name, sizeof(name), "%s", auth_name);
	else
		snprintf(name, sizeof(name), "%s:%d", program_invocation_short_name, (int)getpid());

	Weir__AuthHello hello = WEIR__AUTH_HELLO__INIT;
	hello.version = AUTH_VERSION;
	hello.nonce.data = nc;
	hello.nonce.len = sizeof(nc);
	if (keyed) {
		hello.key_id.data = kr.kr_keys[0].wk_id;
		hello.key_id.len = WEIR_KEY_ID_LEN;
	}
	hello.name = name;
	uint64_t deadline = weir_now_ns() + (uint64_t)(timeout_ms ? timeout_ms : 5000) * 1000000ULL;
	rc = cli_send(ops, x, WEIR__WIRE_OP__AUTH_HELLO, AUTH_REQID_HELLO, &hello.base);
	if (!rc)
		rc = cli_recv(ops, x, AUTH_REQID_HELLO, deadline, &status, body, &len);
	if (rc) {
		set_err("%s: the handshake failed (%s): is this a Weir server of the same version?",
			peer, rc == -EPROTO ? "a malformed answer" : strerror(-rc));
		goto out;
	}
	if (status == -EACCES) {
		set_err("%s: authentication failed: %s", peer,
			keyed ? "the cluster key differs"
			      : "the server requires a cluster key and this client has none"
				" (--insecure)");
		rc = -EACCES;
		goto out;
	}
	if (status) {
		set_err("%s: the server refused the handshake (%s)", peer, strerror(-status));
		rc = status;
		goto out;
	}
	Weir__AuthHelloRep *rep = weir__auth_hello_rep__unpack(NULL, len, body);
	if (!rep || (!rep->insecure && (rep->proof.len != WEIR_HMAC_LEN ||
					rep->nonce.len != NET_AUTH_NONCE_LEN))) {
		if (rep)
			weir__auth_hello_rep__free_unpacked(rep, NULL);
		set_err("%s: the handshake failed (a malformed answer)", peer);
		rc = -EPROTO;
		goto out;
	}
	if (rep->insecure) {
		weir__auth_hello_rep__free_unpacked(rep, NULL);
		if (keyed) {
			set_err("%s: authentication failed: the server runs --insecure and cannot prove"
				" it holds the cluster key (give it the key, or run this client"
				" --insecure too)",
				peer);
			rc = -EACCES;
		}
		goto out; /* keyless client, keyless server: nothing to prove */
	}
	if (!keyed) {
		weir__auth_hello_rep__free_unpacked(rep, NULL);
		set_err("%s: authentication failed: the server requires a cluster key and this client"
			" has none (--insecure)",
			peer);
		rc = -EACCES;
		goto out;
	}
	const struct weir_key *k = &kr.kr_keys[0];
	uint8_t ns[NET_AUTH_NONCE_LEN], want[WEIR_HMAC_LEN];
	memcpy(ns, rep->nonce.data, sizeof(ns));
	auth_proof(k->wk_key, TAG_SERVER, sizeof(TAG_SERVER) - 1, k->wk_id, nc, ns, want);
	bool ok = weir_mem_equal_ct(want, rep->proof.data, WEIR_HMAC_LEN);
	weir__auth_hello_rep__free_unpacked(rep, NULL);
	if (!ok) {
		set_err("%s: authentication failed: the server could not prove it holds the cluster"
			" key",
			peer);
		rc = -EACCES;
		goto out;
	}
	uint8_t mine[WEIR_HMAC_LEN];
	auth_proof(k->wk_key, TAG_CLIENT, sizeof(TAG_CLIENT) - 1, k->wk_id, nc, ns, mine);
	Weir__AuthProof pr = WEIR__AUTH_PROOF__INIT;
	pr.proof.data = mine;
	pr.proof.len = sizeof(mine);
	len = sizeof(body);
	rc = cli_send(ops, x, WEIR__WIRE_OP__AUTH_PROOF, AUTH_REQID_PROOF, &pr.base);
	if (!rc)
		rc = cli_recv(ops, x, AUTH_REQID_PROOF, deadline, &status, body, &len);
	if (rc) {
		set_err("%s: the handshake failed (%s)", peer, strerror(-rc));
		goto out;
	}
	if (status) {
		set_err("%s: authentication failed: the server refused this client's proof (%s)",
			peer, strerror(-status));
		rc = status;
	}
out:
	weir_keyring_wipe(&kr);
	if (rc && rc != -EACCES && rc != -EPROTO && rc != -ETIMEDOUT && rc != -ENOMEM &&
	    rc != -EIO)
		rc = -ECONNRESET; /* the transport broke mid-handshake */
	if (rc)
		WEIR_LOG_WARN("peer=%s rc=%d: %s", peer, rc, auth_last_err);
	return rc;
}

/* ---------------------------------------------------------------- server side */

int net_auth_srv_frame(struct net_auth *a, struct net_auth_srv *st, uint16_t op,
		       const uint8_t *body, size_t len, const char *peer,
		       struct net_auth_srv_reply *out)
{
	memset(out, 0, sizeof(*out));
	out->ar_close = true; /* unless the step succeeds */
	bool secure = a && !a->na_insecure;

	if (st->as_state == NET_AUTH_WANT_HELLO && op == WEIR__WIRE_OP__AUTH_HELLO) {
		Weir__AuthHello *h = weir__auth_hello__unpack(NULL, len, body);
		if (!h || h->nonce.len != NET_AUTH_NONCE_LEN ||
		    (h->key_id.len && h->key_id.len != WEIR_KEY_ID_LEN)) {
			WEIR_LOG_WARN_RL("peer=%s: authentication failed: a malformed hello", peer);
			if (h)
				weir__auth_hello__free_unpacked(h, NULL);
			return -EPROTO;
		}
		snprintf(st->as_peer_name, sizeof(st->as_peer_name), "%s", h->name ? h->name : "");
		memcpy(st->as_nc, h->nonce.data, NET_AUTH_NONCE_LEN);
		bool has_key = h->key_id.len == WEIR_KEY_ID_LEN;
		uint8_t id[WEIR_KEY_ID_LEN] = { 0 };
		if (has_key)
			memcpy(id, h->key_id.data, WEIR_KEY_ID_LEN);
		weir__auth_hello__free_unpacked(h, NULL);
		if (weir_random_bytes(st->as_ns, NET_AUTH_NONCE_LEN))
			return -EIO;
		memcpy(out->ar_nonce, st->as_ns, NET_AUTH_NONCE_LEN);
		if (!secure) {
			out->ar_insecure = true;
			st->as_state = NET_AUTH_DONE;
			out->ar_close = false;
			return 0;
		}
		if (!has_key) {
			WEIR_LOG_WARN_RL("peer=%s name=%s: authentication failed: the peer has no"
					 " cluster key (it runs --insecure) (-EACCES)",
					 peer, st->as_peer_name);
			return -EACCES;
		}
		struct weir_keyring kr;
		auth_keys(a, &kr);
		const struct weir_key *k = weir_keyring_find(&kr, id);
		if (!k) {
			char hex[2 * WEIR_KEY_ID_LEN + 1];
			WEIR_LOG_WARN_RL("peer=%s name=%s key_id=%s: authentication failed: the cluster"
					 " key differs (-EACCES)",
					 peer, st->as_peer_name, weir_key_id_hex(id, hex));
			weir_keyring_wipe(&kr);
			return -EACCES;
		}
		memcpy(st->as_key, k->wk_key, WEIR_KEY_LEN);
		memcpy(st->as_key_id, k->wk_id, WEIR_KEY_ID_LEN);
		snprintf(st->as_key_name, sizeof(st->as_key_name), "%s", k->wk_name);
		weir_keyring_wipe(&kr);
		auth_proof(st->as_key, TAG_SERVER, sizeof(TAG_SERVER) - 1, st->as_key_id, st->as_nc,
			   st->as_ns, out->ar_proof);
		st->as_state = NET_AUTH_WANT_PROOF;
		out->ar_close = false;
		return 0;
	}
	if (st->as_state == NET_AUTH_WANT_PROOF && op == WEIR__WIRE_OP__AUTH_PROOF) {
		Weir__AuthProof *p = weir__auth_proof__unpack(NULL, len, body);
		uint8_t want[WEIR_HMAC_LEN];
		auth_proof(st->as_key, TAG_CLIENT, sizeof(TAG_CLIENT) - 1, st->as_key_id, st->as_nc,
			   st->as_ns, want);
		bool ok = p && p->proof.len == WEIR_HMAC_LEN &&
			  weir_mem_equal_ct(want, p->proof.data, WEIR_HMAC_LEN);
		if (p)
			weir__auth_proof__free_unpacked(p, NULL);
		if (!ok) {
			WEIR_LOG_WARN_RL("peer=%s name=%s key=%s: authentication failed: a wrong proof"
					 " (a replayed or forged handshake) (-EACCES)",
					 peer, st->as_peer_name, st->as_key_name);
			return -EACCES;
		}
		st->as_state = NET_AUTH_DONE;
		out->ar_close = false;
		WEIR_LOG_DEBUG("peer=%s name=%s key=%s: authenticated", peer, st->as_peer_name,
			       st->as_key_name);
		return 0;
	}
	if (st->as_state == NET_AUTH_WANT_HELLO && !secure) {
		/* a keyless server also serves peers that skip the handshake */
		st->as_state = NET_AUTH_DONE;
		out->ar_close = false;
		out->ar_pass = true;
		return 0;
	}
	WEIR_LOG_WARN_RL("peer=%s op=%u: authentication failed: a request before the handshake"
			 " finished (-EACCES)",
			 peer, op);
	return -EACCES;
}

bool net_auth_srv_secure(const struct net_auth *a)
{
	return a && !a->na_insecure;
}
