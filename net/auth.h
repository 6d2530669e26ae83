/*
 * net/auth.h - connection authentication: the cluster-key handshake.
 *
 * Every connection starts with two frames before any request (the messages
 * and the HMAC inputs are in net/proto/weir.proto, "the handshake"):
 *
 *   client -> AUTH_HELLO {client nonce, key id}
 *   server <- {server nonce, server proof}      (the client checks it)
 *   client -> AUTH_PROOF {client proof}
 *   server <- OK                                (or -EACCES, then close)
 *
 * Both nonces are 32 random bytes, so neither side's proof can be replayed
 * on another connection. The client proves it holds the key to the server
 * and the server to the client (a listener that does not hold the key cannot
 * pose as an MDS or an OSS). Nothing is encrypted: Weir authenticates its
 * peers, and an eavesdropper on the wire still sees the traffic (see the
 * README's Security section).
 *
 * A struct net_auth is what one process knows: its key file (reloaded when
 * the file changes, so keys rotate without a restart) or "insecure" (no
 * key: connects without proving anything, and a server accepts anyone).
 *
 * Thread safety: every function is thread-safe.
 */
#ifndef WEIR_NET_AUTH_H
#define WEIR_NET_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/key.h"

struct net_auth;

/**
 * Load a key file, or set up insecure operation.
 *
 * \param[in]  key_file  The key file (see common/key.h); ignored when
 *                       \a insecure. NULL: WEIR_KEY_FILE_DEFAULT.
 * \param[in]  insecure  Run without a key (servers accept every peer).
 * \param[out] out       The object; free with net_auth_free().
 * \param[out] why       A one-line reason on failure (may be NULL).
 * \return 0 or a negative errno from weir_keyring_load() (-ENOENT, -EPERM,
 *         -EINVAL, ...), or -ENOMEM.
 */
int net_auth_new(const char *key_file, bool insecure, struct net_auth **out, char *why,
		 size_t why_len);

/**
 * For daemons and tools: net_auth_new() from the --key-file/--insecure
 * options, made the process default (net_auth_set_default()). On failure it
 * prints to stderr, prefixed by \a prog, what is wrong and how to fix it
 * (make a key with `weir key gen`, fix the mode, or run --insecure). With
 * \a insecure it logs a WARN that anyone who reaches the ports is trusted.
 * \return 0 or the negative errno of net_auth_new().
 */
int net_auth_setup(const char *prog, const char *key_file, bool insecure, struct net_auth **out);

/** Free. Accepts NULL. The object must not be in use by a server or a connection. */
void net_auth_free(struct net_auth *a);

/** Whether \a a runs without a key. */
bool net_auth_insecure(const struct net_auth *a);

/** The key file \a a reads ("" when insecure). Valid while \a a lives. */
const char *net_auth_key_file(const struct net_auth *a);

/**
 * The process's default, used by net_conn_open() and by servers whose
 * net_server_conf.sc_auth is NULL. Not owned: the caller keeps \a a alive
 * while it is the default. NULL (the initial state): connections send a
 * keyless hello, servers accept any peer (as insecure).
 */
void net_auth_set_default(struct net_auth *a);
struct net_auth *net_auth_get_default(void);

/**
 * Why the last handshake started by this thread failed (a sentence such as
 * "authentication failed: the cluster key differs"), or "" if none did.
 * Thread-local; valid until this thread's next handshake.
 */
const char *net_auth_last_error(void);

/** The name this process gives in its hellos (default "PROG:PID"). Copied. */
void net_auth_set_name(const char *name);

#endif /* WEIR_NET_AUTH_H */
