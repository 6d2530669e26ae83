/*
 * tests/fuzz/fuzz_auth.c - libFuzzer harness: the authentication handshake,
 * server side (net/auth.c: net_auth_srv_frame(), the state machine every
 * server runs on a connection's first frames), and the key file parser
 * (common/key.c: weir_keyring_load()).
 *
 * DESIGN. A keyed net_auth (two keys: the current one and the previous one,
 * as during a rotation) and a keyless one (--insecure), made at start. The
 * handshake mode plays connections: the input's records (the format of
 * fuzz.h: opcode, body; bulk ignored) go one by one to
 * net_auth_srv_frame() on a connection's state, as net/server.c hands them
 * over, and a new connection starts after a refusal and after the
 * handshake is done. It checks the properties the security of the cluster
 * rests on:
 *   - a keyed server never lets a frame through unauthenticated (ar_pass),
 *     never says it is insecure, and reaches "done" only right after an
 *     AUTH_PROOF that holds the right proof for the hello's nonces, which
 *     only the harness can make (option bit 2 below): anything else is an
 *     authentication bypass;
 *   - the server's own proof in the hello reply is the HMAC of the key the
 *     client named, and the key name it records is that key's;
 *   - every refusal closes, every success keeps the connection, and the
 *     status is 0, -EACCES, -EPROTO or -EIO.
 * The key file mode writes the input as a key file (mode 0600) and loads
 * it: a file that loads has 1..WEIR_KEYRING_MAX keys with valid, distinct
 * names and ids derived from their bytes, and saves and loads back the same.
 * Input: byte 0 options:
 *   bit 0  key file mode: the rest is the file;
 *   bit 1  the keyless server (else the keyed one);
 *   bit 2  mend proofs: an AUTH_PROOF sent while the server waits for one
 *          carries the right proof (the fuzzer cannot compute HMACs);
 *   bit 3  mend hellos: an AUTH_HELLO that unpacks names the current key
 *          (bit 4 set: the previous one);
 * then records. Seeds: tests/fuzz/gen_corpus.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/key.h"
#include "fuzz.h"
#include "net/auth.h"
#include "net/auth_int.h"
#include "weir.pb-c.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                               \
	do {                                                                                   \
		if (!(c)) {                                                                    \
			fprintf(stderr, "fuzz_auth: %s:%d: check failed: %s\n", __FILE__,    \
				__LINE__, #c);                                                 \
			abort();                                                               \
		}                                                                              \
	} while (0)

static struct net_auth *fz_keyed, *fz_open;
static struct weir_keyring fz_kr; /* [0] current, [1] previous */
static char fz_keyfile[400], fz_trial[400], fz_trial2[400];
static bool fz_trace_on; /* $FUZZ_TRACE: print each step */

static void auth_fini(void)
{
	net_auth_free(fz_keyed);
	net_auth_free(fz_open);
	fz_keyed = fz_open = NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	char why[256] = "";
	const char *dir = fz_scratch("auth");
	snprintf(fz_keyfile, sizeof(fz_keyfile), "%s/cluster.key", dir);
	snprintf(fz_trial, sizeof(fz_trial), "%s/trial.key", dir);
	snprintf(fz_trial2, sizeof(fz_trial2), "%s/trial2.key", dir);
	fz_kr.kr_nr = 2;
	if (weir_key_generate("current", &fz_kr.kr_keys[0]) ||
	    weir_key_generate("previous", &fz_kr.kr_keys[1]) ||
	    weir_keyring_save(fz_keyfile, &fz_kr, true) ||
	    net_auth_new(fz_keyfile, false, &fz_keyed, why, sizeof(why)) ||
	    net_auth_new(NULL, true, &fz_open, why, sizeof(why))) {
		fprintf(stderr, "fuzz_auth: set-up: %s\n", why);
		abort();
	}
	fz_trace_on = getenv("FUZZ_TRACE") != NULL;
	fz_at_exit(auth_fini);
	return 0;
}

/* ------------------------------------------------------------ the key file */

static void keyfile_check(const uint8_t *data, size_t size)
{
	struct weir_keyring kr, kr2;
	char why[256];
	int fd = open(fz_trial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size) || close(fd))
		abort();
	int rc = weir_keyring_load(fz_trial, &kr, why, sizeof(why));
	CHECK(rc == 0 || rc == -EINVAL);
	if (rc) {
		CHECK(why[0] != '\0');
		return;
	}
	CHECK(kr.kr_nr >= 1 && kr.kr_nr <= WEIR_KEYRING_MAX);
	for (unsigned i = 0; i < kr.kr_nr; i++) {
		struct weir_key k = kr.kr_keys[i];
		CHECK(weir_key_name_valid(k.wk_name));
		weir_key_set_id(&k);
		CHECK(!memcmp(k.wk_id, kr.kr_keys[i].wk_id, WEIR_KEY_ID_LEN));
		CHECK(weir_keyring_find(&kr, k.wk_id) != NULL);
		for (unsigned j = 0; j < i; j++)
			CHECK(strcmp(kr.kr_keys[j].wk_name, k.wk_name) != 0);
	}
	CHECK(weir_keyring_save(fz_trial2, &kr, false) == 0);
	CHECK(weir_keyring_load(fz_trial2, &kr2, why, sizeof(why)) == 0);
	CHECK(kr2.kr_nr == kr.kr_nr && !memcmp(kr2.kr_keys, kr.kr_keys, kr.kr_nr * sizeof(kr.kr_keys[0])));
	weir_keyring_wipe(&kr);
	weir_keyring_wipe(&kr2);
}

/* ------------------------------------------------------------ the handshake */

/* The proof \a tag of the key \a st recorded, over \a st's nonces. */
static void st_proof(const struct net_auth_srv *st, const char *tag, uint8_t out[32])
{
	const struct weir_key *k = weir_keyring_find(&fz_kr, st->as_key_id);
	CHECK(k != NULL);
	struct weir_keyring one = { .kr_nr = 1, .kr_keys = { *k } };
	fz_auth_proof(&one, tag, st->as_nc, st->as_ns, out);
}

/* \a r's hello again, naming key \a k. \return the new body's length in \a buf. */
static size_t hello_mend(const struct fz_rec *r, const struct weir_key *k, uint8_t *buf,
			 size_t cap)
{
	Weir__AuthHello *h = weir__auth_hello__unpack(NULL, r->r_body_len, r->r_body);
	if (!h)
		return 0;
	uint8_t *old = h->key_id.data;
	size_t oldlen = h->key_id.len;
	h->key_id.data = (uint8_t *)k->wk_id;
	h->key_id.len = WEIR_KEY_ID_LEN;
	size_t n = weir__auth_hello__get_packed_size(h);
	if (n <= cap)
		weir__auth_hello__pack(h, buf);
	h->key_id.data = old;
	h->key_id.len = oldlen;
	weir__auth_hello__free_unpacked(h, NULL);
	return n <= cap ? n : 0;
}

static void handshake_run(uint8_t opts, const uint8_t *p, size_t left)
{
	bool secure = !(opts & 2);
	struct net_auth *a = secure ? fz_keyed : fz_open;
	struct net_auth_srv st;
	memset(&st, 0, sizeof(st));
	struct fz_rec r;
	for (int i = 0; i < FZ_MAX_RECS && fz_rec_next(&p, &left, &r); i++) {
		uint8_t buf[1024];
		bool mended_proof = false;
		if (r.r_op == WEIR__WIRE_OP__AUTH_HELLO && (opts & 8)) {
			size_t n = hello_mend(&r, &fz_kr.kr_keys[(opts & 16) ? 1 : 0], buf, sizeof(buf));
			if (n) {
				r.r_body = buf;
				r.r_body_len = n;
			}
		}
		if (r.r_op == WEIR__WIRE_OP__AUTH_PROOF && (opts & 4) &&
		    st.as_state == NET_AUTH_WANT_PROOF) {
			uint8_t pr[32];
			st_proof(&st, "weir-auth-v1 client", pr);
			Weir__AuthProof m = WEIR__AUTH_PROOF__INIT;
			m.proof.data = pr;
			m.proof.len = sizeof(pr);
			r.r_body = buf;
			r.r_body_len = weir__auth_proof__pack(&m, buf);
			mended_proof = true;
		}
		enum net_auth_state before = st.as_state;
		struct net_auth_srv_reply ar;
		int rc = net_auth_srv_frame(a, &st, r.r_op, r.r_body, r.r_body_len, "fuzz:1", &ar);
		if (fz_trace_on)
			fprintf(stderr, "fuzz_auth: op=%u rc=%d state %d -> %d%s%s\n", r.r_op, rc,
				(int)before, (int)st.as_state, ar.ar_pass ? " pass" : "",
				ar.ar_close ? " close" : "");
		CHECK(rc == 0 || rc == -EACCES || rc == -EPROTO || rc == -EIO);
		CHECK(!rc == !ar.ar_close);
		if (secure) {
			CHECK(!ar.ar_pass && !ar.ar_insecure);
			if (!rc && st.as_state == NET_AUTH_DONE) {
				/* authentication bypass unless the right proof was just shown */
				CHECK(before == NET_AUTH_WANT_PROOF && mended_proof);
				CHECK(r.r_op == WEIR__WIRE_OP__AUTH_PROOF);
			}
			if (!rc && st.as_state == NET_AUTH_WANT_PROOF && before == NET_AUTH_WANT_HELLO) {
				uint8_t want[32];
				const struct weir_key *k = weir_keyring_find(&fz_kr, st.as_key_id);
				CHECK(k && !strcmp(k->wk_name, st.as_key_name));
				CHECK(!memcmp(k->wk_key, st.as_key, WEIR_KEY_LEN));
				st_proof(&st, "weir-auth-v1 server", want);
				CHECK(!memcmp(want, ar.ar_proof, sizeof(want)));
			}
		} else if (!rc) {
			CHECK(st.as_state == NET_AUTH_DONE && !st.as_key_name[0]);
			CHECK(ar.ar_pass || ar.ar_insecure);
		}
		if (rc || st.as_state == NET_AUTH_DONE)
			memset(&st, 0, sizeof(st)); /* closed, or past the handshake: a new connection */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		keyfile_check(data + 1, size - 1);
	else
		handshake_run(data[0], data + 1, size - 1);
	return 0;
}
