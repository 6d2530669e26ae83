/*
 * tests/fuzz/fuzz.h - what the libFuzzer harnesses of tests/fuzz/ share:
 * the request-record input format, requests without a socket (and the
 * capture of their replies), a scratch directory, quiet logging.
 *
 * DESIGN. The MDS and OSS harnesses (fuzz_mds.c, fuzz_oss.c) call the
 * servers' request dispatchers directly, on the fuzzer's thread, with a
 * struct net_req built here from the input, exactly as net/server.c builds
 * one from a frame (one allocation holding body then bulk; NULL pointers for
 * empty parts). The reply is captured instead of sent: the harnesses are
 * linked with `-Wl,--wrap=net_req_reply,--wrap=net_loop_add_fd` (see
 * tests/fuzz/fuzz.mk), so every call the servers make to net_req_reply()
 * comes here first; a request made by fz_req_new() is packed as
 * net/server.c would (so a reply message the wire cannot carry is found
 * too), checked and freed here, and any other (a real connection's) goes on
 * to the real net_req_reply(). Replies may come from any thread (parked
 * MDS_SYNC and lock requests, the OSS's slow threads): the count of
 * answered requests is atomic and an eventfd is signalled for each.
 *
 * Input format of the request harnesses (little-endian), up to
 * FZ_MAX_RECS records, each one request:
 *     u16 opcode  u16 body_len  u16 bulk_len  body[body_len]  bulk[bulk_len]
 * Lengths past the end of the input are cut to what is left, so every
 * input means something. tests/fuzz/gen_corpus.c writes the seeds.
 */
#ifndef WEIR_TESTS_FUZZ_H
#define WEIR_TESTS_FUZZ_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "net/net.h"

/** Most requests one input makes. */
#define FZ_MAX_RECS 16
/** Bytes of a record's header. */
#define FZ_REC_HDR 6

struct fz_rec {
	uint16_t r_op;
	const uint8_t *r_body;
	size_t r_body_len; /* bytes */
	const uint8_t *r_bulk;
	size_t r_bulk_len; /* bytes */
};

/** One opcode of the protocol: its request and reply body types (weir.proto). */
struct fz_op {
	uint16_t o_op;
	const char *o_name;
	const ProtobufCMessageDescriptor *o_req;
	const ProtobufCMessageDescriptor *o_rep;
};
/** Every opcode of weir.WireOp (net/proto/weir.proto), in opcode order. */
extern const struct fz_op fz_ops[];
extern const size_t fz_nr_ops;
/**
 * Abort, naming it, if an opcode of weir.WireOp is missing from fz_ops: a
 * new opcode must be added there (with its body types) so that the
 * harnesses know it. The frame harness and gen_corpus call it.
 */
void fz_ops_check(void);
/** The entry of \a op, or NULL for an opcode the protocol does not have. */
const struct fz_op *fz_op_find(uint16_t op);

/**
 * Take the next record from \a *p / \a *left (advanced past it).
 * \return 1 with \a r filled, or 0 when fewer than FZ_REC_HDR bytes are left.
 */
int fz_rec_next(const uint8_t **p, size_t *left, struct fz_rec *r);

/** Append one record to \a out (at most \a cap bytes). \return bytes written, 0 if no room. */
size_t fz_rec_put(uint8_t *out, size_t cap, uint16_t op, const void *body, size_t body_len,
		  const void *bulk, size_t bulk_len);

/**
 * A request as net/server.c would hand it to a server's so_handle, without
 * a connection; its reply is captured by the wrapped net_req_reply().
 * \return the request (freed by its reply), or NULL on ENOMEM.
 */
struct net_req *fz_req_new(const struct fz_rec *r, void *srv_arg, void *loop_priv);

/**
 * Called (when set) with every captured reply before its request is freed,
 * on the thread that replies: a harness learns from it what the server
 * created (sessions, handles, FIDs). \a body is NULL on an error.
 */
extern void (*fz_reply_hook)(const struct net_req *rq, int rc, const ProtobufCMessage *body);

/** Requests made by fz_req_new() answered so far. */
extern atomic_ulong fz_replies;
/** Readable (EFD_SEMAPHORE off, non-blocking) after each captured reply. */
extern int fz_reply_efd;

/**
 * The fd, callback and argument that the last net_loop_add_fd() on
 * fz_loop (a loop that does not exist) registered; the OSS harness runs the
 * callback itself when the fd is readable (its io_uring completions).
 */
extern struct net_loop *const fz_loop;
struct fz_loop_fd {
	int lf_fd;
	void (*lf_cb)(void *arg);
	void *lf_arg;
};
extern struct fz_loop_fd fz_loop_fd;

/**
 * Make a scratch directory ($TMPDIR or /tmp, "weir-fuzz-NAME-XXXXXX"); send
 * the log to $FUZZ_LOG (default /dev/null) at level $FUZZ_LOG_LEVEL (default
 * debug, so that every log line's formatting runs on the fuzzed fields).
 * Aborts on failure (start-up only).
 * \return the directory, valid for the life of the process.
 */
const char *fz_scratch(const char *name);

/**
 * At exit, run \a stop (may be NULL), then remove the scratch directory.
 * Call it once the server has started: exit() runs handlers in the reverse
 * order of their registration, and the server must stop before the
 * destructors of the static objects its start created (RocksDB has some).
 */
void fz_at_exit(void (*stop)(void));

/* ------------------------------------------------ byte streams (net harnesses) */

struct weir_keyring;

/**
 * Mend the header checksum of every frame in \a p (walking header,
 * body_len, bulk_len as a peer parses the stream), so that mutated headers
 * get past the checksum to the checks after it.
 */
void fz_mend(uint8_t *p, size_t len);
/**
 * A TCP connection to \a sa (blocking, close-on-exec). The harnesses'
 * blocking calls see EINTR from libFuzzer's timer (SIGALRM, -timeout):
 * these helpers go on through it.
 * \return the socket, or a negative errno.
 */
int fz_connect(const struct sockaddr *sa, socklen_t len);
/** send() all of \a len bytes (MSG_NOSIGNAL). \return 0, or -1 when the peer is gone. */
int fz_send_all(int fd, const void *buf, size_t len);
/**
 * Read one frame without bulk, waiting up to 10 s for each part.
 * \return its body length (body in \a body, at most \a cap bytes), or
 *         -ETIMEDOUT, -EPIPE (closed), -EPROTO (a bad header, a body over
 *         \a cap, bulk), another -errno.
 */
ssize_t fz_recv_frame(int fd, struct weir_frame_hdr *h, uint8_t *body, size_t cap);
/** Send one frame: \a m packed as its body (NULL: empty), no bulk. \return 0 or -1. */
int fz_send_frame(int fd, uint16_t op, uint32_t flags, uint64_t reqid, int32_t status,
		  const ProtobufCMessage *m);
/**
 * A handshake proof (net/proto/weir.proto): HMAC-SHA256 with the first key
 * of \a kr over \a tag ("weir-auth-v1 server" or "... client"), the key id
 * and both 32-byte nonces.
 */
void fz_auth_proof(const struct weir_keyring *kr, const char *tag, const uint8_t *nc,
		   const uint8_t *ns, uint8_t out[32]);
/** The handshake frames' request ids (net/auth.c). */
#define FZ_REQID_HELLO 0xfffffffffffffff0ULL
#define FZ_REQID_PROOF 0xfffffffffffffff1ULL

#endif /* WEIR_TESTS_FUZZ_H */
