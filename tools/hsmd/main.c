/*
 * tools/hsmd/main.c - weir-hsmd, the HSM copytool agent of the S3 tier.
 *
 * NAME
 *     weir-hsmd - move file data between Weir and S3 for the MDS's HSM coordinator
 *
 * SYNOPSIS
 *     weir-hsmd --mds HOST:PORT [--threads N] [--part-size BYTES] [--name NAME]
 *               [--log FILE] [--log-level LEVEL] [--config FILE]
 *               [--s3-endpoint URL] [--s3-region REGION] [--s3-access-key-id ID]
 *               [--s3-secret-access-key KEY] [--s3-addressing path|virtual]
 *     weir-hsmd --help
 *
 * DESCRIPTION
 *     Like Lustre's copytool (lhsmtool_posix), weir-hsmd mounts the filesystem
 *     and asks the MDS for work (MDS_HSM_AGENT_FETCH, long-poll). It runs the
 *     actions it gets on a pool of worker threads, each with its own S3
 *     connection:
 *       restore  HEAD the object (a changed ETag or size fails the action with
 *                ESTALE: the MDS marks the file lost or re-imports it), then
 *                parallel ranged GETs of the chunks not yet restored, the chunk
 *                a reader waits for first, each written into the file, fsynced
 *                and reported to the MDS, so waiting readers go on at once;
 *       archive  one PUT for a file smaller than the part size, else a multipart
 *                upload with parts in parallel (its id recorded on the MDS, so an
 *                upload left by a crash is aborted by the next attempt), then a
 *                HEAD to verify size and ETag before the MDS is told.
 *     Several agents may serve one filesystem. Failed actions are reported with
 *     their error and retried by the MDS. An agent that dies (kill -9) loses
 *     nothing: its actions go back to waiting when its lease expires (restore
 *     keeps the chunks already reported).
 *
 * OPTIONS
 *     --mds HOST:PORT        the MDS (required)
 *     --threads N            worker threads = parallel S3 transfers (default 8)
 *     --part-size BYTES      multipart part size (default 8MiB, 5MiB..5GiB); files
 *                            smaller than this go in one PUT
 *     --name NAME            agent name in the MDS's queue (default HOST:PID)
 *     --log FILE             log file, or stderr (default)
 *     --log-level LEVEL      error, warn, notice, info (default: one line per
 *                            finished action) or debug
 *     --config FILE          INI file with any of these settings (section [hsmd]
 *                            or none); the command line wins
 *     --s3-endpoint URL      S3 endpoint, http(s)://HOST[:PORT]
 *     --s3-region REGION     signing region (default us-east-1)
 *     --s3-access-key-id ID, --s3-secret-access-key KEY   credentials
 *     --s3-addressing MODE   path (default: ENDPOINT/BUCKET/KEY) or virtual
 *                            (BUCKET.HOST/KEY)
 *
 * ENVIRONMENT
 *     AWS_ENDPOINT_URL, AWS_REGION (or AWS_DEFAULT_REGION), AWS_ACCESS_KEY_ID,
 *     AWS_SECRET_ACCESS_KEY: used for what the settings above leave unset.
 *     Without an endpoint and both keys weir-hsmd refuses to start (exit 2).
 *
 * SIGNALS
 *     SIGTERM, SIGINT: fetch no more work, let the transfers in flight end,
 *     report finished actions, leave unfinished ones to the MDS (they go back
 *     to waiting), unmount and exit 0. A second signal exits at once (1).
 *     SIGHUP is ignored.
 *
 * EXIT STATUS
 *     0 after a signal, 1 when the mount or start-up failed, 2 on bad options.
 *
 * DESIGN. Threads: main (this file: options, mount, the fetch loop), one
 * signal thread (sigwait), hc_threads workers (sched.c), libweir's own. See
 * hsmd.h for the scheduler.
 */
#define _GNU_SOURCE
#include "hsmd.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/client_int.h"
#include "common/config.h"
#include "common/log.h"
#include "common/util.h"
#include "weir.pb-c.h"

/** How long a fetch is held by the MDS when there is no work (<= 5000). */
#define HD_FETCH_WAIT_MS 2000
/** How long start-up waits for an MDS that refuses connections. */
#define HD_MOUNT_RETRY_MS 30000

static const char *opt_mds, *opt_name, *opt_log, *opt_log_level, *opt_key_file;
static bool opt_insecure;
static const char *opt_s3_endpoint, *opt_s3_region, *opt_s3_key_id, *opt_s3_secret;
static const char *opt_s3_addressing;
static uint32_t opt_threads;
static uint64_t opt_part_size;

static struct weir_cfg cfg[] = {
	{ "mds", WEIR_CFG_STR, &opt_mds, NULL, 0, 0, "HOST:PORT of the MDS", true, 0, NULL },
	{ "key-file", WEIR_CFG_STR, &opt_key_file, NULL, 0, 0,
	  "the cluster key file (default: $WEIR_KEY_FILE, else /etc/weir/cluster.key)", false, 0,
	  NULL },
	{ "insecure", WEIR_CFG_FLAG, &opt_insecure, "no", 0, 0,
	  "connect without a cluster key (to servers running --insecure)", false, 0, NULL },
	{ "threads", WEIR_CFG_U32, &opt_threads, "8", 1, 256,
	  "worker threads (parallel S3 transfers, each with its own connection)", false, 0,
	  NULL },
	{ "part-size", WEIR_CFG_SIZE, &opt_part_size, "8MiB", 5ull << 20, 5ull << 30,
	  "multipart part size; smaller files are archived with one PUT", false, 0, NULL },
	{ "name", WEIR_CFG_STR, &opt_name, NULL, 0, 0,
	  "agent name shown in the MDS's queue (default HOST:PID)", false, 0, NULL },
	{ "log", WEIR_CFG_STR, &opt_log, "stderr", 0, 0, "log file, or stderr", false, 0, NULL },
	{ "log-level", WEIR_CFG_STR, &opt_log_level, "info", 0, 0,
	  "error, warn, notice, info (one line per finished action) or debug", false, 0, NULL },
	{ "s3-endpoint", WEIR_CFG_STR, &opt_s3_endpoint, NULL, 0, 0,
	  "S3 endpoint http(s)://HOST[:PORT] (default $AWS_ENDPOINT_URL)", false, 0, NULL },
	{ "s3-region", WEIR_CFG_STR, &opt_s3_region, NULL, 0, 0,
	  "S3 signing region (default $AWS_REGION, $AWS_DEFAULT_REGION or us-east-1)", false, 0,
	  NULL },
	{ "s3-access-key-id", WEIR_CFG_STR, &opt_s3_key_id, NULL, 0, 0,
	  "S3 access key id (default $AWS_ACCESS_KEY_ID)", false, 0, NULL },
	{ "s3-secret-access-key", WEIR_CFG_STR, &opt_s3_secret, NULL, 0, 0,
	  "S3 secret access key (default $AWS_SECRET_ACCESS_KEY; prefer the environment or "
	  "--config to the command line)", false, 0, NULL },
	{ "s3-addressing", WEIR_CFG_STR, &opt_s3_addressing, "path", 0, 0,
	  "path (ENDPOINT/BUCKET/KEY) or virtual (BUCKET.HOST/KEY)", false, 0, NULL },
};

/* Copy a setting into a fixed S3 conf field. \return 0 or -ENAMETOOLONG (printed). */
static int hd_s3_set(char *dst, size_t len, const char *val, const char *name)
{
	if (!val)
		return 0;
	if (strlen(val) >= len) {
		fprintf(stderr, "weir-hsmd: --%s: too long (at most %zu bytes)\n", name, len - 1);
		return -ENAMETOOLONG;
	}
	memcpy(dst, val, strlen(val) + 1);
	return 0;
}

/* The S3 client settings: defaults, the environment, then the settings. \return 0 or -EINVAL. */
static int hd_s3_conf(struct weir_s3_conf *c)
{
	struct weir_s3 *probe;
	int rc;

	weir_s3_conf_init(c);
	if (weir_s3_conf_from_env(c)) {
		fprintf(stderr, "weir-hsmd: an AWS_* environment variable is too long\n");
		return -EINVAL;
	}
	if (hd_s3_set(c->sc_endpoint, sizeof(c->sc_endpoint), opt_s3_endpoint, "s3-endpoint") ||
	    hd_s3_set(c->sc_region, sizeof(c->sc_region), opt_s3_region, "s3-region") ||
	    hd_s3_set(c->sc_access_key, sizeof(c->sc_access_key), opt_s3_key_id,
		      "s3-access-key-id") ||
	    hd_s3_set(c->sc_secret_key, sizeof(c->sc_secret_key), opt_s3_secret,
		      "s3-secret-access-key"))
		return -EINVAL;
	if (!strcmp(opt_s3_addressing, "path")) {
		c->sc_path_style = true;
	} else if (!strcmp(opt_s3_addressing, "virtual")) {
		c->sc_path_style = false;
	} else {
		fprintf(stderr, "weir-hsmd: --s3-addressing %s: use path or virtual\n",
			opt_s3_addressing);
		return -EINVAL;
	}
	if (!c->sc_endpoint[0] || !c->sc_access_key[0] || !c->sc_secret_key[0]) {
		fprintf(stderr, "weir-hsmd: S3 is not configured; missing:%s%s%s\n"
			"  set AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and\n"
			"  AWS_REGION), or --s3-endpoint, --s3-access-key-id and "
			"--s3-secret-access-key\n"
			"  (on the command line or in --config FILE)\n",
			!c->sc_endpoint[0] ? " the endpoint (AWS_ENDPOINT_URL)" : "",
			!c->sc_access_key[0] ? " the access key id (AWS_ACCESS_KEY_ID)" : "",
			!c->sc_secret_key[0] ? " the secret key (AWS_SECRET_ACCESS_KEY)" : "");
		return -EINVAL;
	}
	/* let the client check the rest (endpoint scheme) with a placeholder bucket */
	snprintf(c->sc_bucket, sizeof(c->sc_bucket), "weir-hsmd-check");
	rc = weir_s3_new(c, &probe);
	c->sc_bucket[0] = '\0';
	if (rc) {
		fprintf(stderr, "weir-hsmd: S3 endpoint '%s': %s (want http://HOST[:PORT] or "
			"https://HOST[:PORT])\n", c->sc_endpoint, strerror(-rc));
		return -EINVAL;
	}
	weir_s3_free(probe);
	/* the secret is not logged with the configuration */
	if (opt_s3_secret) {
		free((void *)opt_s3_secret);
		opt_s3_secret = strdup("(set)");
	}
	return 0;
}

/* ---------------------------------------------------------------- signals */

struct hd_sig {
	struct hd_agent *sg_ag;
	sigset_t sg_set;
};

static void *hd_sig_main(void *arg)
{
	struct hd_sig *sg = arg;
	int sig = 0, n = 0;

	weir_thread_name("hsmd-sig");
	for (;;) {
		if (sigwait(&sg->sg_set, &sig))
			continue;
		if (n++ == 0) {
			WEIR_LOG_NOTICE("signal=%d: stopping: no new actions; unfinished ones go "
					"back to the MDS", sig);
			atomic_store(&sg->sg_ag->ag_stop, true);
			hd_sched_kick(sg->sg_ag);
		} else {
			WEIR_LOG_NOTICE("signal=%d again: exiting now", sig);
			_exit(1);
		}
	}
	return NULL;
}

/* Sleep \a ms unless stopping (checked every 50 ms). */
static void hd_sleep_ms(struct hd_agent *ag, uint32_t ms)
{
	while (ms && !atomic_load(&ag->ag_stop)) {
		uint32_t step = ms < 50 ? ms : 50;
		struct timespec ts = { 0, (long)step * 1000000 };
		nanosleep(&ts, NULL);
		ms -= step;
	}
}

/* ------------------------------------------------------------ fetch loop */

static void hd_fetch_loop(struct hd_agent *ag)
{
	uint64_t next_ka = weir_now_ns() + HD_KEEPALIVE_MS * 1000000ull;
	uint32_t backoff_ms = 0;
	bool down = false;
	char b[64];

	while (!atomic_load(&ag->ag_stop)) {
		Weir__HsmFetchReq req = WEIR__HSM_FETCH_REQ__INIT;
		Weir__HsmFetchRep *rep = NULL;
		uint32_t slots;
		int rc;

		if (weir_now_ns() >= next_ka) {
			hd_sched_keepalive(ag);
			next_ka = weir_now_ns() + HD_KEEPALIVE_MS * 1000000ull;
		}
		slots = hd_sched_wait_slots(ag, HD_FETCH_WAIT_MS);
		if (atomic_load(&ag->ag_stop))
			break;
		if (!slots)
			continue;
		req.agent = (char *)ag->ag_conf->hc_name;
		req.session = wc_session_get(ag->ag_fs, NULL);
		req.max = slots;
		req.wait_ms = HD_FETCH_WAIT_MS;
		rc = wc_mds_call(ag->ag_fs, WEIR__WIRE_OP__MDS_HSM_AGENT_FETCH, &req.base,
				 &weir__hsm_fetch_rep__descriptor, (void **)&rep);
		if (rc) {
			if (!down)
				WEIR_LOG_WARN("fetch from the MDS %s: %s; retrying",
					      ag->ag_conf->hc_mds, weir_rc_str(rc, b, sizeof(b)));
			else
				WEIR_LOG_DEBUG("fetch: %s", weir_rc_str(rc, b, sizeof(b)));
			down = true;
			backoff_ms = backoff_ms ? backoff_ms * 2 : 100;
			if (backoff_ms > 2000)
				backoff_ms = 2000;
			hd_sleep_ms(ag, backoff_ms);
			continue;
		}
		if (down)
			WEIR_LOG_NOTICE("fetch from the MDS %s works again", ag->ag_conf->hc_mds);
		down = false;
		backoff_ms = 0;
		for (size_t i = 0; i < rep->n_tasks; i++) {
			const Weir__HsmTask *pt = rep->tasks[i];
			if (atomic_load(&ag->ag_stop))
				break; /* not started: the MDS gets them back with our session */
			rc = hd_sched_add(ag, pt);
			if (rc >= 0)
				continue;
			WEIR_LOG_ERROR("action=%llu: malformed or unusable task (action %u, key '%s'): "
				       "%s", (unsigned long long)pt->id, pt->action,
				       pt->key ? pt->key : "", weir_rc_str(rc, b, sizeof(b)));
			struct hd_task tmp = { .t_id = pt->id };
			if (pt->fid) {
				tmp.t_fid.fid_seq = pt->fid->seq;
				tmp.t_fid.fid_oid = pt->fid->oid;
			}
			hd_done(ag, &tmp, rc, NULL, 0, 0, "weir-hsmd: malformed task");
		}
		protobuf_c_message_free_unpacked(&rep->base, NULL);
	}
}

int main(int argc, char **argv)
{
	static struct hd_conf conf;
	static struct hd_agent ag;
	struct hd_sig sg;
	pthread_t sig_thread;
	char name[64], host[48], b[64];
	weir_fs_t *fs = NULL;
	int rc, lvl;

	rc = weir_cfg_parse(cfg, WEIR_ARRAY_SIZE(cfg), "weir-hsmd", "hsmd",
			    "--mds HOST:PORT [--threads N] [--part-size BYTES] [options]\n\n"
			    "The HSM copytool agent: moves file data between Weir and S3 (archive,\n"
			    "restore) for the MDS. S3 settings come from AWS_ENDPOINT_URL,\n"
			    "AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY unless set below.",
			    argc, argv);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (hd_s3_conf(&conf.hc_s3))
		return 2;
	lvl = weir_log_parse_level(opt_log_level);
	if (lvl < 0) {
		fprintf(stderr, "weir-hsmd: --log-level %s: use error, warn, notice, info or debug\n",
			opt_log_level);
		return 2;
	}
	if (!opt_name) {
		if (gethostname(host, sizeof(host)))
			snprintf(host, sizeof(host), "localhost");
		host[sizeof(host) - 1] = '\0';
		snprintf(name, sizeof(name), "%s:%d", host, (int)getpid());
	} else {
		snprintf(name, sizeof(name), "%s", opt_name);
	}
	weir_log_set_level(lvl);
	weir_log_set_ident("weir-hsmd");
	rc = weir_log_open(opt_log);
	if (rc) {
		fprintf(stderr, "weir-hsmd: --log %s: %s\n", opt_log, strerror(-rc));
		return 1;
	}
	weir_cfg_log(cfg, WEIR_ARRAY_SIZE(cfg), "weir-hsmd");

	/* every thread (libweir's too) inherits the mask: the signals go to sigwait */
	sigemptyset(&sg.sg_set);
	sigaddset(&sg.sg_set, SIGTERM);
	sigaddset(&sg.sg_set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sg.sg_set, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN); /* a daemon outlives its terminal */

	conf.hc_mds = opt_mds;
	conf.hc_name = name;
	conf.hc_threads = opt_threads;
	conf.hc_part_size = opt_part_size;
	/* more tasks than workers: a new restore (a reader waiting) starts while big ones run */
	conf.hc_max_tasks = opt_threads * 2;
	ag.ag_conf = &conf;
	pthread_mutex_init(&ag.ag_lock, NULL);
	pthread_cond_init(&ag.ag_cond, NULL);
	sg.sg_ag = &ag;
	rc = pthread_create(&sig_thread, NULL, hd_sig_main, &sg);
	if (rc) {
		fprintf(stderr, "weir-hsmd: cannot start a thread: %s\n", strerror(rc));
		return 1;
	}
	pthread_detach(sig_thread);

	struct weir_mount_opts mo = {
		.wmo_size = sizeof(mo),
		.wmo_client_name = name,
		.wmo_key_file = opt_key_file,
		.wmo_insecure = opt_insecure,
	};
	/* the MDS may still be starting (weir-local, systemd): retry for a while */
	/* libweir sets its log up from WEIR_LOG / WEIR_LOG_LEVEL at the first mount: the same */
	setenv("WEIR_LOG", opt_log, 1);
	setenv("WEIR_LOG_LEVEL", opt_log_level, 1);
	for (uint64_t t0 = weir_now_ns();;) {
		rc = weir_mount_with(opt_mds, &mo, &fs);
		weir_log_set_ident("weir-hsmd");
		weir_log_set_level(lvl);
		if (!rc || atomic_load(&ag.ag_stop) ||
		    (rc != -ECONNREFUSED && rc != -ETIMEDOUT && rc != -EHOSTUNREACH &&
		     rc != -ECONNRESET) ||
		    weir_now_ns() - t0 > HD_MOUNT_RETRY_MS * 1000000ull)
			break;
		WEIR_LOG_INFO("mount %s: %s; retrying", opt_mds, weir_rc_str(rc, b, sizeof(b)));
		hd_sleep_ms(&ag, 500);
	}
	if (rc) {
		fprintf(stderr, "weir-hsmd: cannot mount %s: %s%s%s\n", opt_mds,
			weir_rc_str(rc, b, sizeof(b)), weir_mount_error()[0] ? ": " : "",
			weir_mount_error());
		WEIR_LOG_ERROR("mount %s: %s", opt_mds, weir_rc_str(rc, b, sizeof(b)));
		return 1;
	}
	ag.ag_fs = fs;
	rc = hd_sched_start(&ag);
	if (rc) {
		fprintf(stderr, "weir-hsmd: cannot start the workers: %s\n", strerror(-rc));
		atomic_store(&ag.ag_stop, true);
		hd_sched_stop(&ag);
		weir_umount(fs);
		return 1;
	}
	WEIR_LOG_NOTICE("agent %s: serving the MDS %s with %u workers, part size %llu, S3 %s "
			"(region %s)", name, opt_mds, conf.hc_threads,
			(unsigned long long)conf.hc_part_size, conf.hc_s3.sc_endpoint,
			conf.hc_s3.sc_region);

	hd_fetch_loop(&ag);

	hd_sched_stop(&ag);
	rc = weir_umount(fs);
	if (rc)
		WEIR_LOG_WARN("umount: %s", weir_rc_str(rc, b, sizeof(b)));
	WEIR_LOG_NOTICE("agent %s stopped: %llu actions done, %llu failed", name,
			(unsigned long long)ag.ag_done, (unsigned long long)ag.ag_failed);
	return 0;
}
