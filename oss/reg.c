/*
 * oss/reg.c - registration with the MDS, which is also the heartbeat.
 *
 * The "oss-reg" thread sends MDS_OSS_REGISTER {oss_addr, one OstReg per OST
 * with its UUID, its secret (DIR/ost.secret: the MDS checks it against the
 * one it bound the UUID to), its index (-1 until the MDS assigned one) and
 * its statvfs totals} every heartbeat period. The reply gives the index of each OST, in
 * order; a newly assigned index is written to DIR/ost.index before the OST
 * is served under it (ot_index, read by the loops). While the MDS does not
 * answer, the thread retries every second with a log line; an MDS that
 * restarted simply receives the next registration. A registration the MDS
 * refuses (-EACCES: a secret it does not know for the UUID; -EBUSY: the OST
 * is alive at another address) is retried every second too, so a failover
 * gets in once the old address is silent; the refusal is logged when it
 * starts and every 30 tries.
 *
 * An index, once an OST has one, is never changed by this thread: an MDS
 * that answers a different index for it gets an ERROR line each time.
 */
#define _GNU_SOURCE
#include "oss_int.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"
#include "weir.pb-c.h"

#define OSS_REG_RETRY_MS 1000
#define OSS_REG_CONNECT_TIMEOUT_MS 1000
/** Bound on one registration call (also bounds how long oss_reg_stop() may wait). */
#define OSS_REG_CALL_TIMEOUT_MS 5000

/*
 * Check the MDS's answer, then persist and publish new indexes.
 * \return the number of OSTs that got their index now (>= 0), or -EPROTO.
 */
static int reg_apply(struct oss *oss, const Weir__OssRegisterRep *rep)
{
	char rcs[96];
	int fresh = 0;

	if (rep->n_indexes != oss->o_nr_osts) {
		WEIR_LOG_ERROR("op=register mds=%s: reply has %zu indexes for %u OSTs", oss->o_mds,
			       rep->n_indexes, oss->o_nr_osts);
		return -EPROTO;
	}
	for (uint32_t i = 0; i < oss->o_nr_osts; i++) {
		if (rep->indexes[i] > OSS_OST_INDEX_MAX) {
			WEIR_LOG_ERROR("op=register mds=%s ost=%u dir=%s: index out of range",
				       oss->o_mds, rep->indexes[i], oss->o_osts[i].ot_dir);
			return -EPROTO;
		}
		for (uint32_t j = 0; j < i; j++)
			if (rep->indexes[j] == rep->indexes[i]) {
				WEIR_LOG_ERROR("op=register mds=%s ost=%u: index given to two OSTs",
					       oss->o_mds, rep->indexes[i]);
				return -EPROTO;
			}
	}
	if (rep->capa_key.len) /* the key the MDS signs capabilities with (oss/capa.c) */
		oss_capa_set_key(oss, rep->capa_key.data, rep->capa_key.len, rep->capa_key_gen);
	for (uint32_t i = 0; i < oss->o_nr_osts; i++) /* HSM backpressure (oss/throttle.c) */
		oss_throttle_set(&oss->o_osts[i],
				 rep->n_throttle_ms == oss->o_nr_osts ? rep->throttle_ms[i] : 0);
	for (uint32_t i = 0; i < oss->o_nr_osts; i++) {
		struct oss_ost *ot = &oss->o_osts[i];
		int32_t cur = atomic_load(&ot->ot_index);
		int32_t idx = (int32_t)rep->indexes[i];
		if (cur == idx)
			continue;
		if (cur >= 0) {
			WEIR_LOG_ERROR("op=register mds=%s ost=%d dir=%s uuid=%s: MDS says "
				       "index %d; keeping the index in ost.index", oss->o_mds,
				       cur, ot->ot_dir, ot->ot_uuid, idx);
			continue;
		}
		int rc = oss_ost_index_store(ot, (uint32_t)idx);
		if (rc) {
			WEIR_LOG_ERROR("op=register ost=%d dir=%s rc=%s: cannot write ost.index; "
				       "not serving it yet", idx, ot->ot_dir,
				       weir_rc_str(rc, rcs, sizeof(rcs)));
			continue;
		}
		atomic_store(&ot->ot_index, idx);
		fresh++;
		WEIR_LOG_NOTICE("op=register ost=%d dir=%s uuid=%s: index assigned by the MDS", idx,
				ot->ot_dir, ot->ot_uuid);
	}
	return fresh;
}

/* One MDS_OSS_REGISTER round trip. */
static int reg_once(struct oss *oss, struct net_conn *conn)
{
	Weir__OssRegisterReq req = WEIR__OSS_REGISTER_REQ__INIT;
	Weir__OstReg regs[OSS_MAX_OSTS];
	Weir__OstReg *regp[OSS_MAX_OSTS];
	struct net_call call;
	char rcs[96];
	int rc;

	req.oss_addr = oss->o_addr;
	req.n_osts = oss->o_nr_osts;
	req.osts = regp;
	for (uint32_t i = 0; i < oss->o_nr_osts; i++) {
		struct oss_ost *ot = &oss->o_osts[i];
		struct oss_statfs sf = { 0 };
		weir__ost_reg__init(&regs[i]);
		regp[i] = &regs[i];
		regs[i].uuid = ot->ot_uuid;
		regs[i].secret.data = ot->ot_secret;
		regs[i].secret.len = sizeof(ot->ot_secret);
		regs[i].index = atomic_load(&ot->ot_index);
		rc = oss_ost_statfs(ot, &sf);
		if (rc)
			WEIR_LOG_WARN("op=statfs ost=%d dir=%s rc=%s: reporting zero space",
				      regs[i].index, ot->ot_dir, weir_rc_str(rc, rcs, sizeof(rcs)));
		regs[i].total_bytes = sf.sf_total_bytes;
		regs[i].free_bytes = sf.sf_free_bytes;
		regs[i].avail_bytes = sf.sf_avail_bytes;
		regs[i].files = sf.sf_files;
		regs[i].files_free = sf.sf_files_free;
		regs[i].fs_id = sf.sf_fs_id;
	}

	net_call_init(&call, WEIR__WIRE_OP__MDS_OSS_REGISTER, &req.base);
	call.nc_timeout_ms = OSS_REG_CALL_TIMEOUT_MS;
	rc = net_call_run(conn, &call);
	if (!rc) {
		Weir__OssRegisterRep *rep =
			net_call_unpack(&call, &weir__oss_register_rep__descriptor);
		if (rep) {
			rc = reg_apply(oss, rep);
			protobuf_c_message_free_unpacked(&rep->base, NULL);
		} else {
			rc = -EPROTO;
		}
	}
	net_call_fini(&call);
	return rc;
}

/* Sleep \a ms or until stop. \return true when stopping. */
static bool reg_sleep(struct oss *oss, uint32_t ms)
{
	struct timespec ts;
	bool stop;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&oss->o_reg_lock);
	while (!oss->o_reg_stop &&
	       pthread_cond_timedwait(&oss->o_reg_cond, &oss->o_reg_lock, &ts) != ETIMEDOUT)
		;
	stop = oss->o_reg_stop;
	pthread_mutex_unlock(&oss->o_reg_lock);
	return stop;
}

/*
 * The MDS refused this OSS's registration (bound OSTs, mds/cmap.c): say why
 * in words an operator can act on. \a tries: refusals since the last line.
 */
static void reg_refused_log(const struct oss *oss, int rc, unsigned tries)
{
	char what[160], rcs[96];

	if (oss->o_nr_osts == 1)
		snprintf(what, sizeof(what), "dir=%s uuid=%s", oss->o_osts[0].ot_dir,
			 oss->o_osts[0].ot_uuid);
	else
		snprintf(what, sizeof(what), "osts=%u (the MDS's log names the uuid)",
			 oss->o_nr_osts);
	if (rc == -EACCES)
		WEIR_LOG_ERROR("op=register mds=%s addr=%s %s rc=%s: the MDS refused the OST: its "
			       "secret (DIR/ost.secret) is not the one the MDS bound its uuid to "
			       "(a copy of another OST's ost.uuid, or a lost ost.secret); not "
			       "served until it registers; retrying every 1s%s",
			       oss->o_mds, oss->o_addr, what, weir_rc_str(rc, rcs, sizeof(rcs)),
			       tries ? " (still refused)" : "");
	else
		WEIR_LOG_ERROR("op=register mds=%s addr=%s %s rc=%s: the MDS refused the OST: it is "
			       "alive at another address (another weir-oss serves it, or did until "
			       "less than the MDS's --ost-timeout ago); retrying every 1s, accepted "
			       "once the other address is silent%s",
			       oss->o_mds, oss->o_addr, what, weir_rc_str(rc, rcs, sizeof(rcs)),
			       tries ? " (still refused)" : "");
}

static void *reg_main(void *arg)
{
	struct oss *oss = arg;
	struct net_conn *conn = NULL;
	bool registered = false;
	int last_rc = 0;   /* the last failure, so a refusal is not logged every second */
	unsigned same = 0; /* tries that failed with last_rc since it was logged */
	char rcs[96];

	weir_thread_name("oss-reg");
	do {
		int rc = 0;
		if (!conn) {
			rc = net_conn_open(oss->o_mds, OSS_REG_CONNECT_TIMEOUT_MS, &conn);
			if (rc == -EACCES) {
				/* the handshake failed (net/auth.c said why, rate-limited): not
				 * the MDS refusing the OSTs, which reg_refused_log() explains */
				if (last_rc != -EKEYREJECTED || ++same % 30 == 0)
					WEIR_LOG_ERROR("op=register mds=%s addr=%s rc=%s: the MDS "
						       "refused this OSS's cluster key (--key-file); "
						       "not served until it registers; retrying every "
						       "1s%s", oss->o_mds, oss->o_addr,
						       weir_rc_str(rc, rcs, sizeof(rcs)),
						       last_rc == -EKEYREJECTED ? " (still refused)" : "");
				if (last_rc != -EKEYREJECTED)
					same = 0;
				last_rc = -EKEYREJECTED; /* a marker, never returned */
				registered = false;
				continue;
			}
		}
		if (!rc)
			rc = reg_once(oss, conn);
		if (rc > 0) {
			/* new indexes: register again at once, so the MDS marks these
			 * OSTs up only when this OSS serves them under their index */
			registered = true;
			rc = reg_once(oss, conn);
			if (rc > 0)
				rc = 0;
		}
		if (rc == -EACCES || rc == -EBUSY) {
			/* the MDS refused the OSTs (mds/cmap.c): said once, then every 30 tries */
			if (rc != last_rc || ++same % 30 == 0)
				reg_refused_log(oss, rc, same);
			if (rc != last_rc)
				same = 0;
			last_rc = rc;
			registered = false;
			continue;
		}
		last_rc = rc;
		same = 0;
		if (rc) {
			bool down = rc == -ECONNREFUSED || rc == -ETIMEDOUT || rc == -ECONNRESET ||
				    rc == -EHOSTUNREACH || rc == -ENETUNREACH || rc == -ESHUTDOWN;
			WEIR_LOG_WARN("op=register mds=%s rc=%s: %s%s; retrying in 1s", oss->o_mds,
				      weir_rc_str(rc, rcs, sizeof(rcs)),
				      down ? "MDS not answering" : "registration failed",
				      registered ? " (was registered)" : "");
			registered = false;
			continue;
		}
		if (!registered)
			WEIR_LOG_NOTICE("op=register mds=%s addr=%s osts=%u: registered with "
					"the MDS", oss->o_mds, oss->o_addr, oss->o_nr_osts);
		else
			WEIR_LOG_DEBUG("op=register mds=%s: heartbeat", oss->o_mds);
		registered = true;
	} while (!reg_sleep(oss, registered ? oss->o_heartbeat_ms : OSS_REG_RETRY_MS));
	net_conn_close(conn);
	return NULL;
}

void oss_reg_init(struct oss *oss)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&oss->o_reg_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* reg_sleep() deadlines */
	pthread_cond_init(&oss->o_reg_cond, &ca);
	pthread_condattr_destroy(&ca);
}

void oss_reg_fini(struct oss *oss)
{
	pthread_cond_destroy(&oss->o_reg_cond);
	pthread_mutex_destroy(&oss->o_reg_lock);
}

int oss_reg_start(struct oss *oss)
{
	oss->o_reg_stop = false;
	int rc = -pthread_create(&oss->o_reg_thread, NULL, reg_main, oss);
	if (rc) {
		char rcs[96];
		WEIR_LOG_ERROR("rc=%s: cannot start the registration thread",
			       weir_rc_str(rc, rcs, sizeof(rcs)));
		return rc;
	}
	oss->o_reg_started = true;
	return 0;
}

void oss_reg_stop(struct oss *oss)
{
	if (!oss->o_reg_started)
		return;
	pthread_mutex_lock(&oss->o_reg_lock);
	oss->o_reg_stop = true;
	pthread_cond_broadcast(&oss->o_reg_cond);
	pthread_mutex_unlock(&oss->o_reg_lock);
	pthread_join(oss->o_reg_thread, NULL);
	oss->o_reg_started = false;
}
