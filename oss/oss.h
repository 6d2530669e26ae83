/*
 * oss/oss.h - the object storage server, embeddable.
 *
 * weir-oss (oss/main.c) parses its command line into a struct oss_conf and
 * calls oss_start(); integration tests may do the same to run an OSS inside
 * the test process. One struct oss serves one or more OSTs (directories) on
 * one listening port, and keeps itself registered with the MDS.
 */
#ifndef WEIR_OSS_H
#define WEIR_OSS_H

#include <stdint.h>

struct oss;

/** Most OST directories one OSS serves. */
#define OSS_MAX_OSTS 64
/** Most event loop threads. */
#define OSS_MAX_THREADS 64
/** Default --writeback-min: writes of at least 256 KiB start their writeback at once. */
#define OSS_WRITEBACK_MIN_DEFAULT (256ULL * 1024)

/**
 * Settings, one per command-line option. oss_conf_init() fills the
 * defaults; strings are borrowed (must stay valid until oss_start() returns).
 */
struct oss_conf {
	const char *oc_mds;             /* "HOST:PORT" of the MDS; required */
	const char *oc_osts[OSS_MAX_OSTS]; /* OST directories; created if missing */
	uint32_t oc_nr_osts;            /* 1..OSS_MAX_OSTS */
	const char *oc_listen;          /* "HOST:PORT"; default "127.0.0.1:0" (any port) */
	const char *oc_advertise;       /* host put in the MDS registration; NULL = listen host */
	const char *oc_port_file;       /* NULL, or file that gets the bound port (atomic write) */
	uint32_t oc_nr_threads;         /* event loops, 1..OSS_MAX_THREADS; default
					 * weir_default_loops() (half the CPUs) */
	uint32_t oc_poll_us;            /* most a loop polls before sleeping, us; 0 (the
					 * default here): never (net_server_conf.sc_poll_us) */
	uint32_t oc_heartbeat_ms;       /* registration/heartbeat period, ms; default 3000 */
	uint32_t oc_fd_cache;           /* open segment files kept, 0 (none)..2^20; default 1024,
					 * at most half of RLIMIT_NOFILE */
	uint64_t oc_writeback_min;      /* bytes: a write of at least this many starts their
					 * writeback to disk at once (not waited for; the
					 * reply still goes when the data is in the page
					 * cache); 0 off; default OSS_WRITEBACK_MIN_DEFAULT */
	/* Logging is process-wide: main() applies these, oss_start() ignores them. */
	const char *oc_log;             /* file or "stderr"; default "stderr" */
	const char *oc_log_level;       /* error|warn|notice|info|debug; default "notice" */
};

/** Fill \a conf with the defaults (no MDS, no OSTs). */
void oss_conf_init(struct oss_conf *conf);

/**
 * Prepare every OST directory (create ost.uuid and O/00..ff on first use),
 * start the event loops (one io_uring each) and the registration thread.
 * Returns once the server listens; registration with the MDS proceeds in
 * the background (retried every second until the MDS answers). OSTs whose
 * index is already known (DIR/ost.index) are served at once; others answer
 * -ENODEV until the MDS assigns an index.
 *
 * \param[in]  conf  Settings; copied, may be freed after the call.
 * \param[out] out   The server; stop it with oss_stop().
 * \return 0 or a negative errno (logged):
 * \retval -EINVAL    a missing or out-of-range setting
 * \retval -ENOTDIR   an OST path is not a directory
 * \retval -EACCES, -EROFS  an OST directory is not writable
 * \retval -EEXIST    two OST paths are the same OST (same ost.uuid)
 * \retval -EIO       a corrupt ost.uuid or ost.index
 * \retval -EADDRINUSE and other socket errors from listening
 * \retval -ENOSYS/-EPERM  io_uring is not available
 * Thread safety: any number of struct oss may run in one process.
 */
int oss_start(const struct oss_conf *conf, struct oss **out);

/** The TCP port the server listens on (useful with a listen port of 0). */
uint16_t oss_port(const struct oss *oss);

/**
 * Stop: end registration, finish the I/O in flight and reply to it, stop the
 * loops, free everything. Accepts NULL.
 */
void oss_stop(struct oss *oss);

#endif /* WEIR_OSS_H */
