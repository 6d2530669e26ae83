/*
 * net/auth_int.h - the handshake's two sides, private to net/ (rpc.c runs
 * the client side in its connect, server.c the server side per frame).
 */
#ifndef WEIR_NET_AUTH_INT_H
#define WEIR_NET_AUTH_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "xport.h"

#define NET_AUTH_NONCE_LEN 32 /* bytes */
#define NET_AUTH_MAX_BODY 512  /* bytes: the largest frame body accepted before the handshake */
#define NET_AUTH_TIMEOUT_MS 10000 /* (server.c says "10 s") a connection must finish the handshake this soon after its accept */

enum net_auth_state {
	NET_AUTH_WANT_HELLO = 0, /* a new connection */
	NET_AUTH_WANT_PROOF,     /* hello answered; the client's proof is due */
	NET_AUTH_DONE,           /* requests are served */
};

/** A server connection's handshake state (zeroed = a new connection). */
struct net_auth_srv {
	enum net_auth_state as_state;
	uint8_t as_nc[NET_AUTH_NONCE_LEN];   /* the client's nonce */
	uint8_t as_ns[NET_AUTH_NONCE_LEN];   /* ours */
	uint8_t as_key[WEIR_KEY_LEN];        /* the key the client named */
	uint8_t as_key_id[WEIR_KEY_ID_LEN];
	char as_key_name[WEIR_KEY_NAME_MAX]; /* "" until a key matched (and when insecure) */
	char as_peer_name[64];               /* the name in the hello, for logs */
};

/** What the server answers to one handshake frame. */
struct net_auth_srv_reply {
	bool ar_close;                       /* close the connection after the reply */
	bool ar_pass;                        /* not a handshake frame: serve it as a request */
	bool ar_insecure;                    /* hello reply: this server has no key */
	uint8_t ar_nonce[NET_AUTH_NONCE_LEN];  /* hello reply */
	uint8_t ar_proof[WEIR_HMAC_LEN];       /* hello reply of a keyed server */
};

/**
 * Run the client side on a freshly connected transport.
 * \param[in] a  The keys (NULL: the process default; none: a keyless hello).
 * \return 0, or -EACCES (refused, or the server could not prove the key:
 *         net_auth_last_error() says which), -EPROTO (not a Weir server of
 *         this version), -ETIMEDOUT, -ECONNRESET, -EIO, -ENOMEM.
 */
int net_auth_client(struct net_auth *a, const struct net_xport_ops *ops, struct net_xport *x,
		    const char *peer, uint32_t timeout_ms);

/**
 * Take one frame of a connection whose handshake is not done.
 * \param[in] a      The server's keys (NULL: accept every peer).
 * \param[in] op     The frame's opcode; \a body, \a len its body.
 * \param[out] out   The reply to send (AuthHelloRep fields for AUTH_HELLO)
 *                   and whether to close afterwards or to serve the frame.
 * \return the reply's status: 0, -EACCES, -EPROTO, -EIO.
 */
int net_auth_srv_frame(struct net_auth *a, struct net_auth_srv *st, uint16_t op,
		       const uint8_t *body, size_t len, const char *peer,
		       struct net_auth_srv_reply *out);

/** Whether a server with keys \a a demands the handshake. */
bool net_auth_srv_secure(const struct net_auth *a);

#endif /* WEIR_NET_AUTH_INT_H */
