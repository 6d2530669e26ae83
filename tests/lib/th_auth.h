/*
 * tests/lib/th_auth.h - the client side of the connection handshake on a raw
 * socket, for tests that write frames by hand (hostile bytes, replays):
 * after th_auth_raw() the socket is past the handshake and the server reads
 * the test's frames as requests.
 */
#ifndef WEIR_TH_AUTH_H
#define WEIR_TH_AUTH_H

#include <stdint.h>

#include "common/key.h"

/**
 * Run the handshake on \a fd (a connected socket) with key \a k.
 * \param[in]  k       The key; NULL: the first key of the file WEIR_KEY_FILE
 *                     names (the harness's cluster key).
 * \param[in]  nc      32 bytes, the client nonce; NULL: random.
 * \param[in]  replay  NULL: send the right proof; else send these 32 bytes.
 * \param[out] sent    NULL, or 32 bytes: the right proof of this handshake.
 * \return 0 when the server accepted the proof; the server's status
 *         (-EACCES) when it refused the hello or the proof; -EPROTO when
 *         the server could not prove the key; -EIO on a transport error.
 */
int th_auth_raw(int fd, const struct weir_key *k, const uint8_t *nc, const uint8_t *replay,
		uint8_t *sent);

/** th_tcp_connect() to 127.0.0.1:\a port, then th_auth_raw() with the harness's key. \return fd or -errno. */
int th_tcp_connect_auth(uint16_t port);

#endif /* WEIR_TH_AUTH_H */
