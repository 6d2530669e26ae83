/*
 * mds/svc.c - RPC dispatch of the MDS: one handler per opcode, a table
 * from opcode to handler. Handlers run on the loop thread that read the
 * request; each unpacks and validates its body, calls the namespace
 * (mds/ns.c), and replies. Nothing from the network is trusted: a body that
 * does not unpack is -EPROTO, a missing required field -EINVAL. In the
 * recovery window after a restart, mds/recovery.c decides first which
 * requests wait (mds_recovery_gate()); open handles a client replays keep
 * the ids the last run gave them (mds_svc_handle_restore()), and new ids
 * skip them.
 */
#define _GNU_SOURCE
#include "mds_int.h"
#include "hsm.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/capa.h"
#include "common/log.h"
#include "common/util.h"
#include "weir.pb-c.h"

struct attr_msgs {
	struct mds_capa_msg cm;
	Weir__AttrRep rep;
	Weir__Attr attr;
	Weir__Fid fid;
	Weir__Layout layout;
	uint32_t osts[WEIR_LAYOUT_MAX_STRIPES];
};

static void fid_from_msg(const Weir__Fid *m, struct weir_fid *f)
{
	f->fid_seq = m ? m->seq : 0;
	f->fid_oid = m ? m->oid : 0;
}

/* \a f into \a m (initialised here). \return \a m. */
static Weir__Fid *fid_to_msg(const struct weir_fid *f, Weir__Fid *m)
{
	weir__fid__init(m);
	m->seq = f->fid_seq;
	m->oid = f->fid_oid;
	return m;
}

#define NOBODY_ID 65534u

/* The node-map group of the request this loop thread is handling. */
static __thread const struct mds_nm_group *svc_cur_group;

const struct mds_nm_group *mds_svc_group(const struct mds *m)
{
	return svc_cur_group ? svc_cur_group : &m->m_nodemap->nm_default;
}

/*
 * Who asks: the request's Cred (none: nobody), through the node map of the
 * connection's group (mds/nodemap.c): an untrusted group runs as its squash
 * ids; a trusted one as claimed, mapped, and with root squash (the default
 * group's is --root-squash: uid 0 and gid 0, also among the groups, become
 * 65534, as NFS's root_squash).
 */
static void cred_from_msg(const struct mds *m, const Weir__Cred *c, struct mds_cred *cr)
{
	memset(cr, 0, offsetof(struct mds_cred, cr_groups));
	cr->cr_uid = c ? c->uid : NOBODY_ID;
	cr->cr_gid = c ? c->gid : NOBODY_ID;
	for (size_t i = 0; c && i < c->n_groups && i < MDS_CRED_MAX_GROUPS; i++)
		cr->cr_groups[cr->cr_nr_groups++] = c->groups[i];
	mds_nodemap_ids(mds_svc_group(m), &cr->cr_uid, &cr->cr_gid, cr->cr_groups,
			&cr->cr_nr_groups);
}

void mds_svc_cred(const struct mds *m, const void *cred, struct mds_cred *cr)
{
	cred_from_msg(m, cred, cr);
}

static uint32_t path_flags(uint32_t pf)
{
	uint32_t f = 0;
	if (pf & WEIR__PATH_FLAG__PF_NOFOLLOW)
		f |= MDS_AT_NOFOLLOW;
	if (pf & WEIR__PATH_FLAG__PF_FOLLOW)
		f |= MDS_AT_FOLLOW;
	return f;
}

static void reply_attr(struct net_req *rq, int rc, const struct mds_inode *in);

/*
 * A resent create that the MDS applied already (mds/reply.c): answer with
 * what the new name holds now. \return true when answered; false when the
 * name is gone (then the handler does the request again).
 */
static bool replay_created(struct mds *m, struct net_req *rq, const struct mds_cred *cr,
			   const struct weir_fid *at, const char *path)
{
	struct mds_inode in;
	if (!mds_reply_replayed() || !path)
		return false;
	int rc = mds_ns_lookup(m->m_ns, cr, at, path, MDS_AT_NOFOLLOW, &in);
	if (rc == -EREMOTE) /* a remote directory's mkdir (mds/dtx.c): its FID, no more */
		rc = mds_ns_lookup_remote(m->m_ns, cr, at, path, &in);
	if (rc)
		return false;
	reply_attr(rq, 0, &in);
	return true;
}

/* Fill Attr and Layout messages from an inode; \a am owns the storage. */
static void attr_fill(struct attr_msgs *am, const struct mds_inode *in)
{
	weir__attr_rep__init(&am->rep);
	weir__attr__init(&am->attr);
	weir__fid__init(&am->fid);
	weir__layout__init(&am->layout);
	am->fid.seq = in->in_fid.fid_seq;
	am->fid.oid = in->in_fid.fid_oid;
	am->attr.fid = &am->fid;
	am->attr.mode = in->in_mode;
	am->attr.uid = in->in_uid;
	am->attr.gid = in->in_gid;
	am->attr.nlink = in->in_nlink;
	am->attr.size = in->in_size;
	am->attr.blocks = in->in_blocks;
	am->attr.atime_ns = in->in_atime_ns;
	am->attr.mtime_ns = in->in_mtime_ns;
	am->attr.ctime_ns = in->in_ctime_ns;
	am->attr.flags = (in->in_flags & MDS_INODE_F_SIZE_STALE) ? WEIR__ATTR_FLAG__AF_SIZE_STALE : 0;
	if (S_ISREG(in->in_mode) && (in->in_flags & MDS_INODE_F_RELEASED)) {
		am->attr.flags |= WEIR__ATTR_FLAG__AF_RELEASED; /* HSM: data in S3 only */
		am->attr.blocks = 0;
	}
	am->attr.blksize = 4096;
	am->attr.rdev = in->in_rdev;
	am->rep.attr = &am->attr;
	if (!in->in_has_layout)
		return;
	const struct weir_layout *lo = &in->in_layout;
	am->layout.pattern = lo->lo_pattern;
	am->layout.stripe_size = lo->lo_stripe_size;
	am->layout.stripe_count = lo->lo_stripe_count;
	am->layout.gen = lo->lo_gen;
	if (S_ISDIR(in->in_mode)) {
		am->layout.stripe_offset = (int32_t)lo->lo_osts[0];
	} else {
		uint32_t n = WEIR_MIN(lo->lo_stripe_count, WEIR_LAYOUT_MAX_STRIPES);
		memcpy(am->osts, lo->lo_osts, n * sizeof(uint32_t));
		am->layout.n_osts = n;
		am->layout.osts = am->osts;
		am->layout.stripe_offset = n ? (int32_t)lo->lo_osts[0] : -1;
		am->attr.blksize = lo->lo_stripe_size;
	}
	am->rep.layout = &am->layout;
}

/* AttrRep of a regular file: a capability for the glimpse (and \a extra rights). */
static void attr_capa(struct mds *m, struct attr_msgs *am, const struct mds_inode *in,
		      uint32_t extra)
{
	if (S_ISREG(in->in_mode) &&
	    mds_capa_sign(m, &in->in_fid, WEIR_CAPA_GETATTR | extra, &am->cm))
		am->rep.capa = &am->cm.cm_capa;
}

static void reply_attr_capa(struct mds *m, struct net_req *rq, int rc,
			    const struct mds_inode *in, uint32_t extra)
{
	struct attr_msgs am;
	if (rc) {
		net_req_reply(rq, rc, NULL, NULL, 0);
		return;
	}
	attr_fill(&am, in);
	attr_capa(m, &am, in, extra);
	net_req_reply(rq, 0, &am.rep.base, NULL, 0);
}

static void reply_attr(struct net_req *rq, int rc, const struct mds_inode *in)
{
	reply_attr_capa(rq->rq_srv_arg, rq, rc, in, 0);
}

/*
 * The directory a change of (\a at, \a path) changed, when \a path is one
 * name in it (not "." or ".."), read after the change into \a pm: its
 * attributes for the reply's `parent`, which the changer may cache under
 * the lease it holds on it (mds/mdl_svc.c: a change does not call back the
 * changer's own leases). \return &pm->attr, or NULL (a longer path, an
 * error: the client drops what it cached of the directory).
 */
static Weir__Attr *parent_attr(struct mds *m, const Weir__Fid *at, const char *path,
			       struct attr_msgs *pm)
{
	if (!path || !*path || strchr(path, '/') || !strcmp(path, ".") || !strcmp(path, ".."))
		return NULL;
	struct weir_fid dir;
	fid_from_msg(at, &dir);
	if (weir_fid_is_zero(&dir))
		dir = weir_fid_root();
	struct mds_inode in;
	if (mds_ns_getattr(m->m_ns, &dir, &in) || !S_ISDIR(in.in_mode))
		return NULL;
	attr_fill(pm, &in);
	return &pm->attr;
}

/*
 * reply_attr() of a change of (\a at, \a path), with the directory's
 * attributes after it and \a lease_bits granted on \a in.
 */
static void reply_attr_parent(struct net_req *rq, int rc, const struct mds_inode *in,
			      const Weir__Fid *at, const char *path, uint32_t lease_bits)
{
	struct mds *m = rq->rq_srv_arg;
	struct attr_msgs am, pm;
	if (rc) {
		net_req_reply(rq, rc, NULL, NULL, 0);
		return;
	}
	attr_fill(&am, in);
	attr_capa(m, &am, in, 0);
	am.rep.parent = parent_attr(m, at, path, &pm);
	am.rep.lease_bits = lease_bits;
	net_req_reply(rq, 0, &am.rep.base, NULL, 0);
}

static void layout_req_from_msg(const Weir__Layout *l, struct mds_layout_req *lr)
{
	memset(lr, 0, sizeof(*lr));
	lr->lr_stripe_offset = -1;
	if (!l)
		return;
	lr->lr_stripe_count = l->stripe_count;
	lr->lr_stripe_size = l->stripe_size;
	lr->lr_stripe_offset = l->stripe_offset;
}

/* ------------------------------------------------------------ handles */

static uint64_t handle_new(struct mds *m, const struct weir_fid *fid, bool writer,
			   uint64_t session, uint32_t rights)
{
	struct mds_handle *h = calloc(1, sizeof(*h));
	if (!h)
		return 0;
	pthread_mutex_lock(&m->m_handle_lock);
	bool taken;
	do { /* not the id of a handle a client replayed from the last run */
		h->h_id = ++m->m_next_handle;
		taken = !h->h_id;
		for (struct mds_handle *o = m->m_handles[h->h_id % MDS_HANDLE_BUCKETS]; o;
		     o = o->h_next)
			taken |= o->h_id == h->h_id;
	} while (taken);
	h->h_fid = *fid;
	h->h_writer = writer;
	h->h_rights = rights;
	h->h_session = session;
	struct mds_handle **s = &m->m_handles[h->h_id % MDS_HANDLE_BUCKETS];
	h->h_next = *s;
	*s = h;
	pthread_mutex_unlock(&m->m_handle_lock);
	return h->h_id;
}

int mds_svc_handle_restore(struct mds *m, uint64_t id, const struct weir_fid *fid, bool writer,
			   uint64_t session, uint32_t rights)
{
	struct mds_handle *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	if (!id) {
		free(h);
		return -EINVAL;
	}
	h->h_id = id;
	h->h_fid = *fid;
	h->h_writer = writer;
	h->h_rights = rights;
	h->h_session = session;
	pthread_mutex_lock(&m->m_handle_lock);
	struct mds_handle **s = &m->m_handles[id % MDS_HANDLE_BUCKETS];
	for (struct mds_handle *o = *s; o; o = o->h_next) {
		if (o->h_id == id) {
			pthread_mutex_unlock(&m->m_handle_lock);
			free(h);
			return -EEXIST;
		}
	}
	h->h_next = *s;
	*s = h;
	pthread_mutex_unlock(&m->m_handle_lock);
	return 0;
}

/*
 * Remove a handle; \return true if it existed, was on \a fid and belongs to
 * the closing session \a *session (a handle opened without a session can be
 * closed by anyone). On success \a *session is the handle's session.
 */
static bool handle_take(struct mds *m, uint64_t id, const struct weir_fid *fid, bool *writer,
			uint64_t *session)
{
	bool found = false;
	pthread_mutex_lock(&m->m_handle_lock);
	struct mds_handle **pp = &m->m_handles[id % MDS_HANDLE_BUCKETS];
	for (; *pp; pp = &(*pp)->h_next) {
		struct mds_handle *h = *pp;
		if (h->h_id == id && weir_fid_eq(&h->h_fid, fid) &&
		    (!h->h_session || h->h_session == *session)) {
			*pp = h->h_next;
			*writer = h->h_writer;
			*session = h->h_session;
			free(h);
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&m->m_handle_lock);
	return found;
}

int mds_svc_handle_drop(struct mds *m, uint64_t id, const struct weir_fid *fid,
			uint64_t session)
{
	bool writer = false;
	if (!handle_take(m, id, fid, &writer, &session))
		return -ENOENT;
	mds_ns_close_file(m->m_ns, fid, writer, NULL);
	return 0;
}

uint32_t mds_svc_handle_rights(struct mds *m, uint64_t id, uint64_t session,
			       const struct weir_fid *fid)
{
	uint32_t r = 0;
	pthread_mutex_lock(&m->m_handle_lock);
	for (struct mds_handle *h = m->m_handles[id % MDS_HANDLE_BUCKETS]; h; h = h->h_next)
		if (h->h_id == id) {
			if (h->h_session == session && weir_fid_eq(&h->h_fid, fid))
				r = h->h_rights;
			break;
		}
	pthread_mutex_unlock(&m->m_handle_lock);
	return r;
}

bool mds_svc_handle_usable(struct mds *m, uint64_t id, uint64_t session,
			   const struct weir_fid *fid)
{
	bool ok = true;
	pthread_mutex_lock(&m->m_handle_lock);
	for (struct mds_handle *h = m->m_handles[id % MDS_HANDLE_BUCKETS]; h; h = h->h_next) {
		if (h->h_id == id) {
			ok = h->h_session == session && weir_fid_eq(&h->h_fid, fid);
			break;
		}
	}
	pthread_mutex_unlock(&m->m_handle_lock);
	return ok;
}

struct mds_handle *mds_svc_handles_take(struct mds *m, uint64_t session)
{
	struct mds_handle *list = NULL;
	pthread_mutex_lock(&m->m_handle_lock);
	for (int b = 0; b < MDS_HANDLE_BUCKETS; b++) {
		for (struct mds_handle **pp = &m->m_handles[b]; *pp;) {
			struct mds_handle *h = *pp;
			if (h->h_session != session) {
				pp = &h->h_next;
				continue;
			}
			*pp = h->h_next;
			h->h_next = list;
			list = h;
		}
	}
	pthread_mutex_unlock(&m->m_handle_lock);
	return list;
}

/* ------------------------------------------------------------ handlers */

/* Unpack a request body; on a malformed one, reply -EPROTO and return NULL. */
static void *unpack_or_reply(struct net_req *rq, const ProtobufCMessageDescriptor *d)
{
	void *req = net_req_unpack(rq, d);
	if (!req)
		net_req_reply(rq, -EPROTO, NULL, NULL, 0);
	return req;
}

static void op_connect(struct mds *m, struct net_req *rq)
{
	Weir__ConnectReq *req = unpack_or_reply(rq, &weir__connect_req__descriptor);
	if (!req)
		return;
	Weir__ConnectRep rep = WEIR__CONNECT_REP__INIT;
	Weir__Fid root = WEIR__FID__INIT;
	root.seq = WEIR_FID_SEQ_ROOT;
	root.oid = 1;
	rep.root = &root;
	rep.mdt_index = 0;
	rep.fs_name = (char *)m->m_conf.mc_fsname;
	rep.boot_ns = (uint64_t)m->m_boot_ns;
	int rc = 0;
	if (req->version != WEIR_FRAME_VERSION) {
		WEIR_LOG_WARN("peer=%s version=%u: client speaks another protocol version",
			      rq->rq_peer, req->version);
		rc = -EPROTO;
	} else {
		WEIR_LOG_INFO("peer=%s client=%s: connected", rq->rq_peer, req->client_name);
		rc = mds_session_new(m, rq->rq_peer, req->client_name, &rep.session);
		if (!rc)
			mds_mdl_session_new(m, rep.session, req->client_uuid.data,
					    req->client_uuid.len);
		rep.mdl_max = mds_mdl_max(m);
		/* a client of the last run replays in the recovery window (mds/recovery.c) */
		bool recovering = false, evicted = false;
		if (!rc)
			mds_recovery_connect(m, req->client_uuid.data, req->client_uuid.len,
					     req->client_name, rep.session, &recovering, &evicted);
		rep.recovering = recovering;
		rep.recovery_evicted = evicted;
		rep.lease_ms = m->m_conf.mc_lease_ms;
		rep.capa_ttl_s = m->m_capa_on ? m->m_conf.mc_capa_timeout_s : 0;
	}
	net_req_reply(rq, rc, rc ? NULL : &rep.base, NULL, 0);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

/*
 * Reply \a am to a LOOKUP, with its walk (when \a w holds one): each
 * directory searched, leased LOOKUP|ATTR to \a session (\a gen read before
 * the namespace), and the name found in it. The reply proves the caller's
 * search permission on each; the client keeps that with the leases.
 */
static void reply_walk(struct mds *m, struct net_req *rq, struct attr_msgs *am,
		       const struct ns_walk *w, uint64_t session, uint64_t gen)
{
	struct walk_msg {
		struct attr_msgs wm_dir;
		Weir__WalkStep wm_step;
		Weir__Fid wm_child;
	} *wm = NULL;
	Weir__WalkStep *steps[NS_WALK_MAX];
	if (w && !w->w_broken && w->w_nr)
		wm = calloc(w->w_nr, sizeof(*wm));
	if (wm) {
		for (uint32_t i = 0; i < w->w_nr; i++) {
			const struct ns_walk_step *st = &w->w_steps[i];
			attr_fill(&wm[i].wm_dir, &st->ws_dir);
			weir__walk_step__init(&wm[i].wm_step);
			weir__fid__init(&wm[i].wm_child);
			wm[i].wm_child.seq = st->ws_child.fid_seq;
			wm[i].wm_child.oid = st->ws_child.fid_oid;
			wm[i].wm_step.dir = &wm[i].wm_dir.attr;
			wm[i].wm_step.lease_bits =
			    mds_mdl_grant(m, session, WEIR__MDL_BITS__MDL_LOOKUP | WEIR__MDL_BITS__MDL_ATTR,
					  gen, &st->ws_dir);
			wm[i].wm_step.name = (char *)st->ws_name;
			wm[i].wm_step.child = &wm[i].wm_child;
			wm[i].wm_step.child_type = st->ws_type;
			steps[i] = &wm[i].wm_step;
		}
		am->rep.n_walk = w->w_nr;
		am->rep.walk = steps;
	}
	net_req_reply(rq, 0, &am->rep.base, NULL, 0);
	free(wm);
}

/*
 * MDS_LOOKUP with PF_REDIRECT: a client's call met -EREMOTE (its path
 * crosses to another MDT); it learns where the walk goes on, or the inode
 * when the path now resolves here (docs/dne.md, step 2). With \a walk
 * (the client asked for a walk under leases to \a session), the reply of a
 * redirect also carries the walk up to the name that crosses, leased like a
 * LOOKUP's, so the client sends its next call under that name straight to
 * the other MDT (its name cache resolves the directory to its FID). The
 * inode itself is not leased.
 */
static void op_lookup_redirect(struct mds *m, struct net_req *rq, const Weir__PathReq *req,
			       const struct mds_cred *cr, const struct weir_fid *at,
			       struct ns_walk *walk, uint64_t gen)
{
	struct mds_inode in;
	struct weir_fid redir;
	char *rest = NULL;
	int rc = mds_ns_lookup_redirect(m->m_ns, cr, at, req->path, path_flags(req->flags), &in,
					&redir, &rest, walk);
	if (rc) {
		net_req_reply(rq, rc, NULL, NULL, 0);
	} else if (rest) {
		struct attr_msgs *am = calloc(1, sizeof(*am));
		Weir__Fid pf;
		fid_to_msg(&redir, &pf);
		if (!am) {
			net_req_reply(rq, -ENOMEM, NULL, NULL, 0);
		} else {
			weir__attr_rep__init(&am->rep);
			am->rep.redirect_at = &pf;
			am->rep.redirect_path = rest;
			reply_walk(m, rq, am, walk, req->lease_session, gen);
			free(am);
		}
	} else {
		reply_attr(rq, 0, &in);
	}
	free(rest);
}

static void op_lookup(struct mds *m, struct net_req *rq)
{
	Weir__PathReq *req = unpack_or_reply(rq, &weir__path_req__descriptor);
	if (!req)
		return;
	struct weir_fid at;
	struct mds_inode in;
	struct mds_cred cr;
	cred_from_msg(m, req->cred, &cr);
	fid_from_msg(req->at, &at);
	uint64_t gen = req->lease_want ? mds_mdl_gen(m) : 0; /* before the namespace is read */
	struct ns_walk *walk = NULL;
	if (req->walk && req->lease_want && req->lease_session) {
		/* ~30 KiB, on every walked LOOKUP: not zeroed, only steps
		 * below w_nr are read (none without memory: the lookup goes on) */
		walk = malloc(sizeof(*walk));
		if (walk) {
			walk->w_nr = 0;
			walk->w_broken = false;
		}
	}
	if (req->flags & WEIR__PATH_FLAG__PF_REDIRECT) {
		op_lookup_redirect(m, rq, req, &cr, &at, walk, gen);
		free(walk);
		protobuf_c_message_free_unpacked(&req->base, NULL);
		return;
	}
	int rc = walk ? mds_ns_lookup_walk(m->m_ns, &cr, &at, req->path, path_flags(req->flags),
					   &in, walk)
		      : mds_ns_lookup(m->m_ns, &cr, &at, req->path, path_flags(req->flags), &in);
	if (rc) {
		net_req_reply(rq, rc, NULL, NULL, 0);
	} else {
		struct attr_msgs am;
		attr_fill(&am, &in);
		attr_capa(m, &am, &in, 0);
		am.rep.lease_bits = mds_mdl_grant(m, req->lease_session, req->lease_want, gen, &in);
		reply_walk(m, rq, &am, walk, req->lease_session, gen);
	}
	free(walk);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

static void op_getattr(struct mds *m, struct net_req *rq)
{
	Weir__FidReq *req = unpack_or_reply(rq, &weir__fid_req__descriptor);
	if (!req)
		return;
	struct weir_fid fid;
	struct mds_inode in;
	struct attr_msgs am;
	fid_from_msg(req->fid, &fid);
	uint64_t gen = req->lease_want ? mds_mdl_gen(m) : 0; /* before the namespace is read */
	int rc = req->fid ? mds_ns_getattr(m->m_ns, &fid, &in) : -EINVAL;
	uint64_t epoch = 0;
	if (!rc && S_ISREG(in.in_mode) && (in.in_flags & MDS_INODE_F_SIZE_STALE)) {
		/*
		 * Open for writing: the truncate epoch a writer's size report
		 * must carry (mds_ns_size_epoch). Read before the inode is
		 * read again: a truncate between the two then outdates the
		 * report (safe); the other order could pair the size from
		 * before a truncate with the epoch after it.
		 */
		epoch = mds_ns_size_epoch(m->m_ns, &fid);
		rc = mds_ns_getattr(m->m_ns, &fid, &in);
	}
	if (rc) {
		net_req_reply(rq, rc, NULL, NULL, 0);
	} else {
		attr_fill(&am, &in);
		attr_capa(m, &am, &in, 0);
		am.attr.size_epoch = epoch;
		am.rep.lease_bits = mds_mdl_grant(m, req->lease_session, req->lease_want, gen, &in);
		net_req_reply(rq, 0, &am.rep.base, NULL, 0);
	}
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

static void op_setattr(struct mds *m, struct net_req *rq)
{
	Weir__SetattrReq *req = unpack_or_reply(rq, &weir__setattr_req__descriptor);
	if (!req)
		return;
	struct weir_fid fid;
	struct mds_inode in;
	struct mds_setattr sa = {
		.sa_valid = req->valid,
		.sa_mode = req->mode,
		.sa_uid = req->uid,
		.sa_gid = req->gid,
		.sa_size = req->size,
		.sa_atime_ns = req->atime_ns,
		.sa_mtime_ns = req->mtime_ns,
	};
	struct weir_fid at;
	struct mds_cred cr;
	cred_from_msg(m, req->cred, &cr);
	fid_from_msg(req->fid, &fid);
	fid_from_msg(req->at, &at);
	/* by FID (fchmod, ftruncate...), else by path from at */
	int rc = req->fid ? mds_ns_setattr(m->m_ns, &cr, &fid, NULL, 0, &sa, &in)
			  : mds_ns_setattr(m->m_ns, &cr, &at, req->path, path_flags(req->flags),
					   &sa, &in);
	if (rc == -EAGAIN)
		mds_destroy_kick(m); /* HSM: a truncate waits for a released file's old objects */
	/* a size change was allowed: the caller truncates the objects next */
	reply_attr_capa(m, rq, rc, &in, (req->valid & MDS_SA_SIZE) ? WEIR_CAPA_PUNCH : 0);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

/*
 * A create met OSTs still re-registering after a start (MDS_RC_PARK from
 * mds_cmap_choose_wait): park \a rq, or run \a fn again at once when the
 * wait just ended. \return 0 (\a rq is no longer the caller's), or -errno
 * for the caller to reply.
 */
static int park_create(struct mds *m, struct net_req *rq,
		       void (*fn)(struct mds *m, struct net_req *rq))
{
	int rc = mds_cmap_park(m, rq);
	if (rc == -EAGAIN) {
		fn(m, rq);
		return 0;
	}
	return rc;
}

static void op_open(struct mds *m, struct net_req *rq)
{
	Weir__OpenReq *req = unpack_or_reply(rq, &weir__open_req__descriptor);
	if (!req)
		return;
	struct weir_fid at;
	struct mds_inode in;
	struct mds_layout_req lr;
	bool created = false;
	fid_from_msg(req->at, &at);
	layout_req_from_msg(req->layout, &lr);
	if (mds_reply_replayed()) /* applied before a reset: open what it made (mds/reply.c) */
		req->flags &= ~(uint32_t)(WEIR__OPEN_FLAG__OF_EXCL | WEIR__OPEN_FLAG__OF_TRUNC);
	/* a session, when given, must be live: an evicted client reconnects first;
	 * a request re-run in the recovery window names the one of the last run */
	req->session = mds_recovery_session_map(m, req->session);
	int rc = req->session ? mds_session_touch(m, req->session) : 0;
	struct mds_cred cr;
	cred_from_msg(m, req->cred, &cr);
	/* before the namespace: a change of the new file since refuses its lease */
	uint64_t gen = req->lease_want ? mds_mdl_gen(m) : 0;
	if (!rc)
		rc = mds_ns_open_file(m->m_ns, &cr, &at, req->path, req->flags, req->mode, &lr,
				      mds_cmap_choose_wait, m, &in, &created);
	if (rc == MDS_RC_PARK) {
		rc = park_create(m, rq, op_open);
		if (!rc)
			goto out;
	}
	if (rc) {
		if (rc == -EAGAIN)
			mds_destroy_kick(m); /* HSM: O_TRUNC waits for a released file's old objects */
		net_req_reply(rq, rc, NULL, NULL, 0);
		goto out;
	}
	/* an OF_HSM handle (the copytool) reports nothing at close */
	bool writer = (req->flags & MDS_OF_WRITE) && !(req->flags & MDS_OF_HSM);
	/*
	 * Another open for writing makes the size the OSTs' for everyone: a
	 * lease its creator holds on the file's attributes (OpenRep.lease_bits)
	 * is called back before this reply. (The first open for writing
	 * commits SIZE_STALE, a change already; a later one commits nothing.)
	 */
	if (writer && !created && S_ISREG(in.in_mode))
		mds_mdl_note(m, &in.in_fid, MDL_ATTR | MDL_LAYOUT);
	uint32_t rights = mds_capa_rights_of_open(req->flags);
	uint64_t h = handle_new(m, &in.in_fid, writer, req->session, rights);
	if (h && req->session && !mds_session_alive(m, req->session)) {
		/* evicted meanwhile, maybe before its handles were collected */
		uint64_t sess;
		rc = handle_take(m, h, &in.in_fid, &writer, &sess) ? -ESTALE : 0;
		if (rc) {
			mds_ns_close_file(m->m_ns, &in.in_fid, writer, NULL);
			net_req_reply(rq, rc, NULL, NULL, 0);
			goto out;
		}
	}
	if (!h) {
		mds_ns_close_file(m->m_ns, &in.in_fid, writer, NULL);
		net_req_reply(rq, -ENOMEM, NULL, NULL, 0);
		goto out;
	}
	struct attr_msgs am;
	attr_fill(&am, &in);
	if (in.in_flags & MDS_INODE_F_TRUNCATED)
		am.attr.flags |= WEIR__ATTR_FLAG__AF_TRUNCATED; /* the opener finishes the truncate */
	Weir__OpenRep rep = WEIR__OPEN_REP__INIT;
	struct mds_capa_msg cm;
	rep.attr = &am.attr;
	rep.layout = am.rep.layout;
	rep.created = created;
	rep.handle = h;
	if (created && writer && req->session == req->lease_session)
		rep.lease_bits = mds_mdl_grant_creator(m, req->lease_session,
						       req->lease_want & MDL_ATTR, gen, &in);
	struct attr_msgs pm;
	if (created)
		rep.parent = parent_attr(m, req->at, req->path, &pm);
	/* a directory's "..", for the opener's listing, as a LOOKUP of it would
	 * answer (search permission on the directory; a removed one's is
	 * looked up, and fails, as before) */
	Weir__Fid dpm;
	if (S_ISDIR(in.in_mode) && in.in_nlink && !weir_fid_is_zero(&in.in_parent) &&
	    !mds_perm_check(&cr, &in, MDS_MAY_EXEC))
		rep.dir_parent = fid_to_msg(&in.in_parent, &dpm);
	if (S_ISREG(in.in_mode) && mds_capa_sign(m, &in.in_fid, rights, &cm))
		rep.capa = &cm.cm_capa;
	uint8_t objs[WEIR_LAYOUT_MAX_STRIPES / 8];
	size_t nobjs = 0;
	if (S_ISREG(in.in_mode) && rep.layout &&
	    !mds_ns_objmap_get(m->m_ns, &in.in_fid, objs, sizeof(objs), &nobjs) && nobjs) {
		am.layout.objects.data = objs; /* the objects known to exist */
		am.layout.objects.len = nobjs;
	}
	net_req_reply(rq, 0, &rep.base, NULL, 0);
out:
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

static void op_close(struct mds *m, struct net_req *rq)
{
	Weir__CloseReq *req = unpack_or_reply(rq, &weir__close_req__descriptor);
	if (!req)
		return;
	struct weir_fid fid;
	bool writer = false;
	uint64_t gen = req->lease_want ? mds_mdl_gen(m) : 0; /* before the close changes it */
	/* only the opener's session may close a handle (the same client's of
	 * before a restart, for a close built then: mds/recovery.c) */
	uint64_t h_session = mds_recovery_session_map(m, req->session);
	int rc = 0;
	struct mds_write_report wr = {
		.wr_has_size = req->has_size,
		.wr_size = req->size,
		.wr_blocks = req->blocks,
		.wr_mtime_ns = req->mtime_ns,
		.wr_size_epoch = req->size_epoch,
	};
	fid_from_msg(req->fid, &fid);
	if (mds_reply_replayed()) {
		/* done before a reset (mds/reply.c) */
	} else if (!req->fid) {
		rc = -EINVAL;
	} else if (!handle_take(m, req->handle, &fid, &writer, &h_session)) {
		/* unknown handle: the MDS restarted since the open (open counts
		 * were lost with it) -- still take the size a writer reports */
		WEIR_LOG_INFO("peer=%s fid=" WEIR_FID_F " handle=%llu: close of an unknown handle",
			      rq->rq_peer, WEIR_FID_P(&fid), (unsigned long long)req->handle);
		if (req->has_size || req->mtime_ns)
			rc = mds_ns_update_size(m->m_ns, &fid, &wr);
	} else {
		bool queued = false;
		rc = ns_close_file(m->m_ns, &fid, writer, &wr, &queued);
		if (queued)
			mds_destroy_kick(m); /* the last close of an open-unlinked file */
	}
	if (req->fid && req->objects_written.len) /* a lost one then reads -EIO */
		mds_ns_objmap_or(m->m_ns, &fid, req->objects_written.data,
				 req->objects_written.len, false);
	/* POSIX: any close by the process drops its locks on the file */
	if (req->fid)
		mds_lease_on_close(m, &fid, h_session, req->pid, req->handle);
	/*
	 * The file's attributes after the close, leased to the closer when
	 * asked (refused while another writer keeps its size the OSTs', or a
	 * change came since gen): a FUSE mount's stat after a create or a
	 * write then needs no MDS call. The closer's own change does not call
	 * back its own lease.
	 */
	struct attr_msgs am;
	struct mds_inode in;
	bool with_attr = !rc && req->fid && req->lease_want && !mds_ns_getattr(m->m_ns, &fid, &in);
	if (with_attr) {
		attr_fill(&am, &in);
		am.rep.lease_bits = mds_mdl_grant(m, req->lease_session, req->lease_want, gen, &in);
	}
	net_req_reply(rq, rc, with_attr ? &am.rep.base : NULL, NULL, 0);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

static void op_sync(struct mds *m, struct net_req *rq)
{
	Weir__SyncReq *req = unpack_or_reply(rq, &weir__sync_req__descriptor);
	if (!req)
		return;
	int rc = 0;
	if (req->fid && (req->has_size || req->mtime_ns)) {
		struct weir_fid fid;
		struct mds_write_report wr = {
			.wr_has_size = req->has_size,
			.wr_size = req->size,
			.wr_blocks = req->blocks,
			.wr_mtime_ns = req->mtime_ns,
			.wr_size_epoch = req->size_epoch,
		};
		fid_from_msg(req->fid, &fid);
		rc = mds_ns_update_size(m->m_ns, &fid, &wr);
	}
	if (!rc && req->fid && req->objects_written.len) {
		struct weir_fid fid;
		fid_from_msg(req->fid, &fid);
		rc = mds_ns_objmap_or(m->m_ns, &fid, req->objects_written.data,
				      req->objects_written.len, false);
	}
	protobuf_c_message_free_unpacked(&req->base, NULL);
	if (rc)
		net_req_reply(rq, rc, NULL, NULL, 0);
	else
		mds_commit_wait_async(m, rq);
}

static void op_mkdir(struct mds *m, struct net_req *rq)
{
	Weir__MkdirReq *req = unpack_or_reply(rq, &weir__mkdir_req__descriptor);
	if (!req)
		return;
	struct weir_fid at;
	struct mds_inode in;
	struct mds_cred cr;
	cred_from_msg(m, req->cred, &cr);
	fid_from_msg(req->at, &at);
	if (replay_created(m, rq, &cr, &at, req->path))
		goto out;
	/*
	 * A lease on the new directory for its maker, which then knows it
	 * empty: the generation is read before the mkdir, so a change of it
	 * by another client before the grant refuses it (one after is called
	 * back; the maker's own change does not call back its own lease).
	 */
	uint64_t gen = req->lease_want ? mds_mdl_gen(m) : 0;
	int rc;
	bool remote = req->mdt_index && req->mdt_index - 1 != m->m_conf.mc_mdt_index;
	if (req->mdt_index > WEIR_MDT_MAX)
		rc = -EINVAL;
	else if (remote) /* `weir mkdir -i`: a remote directory (mds/dtx.c) */
		rc = mds_ns_mkdir_remote(m->m_ns, &cr, &at, req->path, req->mode,
					 req->mdt_index - 1, &in);
	else
		rc = mds_ns_mkdir(m->m_ns, &cr, &at, req->path, req->mode, &in);
	/* (no lease on a remote directory: this MDT cannot call it back) */
	uint32_t bits = rc || remote ? 0
				     : mds_mdl_grant(m, req->lease_session, req->lease_want, gen,
						     &in);
	reply_attr_parent(rq, rc, &in, req->at, req->path, bits);
out:
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

#define READDIR_MAX 4096
#define READDIR_PLUS_MAX 1024 /* attributes and layouts: a reply well under a frame */

/*
 * READDIR, and with req->plus readdirplus: each entry carries its
 * attributes and layout (no capability) and, asked with lease_session and
 * lease_want, the metadata lease granted on it (as a GETATTR's: the
 * generation is read before the namespace, so a change in between refuses
 * the lease). An entry whose inode cannot be read (gone since the listing)
 * goes without attributes.
 */
static void op_readdir(struct mds *m, struct net_req *rq)
{
	Weir__ReaddirReq *req = unpack_or_reply(rq, &weir__readdir_req__descriptor);
	if (!req)
		return;
	struct weir_fid dir;
	uint32_t lim = req->plus ? READDIR_PLUS_MAX : READDIR_MAX;
	uint32_t max = req->max_entries ? WEIR_MIN(req->max_entries, lim) : 1024;
	uint32_t cap = max + 64, nr = 0;
	bool eof = false;
	struct mds_dirent *ents = calloc(cap, sizeof(*ents));
	Weir__Dirent *d = calloc(cap, sizeof(*d));
	Weir__Dirent **dp = calloc(cap, sizeof(*dp));
	Weir__Fid *fids = calloc(cap, sizeof(*fids));
	struct attr_msgs *am = req->plus ? calloc(cap, sizeof(*am)) : NULL;
	int rc = (ents && d && dp && fids && (am || !req->plus)) ? 0 : -ENOMEM;
	struct mds_cred cr;
	cred_from_msg(m, req->cred, &cr);
	fid_from_msg(req->dir, &dir);
	uint64_t gen = req->plus && req->lease_want ? mds_mdl_gen(m) : 0; /* before the namespace */
	if (!rc)
		rc = req->dir ? mds_ns_readdir(m->m_ns, &cr, &dir, req->cookie, max, ents, cap, &nr,
					       &eof)
			      : -EINVAL;
	if (rc) {
		net_req_reply(rq, rc, NULL, NULL, 0);
		goto out;
	}
	Weir__ReaddirRep rep = WEIR__READDIR_REP__INIT;
	for (uint32_t i = 0; i < nr; i++) {
		weir__dirent__init(&d[i]);
		weir__fid__init(&fids[i]);
		fids[i].seq = ents[i].de_fid.fid_seq;
		fids[i].oid = ents[i].de_fid.fid_oid;
		d[i].name = ents[i].de_name;
		d[i].fid = &fids[i];
		d[i].type = ents[i].de_type;
		d[i].cookie = ents[i].de_cookie;
		dp[i] = &d[i];
		struct mds_inode in;
		if (am && !mds_ns_getattr(m->m_ns, &ents[i].de_fid, &in)) {
			attr_fill(&am[i], &in);
			am[i].rep.lease_bits =
				mds_mdl_grant(m, req->lease_session, req->lease_want, gen, &in);
			d[i].attr = &am[i].rep;
		}
	}
	rep.n_entries = nr;
	rep.entries = dp;
	rep.eof = eof;
	net_req_reply(rq, 0, &rep.base, NULL, 0);
out:
	free(ents);
	free(d);
	free(dp);
	free(fids);
	free(am);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

static void op_unlink(struct mds *m, struct net_req *rq)
{
	Weir__UnlinkReq *req = unpack_or_reply(rq, &weir__unlink_req__descriptor);
	if (!req)
		return;
	struct weir_fid at;
	struct mds_cred cr;
	cred_from_msg(m, req->cred, &cr);
	fid_from_msg(req->at, &at);
	/* done before a reset (mds/reply.c): not -ENOENT now */
	struct weir_fid expect;
	if (req->fid)
		fid_from_msg(req->fid, &expect);
	struct mds_unlink_res ur; /* (a replayed one tells nothing) */
	memset(&ur, 0, sizeof(ur));
	int rc = mds_reply_replayed() ? 0
				      : mds_ns_unlink_fid(m->m_ns, &cr, &at, req->path, req->is_dir,
							  req->fid ? &expect : NULL, &ur);
	if (!rc && !req->is_dir)
		mds_destroy_kick(m);
	Weir__AttrRep rep = WEIR__ATTR_REP__INIT;
	struct attr_msgs pm;
	Weir__Fid gm;
	bool told = !rc && !weir_fid_is_zero(&ur.ur_gone);
	if (told) { /* the directory as the unlink left it, whatever the path */
		attr_fill(&pm, &ur.ur_dir);
		rep.parent = &pm.attr;
	}
	rep.unlinked = told ? fid_to_msg(&ur.ur_gone, &gm) : NULL;
	net_req_reply(rq, rc, rep.parent || rep.unlinked ? &rep.base : NULL, NULL, 0);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

static void op_rename(struct mds *m, struct net_req *rq)
{
	Weir__RenameReq *req = unpack_or_reply(rq, &weir__rename_req__descriptor);
	if (!req)
		return;
	struct weir_fid at, dst_at;
	struct mds_cred cr;
	cred_from_msg(m, req->cred, &cr);
	fid_from_msg(req->at, &at);
	fid_from_msg(req->dst_at ? req->dst_at : req->at, &dst_at);
	/* done before a reset (mds/reply.c): never twice (a replayed one tells
	 * no FIDs: the client then forgets everything it may have cached) */
	struct weir_fid moved = { 0, 0 }, victim = { 0, 0 };
	int rc = mds_reply_replayed() ? 0
				      : mds_ns_rename_fids(m->m_ns, &cr, &at, req->src, &dst_at,
							   req->dst, req->flags, &moved, &victim);
	if (!rc)
		mds_destroy_kick(m);
	Weir__RenameRep rep = WEIR__RENAME_REP__INIT;
	Weir__Fid pm, pv;
	if (!weir_fid_is_zero(&moved))
		rep.moved = fid_to_msg(&moved, &pm);
	if (!weir_fid_is_zero(&victim))
		rep.victim = fid_to_msg(&victim, &pv);
	net_req_reply(rq, rc, rc ? NULL : &rep.base, NULL, 0);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

static void op_statfs(struct mds *m, struct net_req *rq)
{
	Weir__StatfsRep rep = WEIR__STATFS_REP__INIT;
	int rc = mds_cmap_statfs(m, &rep);
	net_req_reply(rq, rc, rc ? NULL : &rep.base, NULL, 0);
	mds_cmap_statfs_free(&rep);
}

static void op_set_layout(struct mds *m, struct net_req *rq)
{
	Weir__SetLayoutReq *req = unpack_or_reply(rq, &weir__set_layout_req__descriptor);
	if (!req)
		return;
	struct weir_fid at;
	struct mds_inode in;
	struct mds_layout_req lr;
	struct mds_cred cr;
	cred_from_msg(m, req->cred, &cr);
	fid_from_msg(req->at, &at);
	layout_req_from_msg(req->layout, &lr);
	int rc = 0;
	if (!mds_svc_group(m)->ng_admin) {
		/* the default layout of / is the whole filesystem's: admin groups only */
		struct mds_inode t;
		struct weir_fid root = weir_fid_root();
		if (!mds_ns_lookup(m->m_ns, &cr, &at, req->path, 0, &t) &&
		    weir_fid_eq(&t.in_fid, &root)) {
			WEIR_LOG_WARN_RL("peer=%s group=%s: setting the layout of / refused: not an"
					 " admin group (-EPERM)",
					 rq->rq_peer, mds_svc_group(m)->ng_name);
			rc = -EPERM;
		}
	}
	if (!rc)
		rc = req->layout ? mds_ns_set_layout(m->m_ns, &cr, &at, req->path, &lr,
						     req->create, req->mode, mds_cmap_choose_wait,
						     m, &in)
				 : -EINVAL;
	if (rc == MDS_RC_PARK && !(rc = park_create(m, rq, op_set_layout))) {
		protobuf_c_message_free_unpacked(&req->base, NULL);
		return;
	}
	reply_attr(rq, rc, &in);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

/* ------------------------------------------------------------ POSIX namespace (16-39) */

static void op_link(struct mds *m, struct net_req *rq)
{
	Weir__LinkReq *req = unpack_or_reply(rq, &weir__link_req__descriptor);
	if (!req)
		return;
	struct weir_fid src_at, dst_at;
	struct mds_inode in;
	struct mds_cred cr;
	cred_from_msg(m, req->cred, &cr);
	fid_from_msg(req->src_at, &src_at);
	fid_from_msg(req->dst_at, &dst_at);
	if (replay_created(m, rq, &cr, &dst_at, req->dst))
		goto out;
	int rc = mds_ns_link(m->m_ns, &cr, &src_at, req->src, &dst_at, req->dst,
			     path_flags(req->flags), &in);
	reply_attr(rq, rc, &in);
out:
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

static void op_symlink(struct mds *m, struct net_req *rq)
{
	Weir__SymlinkReq *req = unpack_or_reply(rq, &weir__symlink_req__descriptor);
	if (!req)
		return;
	struct weir_fid at;
	struct mds_inode in;
	struct mds_cred cr;
	cred_from_msg(m, req->cred, &cr);
	fid_from_msg(req->at, &at);
	if (replay_created(m, rq, &cr, &at, req->path))
		goto out;
	int rc = mds_ns_symlink(m->m_ns, &cr, &at, req->path, req->target, &in);
	reply_attr_parent(rq, rc, &in, req->at, req->path, 0);
out:
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

static void op_readlink(struct mds *m, struct net_req *rq)
{
	Weir__PathReq *req = unpack_or_reply(rq, &weir__path_req__descriptor);
	if (!req)
		return;
	char target[MDS_SYMLINK_MAX + 1];
	size_t len = 0;
	struct weir_fid at;
	struct mds_cred cr;
	cred_from_msg(m, req->cred, &cr);
	fid_from_msg(req->at, &at);
	int rc = mds_ns_readlink(m->m_ns, &cr, &at, req->path, target, sizeof(target), &len);
	Weir__ReadlinkRep rep = WEIR__READLINK_REP__INIT;
	rep.target = target;
	net_req_reply(rq, rc, rc ? NULL : &rep.base, NULL, 0);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

static void op_mknod(struct mds *m, struct net_req *rq)
{
	Weir__MknodReq *req = unpack_or_reply(rq, &weir__mknod_req__descriptor);
	if (!req)
		return;
	struct weir_fid at;
	struct mds_inode in;
	struct mds_cred cr;
	cred_from_msg(m, req->cred, &cr);
	fid_from_msg(req->at, &at);
	if (replay_created(m, rq, &cr, &at, req->path))
		goto out;
	int rc = mds_ns_mknod(m->m_ns, &cr, &at, req->path, req->mode, req->rdev,
			      mds_cmap_choose_wait, m, &in);
	if (rc == MDS_RC_PARK && !(rc = park_create(m, rq, op_mknod))) {
		protobuf_c_message_free_unpacked(&req->base, NULL);
		return;
	}
	reply_attr_parent(rq, rc, &in, req->at, req->path, 0);
out:
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

static void op_access(struct mds *m, struct net_req *rq)
{
	Weir__AccessReq *req = unpack_or_reply(rq, &weir__access_req__descriptor);
	if (!req)
		return;
	struct weir_fid at;
	struct mds_cred cr;
	cred_from_msg(m, req->cred, &cr);
	fid_from_msg(req->at, &at);
	int rc = mds_ns_access(m->m_ns, &cr, &at, req->path, req->mode, path_flags(req->flags));
	net_req_reply(rq, rc, NULL, NULL, 0);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

/* MDS_SETXATTR, MDS_GETXATTR, MDS_LISTXATTR, MDS_REMOVEXATTR */
static void op_xattr(struct mds *m, struct net_req *rq)
{
	Weir__XattrReq *req = unpack_or_reply(rq, &weir__xattr_req__descriptor);
	if (!req)
		return;
	struct weir_fid at;
	struct mds_cred cr;
	const char *path = req->path;
	uint32_t flags = path_flags(req->flags);
	size_t len = 0;
	uint8_t *buf = NULL;
	int rc;
	cred_from_msg(m, req->cred, &cr);
	fid_from_msg(req->fid ? req->fid : req->at, &at);
	if (req->fid)
		path = NULL; /* the object is the FID itself */
	bool again = mds_reply_replayed(); /* done before a reset (mds/reply.c) */
	switch (rq->rq_hdr.fh_opcode) {
	case WEIR__WIRE_OP__MDS_SETXATTR:
		if (again) {
			rc = 0;
			break;
		}
		rc = mds_ns_setxattr(m->m_ns, &cr, &at, path, flags, req->name, req->value.data,
				     req->value.len, (int)req->xflags);
		break;
	case WEIR__WIRE_OP__MDS_REMOVEXATTR:
		if (again) {
			rc = 0;
			break;
		}
		rc = mds_ns_removexattr(m->m_ns, &cr, &at, path, flags, req->name);
		break;
	default:
		buf = malloc(MDS_XATTR_SIZE_MAX + 1);
		if (!buf) {
			rc = -ENOMEM;
			break;
		}
		if (rq->rq_hdr.fh_opcode == WEIR__WIRE_OP__MDS_GETXATTR)
			rc = mds_ns_getxattr(m->m_ns, &cr, &at, path, flags, req->name, buf,
					     MDS_XATTR_SIZE_MAX, &len);
		else /* a list longer than Linux's XATTR_LIST_MAX is E2BIG there too */
			rc = mds_ns_listxattr(m->m_ns, &cr, &at, path, flags, (char *)buf,
					      MDS_XATTR_LIST_MAX, &len);
		break;
	}
	Weir__XattrRep rep = WEIR__XATTR_REP__INIT;
	rep.value.data = buf;
	rep.value.len = len;
	net_req_reply(rq, rc, rc || !buf ? NULL : &rep.base, NULL, 0);
	free(buf);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

static void op_ping(struct mds *m, struct net_req *rq)
{
	(void)m;
	struct iovec iov = { rq->rq_bulk, rq->rq_hdr.fh_bulk_len };
	net_req_reply(rq, 0, NULL, &iov, rq->rq_bulk ? 1 : 0);
}

typedef void (*op_fn)(struct mds *m, struct net_req *rq);

static const struct {
	uint16_t opcode;
	const char *name;
	op_fn fn;
} ops[] = {
	{ WEIR__WIRE_OP__MDS_CONNECT, "connect", op_connect },
	{ WEIR__WIRE_OP__MDS_GET_CLUSTERMAP, "get_clustermap", mds_cmap_handle_get },
	{ WEIR__WIRE_OP__MDS_OSS_REGISTER, "oss_register", mds_cmap_handle_register },
	{ WEIR__WIRE_OP__MDS_MDT_REGISTER, "mdt_register", mds_mdt_handle_register },
	{ WEIR__WIRE_OP__MDS_DTX_PREPARE, "dtx_prepare", mds_dtx_handle_prepare },
	{ WEIR__WIRE_OP__MDS_DTX_RESOLVE, "dtx_resolve", mds_dtx_handle_resolve },
	{ WEIR__WIRE_OP__MDS_LOOKUP, "lookup", op_lookup },
	{ WEIR__WIRE_OP__MDS_GETATTR, "getattr", op_getattr },
	{ WEIR__WIRE_OP__MDS_LEASE_POLL, "lease_poll", mds_mdl_handle_poll },
	{ WEIR__WIRE_OP__MDS_SETATTR, "setattr", op_setattr },
	{ WEIR__WIRE_OP__MDS_OPEN, "open", op_open },
	{ WEIR__WIRE_OP__MDS_CLOSE, "close", op_close },
	{ WEIR__WIRE_OP__MDS_MKDIR, "mkdir", op_mkdir },
	{ WEIR__WIRE_OP__MDS_READDIR, "readdir", op_readdir },
	{ WEIR__WIRE_OP__MDS_UNLINK, "unlink", op_unlink },
	{ WEIR__WIRE_OP__MDS_RENAME, "rename", op_rename },
	{ WEIR__WIRE_OP__MDS_STATFS, "statfs", op_statfs },
	{ WEIR__WIRE_OP__MDS_SET_LAYOUT, "set_layout", op_set_layout },
	{ WEIR__WIRE_OP__MDS_SYNC, "sync", op_sync },
	{ WEIR__WIRE_OP__MDS_LINK, "link", op_link },
	{ WEIR__WIRE_OP__MDS_SYMLINK, "symlink", op_symlink },
	{ WEIR__WIRE_OP__MDS_READLINK, "readlink", op_readlink },
	{ WEIR__WIRE_OP__MDS_MKNOD, "mknod", op_mknod },
	{ WEIR__WIRE_OP__MDS_ACCESS, "access", op_access },
	{ WEIR__WIRE_OP__MDS_SETXATTR, "setxattr", op_xattr },
	{ WEIR__WIRE_OP__MDS_GETXATTR, "getxattr", op_xattr },
	{ WEIR__WIRE_OP__MDS_LISTXATTR, "listxattr", op_xattr },
	{ WEIR__WIRE_OP__MDS_REMOVEXATTR, "removexattr", op_xattr },
	{ WEIR__WIRE_OP__MDS_LEASE_RENEW, "lease_renew", mds_lease_handle_renew },
	{ WEIR__WIRE_OP__MDS_DISCONNECT, "disconnect", mds_lease_handle_disconnect },
	{ WEIR__WIRE_OP__MDS_LOCK, "lock", mds_lock_handle_set },
	{ WEIR__WIRE_OP__MDS_LOCK_TEST, "lock_test", mds_lock_handle_test },
	{ WEIR__WIRE_OP__MDS_LOCK_CANCEL, "lock_cancel", mds_lock_handle_cancel },
	{ WEIR__WIRE_OP__MDS_CAPA_RENEW, "capa_renew", mds_capa_handle_renew },
	{ WEIR__WIRE_OP__MDS_REPLAY, "replay", mds_recovery_handle_replay },
	{ WEIR__WIRE_OP__MDS_DRA_CREATE, "dra_create", mds_hsm_handle_dra_create },
	{ WEIR__WIRE_OP__MDS_DRA_LIST, "dra_list", mds_hsm_handle_dra_list },
	{ WEIR__WIRE_OP__MDS_DRA_DELETE, "dra_delete", mds_hsm_handle_dra_delete },
	{ WEIR__WIRE_OP__MDS_HSM_IMPORT, "hsm_import", mds_hsm_handle_import },
	{ WEIR__WIRE_OP__MDS_HSM_REQUEST, "hsm_request", mds_hsm_handle_request },
	{ WEIR__WIRE_OP__MDS_HSM_STATE, "hsm_state", mds_hsm_handle_state },
	{ WEIR__WIRE_OP__MDS_HSM_QUEUE, "hsm_queue", mds_hsm_handle_queue },
	{ WEIR__WIRE_OP__MDS_HSM_RESTORE_WAIT, "hsm_restore_wait", mds_hsm_handle_restore_wait },
	{ WEIR__WIRE_OP__MDS_HSM_AGENT_FETCH, "hsm_agent_fetch", mds_hsm_handle_fetch },
	{ WEIR__WIRE_OP__MDS_HSM_AGENT_PROGRESS, "hsm_agent_progress", mds_hsm_handle_progress },
	{ WEIR__WIRE_OP__MDS_HSM_AGENT_DONE, "hsm_agent_done", mds_hsm_handle_done },
	{ WEIR__WIRE_OP__PING, "ping", op_ping },
};

/* Operations only admin groups of the node map may do. */
static bool op_is_admin(uint16_t op)
{
	switch (op) {
	case WEIR__WIRE_OP__MDS_OSS_REGISTER:
	case WEIR__WIRE_OP__MDS_MDT_REGISTER:
	case WEIR__WIRE_OP__MDS_DTX_PREPARE:
	case WEIR__WIRE_OP__MDS_DTX_RESOLVE:
	case WEIR__WIRE_OP__MDS_DRA_CREATE:
	case WEIR__WIRE_OP__MDS_DRA_DELETE:
	case WEIR__WIRE_OP__MDS_HSM_IMPORT:
	case WEIR__WIRE_OP__MDS_HSM_REQUEST:
	case WEIR__WIRE_OP__MDS_HSM_AGENT_FETCH:
	case WEIR__WIRE_OP__MDS_HSM_AGENT_PROGRESS:
	case WEIR__WIRE_OP__MDS_HSM_AGENT_DONE:
		return true;
	default:
		return false;
	}
}

/*
 * Take the replay prefix (WEIR_FRAME_F_XID) off the head of \a rq's body
 * into \a x. \return 1 when there was one, 0 when not, -EPROTO malformed.
 */
static int svc_xid_strip(struct net_req *rq, struct weir_xid_hdr *x)
{
	if (!(rq->rq_hdr.fh_flags & WEIR_FRAME_F_XID))
		return 0;
	if (rq->rq_hdr.fh_body_len < WEIR_XID_HDR_SIZE || weir_xid_decode(rq->rq_body, x))
		return -EPROTO;
	/* body and bulk are one allocation (net/server.c): slide them down */
	uint8_t *body = (uint8_t *)rq->rq_body;
	memmove(body, body + WEIR_XID_HDR_SIZE,
		rq->rq_hdr.fh_body_len - WEIR_XID_HDR_SIZE + rq->rq_hdr.fh_bulk_len);
	rq->rq_hdr.fh_body_len -= WEIR_XID_HDR_SIZE;
	if (rq->rq_bulk)
		rq->rq_bulk -= WEIR_XID_HDR_SIZE;
	rq->rq_hdr.fh_flags &= ~WEIR_FRAME_F_XID;
	return 1;
}

static __thread const struct mds_xid *svc_cur_xid;

const struct mds_xid *mds_svc_cur_xid(void)
{
	return svc_cur_xid;
}

/* Requests that never change what a client may cache (no metadata lease callbacks to wait for). */
static bool op_reads_only(uint16_t op)
{
	switch (op) {
	case WEIR__WIRE_OP__MDS_LOOKUP:
	case WEIR__WIRE_OP__MDS_GETATTR:
	case WEIR__WIRE_OP__MDS_READDIR:
	case WEIR__WIRE_OP__MDS_STATFS:
	case WEIR__WIRE_OP__MDS_READLINK:
	case WEIR__WIRE_OP__MDS_ACCESS:
	case WEIR__WIRE_OP__MDS_GETXATTR:
	case WEIR__WIRE_OP__MDS_LISTXATTR:
	case WEIR__WIRE_OP__MDS_LEASE_RENEW:
	case WEIR__WIRE_OP__MDS_LEASE_POLL:
	case WEIR__WIRE_OP__MDS_LOCK:
	case WEIR__WIRE_OP__MDS_LOCK_TEST:
	case WEIR__WIRE_OP__MDS_LOCK_CANCEL:
	case WEIR__WIRE_OP__MDS_CAPA_RENEW:
	case WEIR__WIRE_OP__MDS_OSS_REGISTER:
	case WEIR__WIRE_OP__MDS_MDT_REGISTER:
	case WEIR__WIRE_OP__MDS_GET_CLUSTERMAP:
	case WEIR__WIRE_OP__PING:
		return true;
	default:
		return false;
	}
}

void mds_svc_handle(struct net_req *rq)
{
	struct mds_xid x = { 0 };
	int has_xid = svc_xid_strip(rq, &x.x_hdr);
	if (has_xid < 0) {
		WEIR_LOG_WARN_RL("peer=%s op=%u: malformed replay prefix (-EPROTO)", rq->rq_peer,
				 rq->rq_hdr.fh_opcode);
		net_req_reply(rq, -EPROTO, NULL, NULL, 0);
		return;
	}
	x.x_has = has_xid;
	mds_svc_rerun(rq, &x);
}

void mds_svc_rerun(struct net_req *rq, const struct mds_xid *x)
{
	struct mds *m = rq->rq_srv_arg;
	const struct mds_nm_group *g =
		mds_nodemap_match(m->m_nodemap, rq->rq_key_name, &rq->rq_peer_sa);
	svc_cur_group = g;
	svc_cur_xid = x; /* a park keeps it (mds_cmap_park, mds_recovery_gate) */
	if (x && x->x_has) { /* its reply carries the reply prefix (net/frame.h) */
		rq->rq_rep_txn = true;
		rq->rq_rep_last_committed = mds_commit_synced_seq(m);
		rq->rq_rep_prepare = mds_reply_prepare;
	}
	if (mds_recovery_gate(m, rq)) { /* the recovery window: answered or parked */
		svc_cur_group = NULL;
		svc_cur_xid = NULL;
		return;
	}
	for (size_t i = 0; i < WEIR_ARRAY_SIZE(ops); i++) {
		if (ops[i].opcode == rq->rq_hdr.fh_opcode) {
			WEIR_LOG_DEBUG("peer=%s op=%s reqid=%llu group=%s", rq->rq_peer,
				       ops[i].name, (unsigned long long)rq->rq_hdr.fh_reqid,
				       g->ng_name);
			if (!g->ng_admin && op_is_admin(ops[i].opcode)) {
				WEIR_LOG_WARN_RL("peer=%s key=%s group=%s op=%s: refused: not an admin"
						 " group of the node map (-EPERM)",
						 rq->rq_peer, rq->rq_key_name, g->ng_name,
						 ops[i].name);
				net_req_reply(rq, -EPERM, NULL, NULL, 0);
			} else if (x && x->x_has) {
				struct rc_ctx_buf rcb;
				uint16_t op = rq->rq_hdr.fh_opcode;
				int rrc = mds_reply_begin(m, &rcb, &x->x_hdr, rq);
				if (rrc) {
					net_req_reply(rq, rrc, NULL, NULL, 0);
				} else {
					void *mp = op_reads_only(op) ? NULL
								     : mds_mdl_pending_begin(m, rq, x);
					ops[i].fn(m, rq); /* rq may be freed from here on */
					mds_mdl_pending_end(mp);
				}
				mds_reply_end(&rcb);
				if (op == WEIR__WIRE_OP__MDS_DISCONNECT)
					mds_reply_forget(m, x->x_hdr.xh_uuid); /* umount */
			} else {
				void *mp = op_reads_only(rq->rq_hdr.fh_opcode)
					       ? NULL
					       : mds_mdl_pending_begin(m, rq, x);
				ops[i].fn(m, rq); /* rq may be freed from here on */
				mds_mdl_pending_end(mp);
			}
			svc_cur_group = NULL;
			svc_cur_xid = NULL;
			return;
		}
	}
	svc_cur_group = NULL;
	svc_cur_xid = NULL;
	WEIR_LOG_WARN("peer=%s op=%u: unknown opcode", rq->rq_peer, rq->rq_hdr.fh_opcode);
	net_req_reply(rq, -EOPNOTSUPP, NULL, NULL, 0);
}
