/*
 * client/fuse/nodes.c - the node table of weir-fuse: FUSE nodeids <-> FIDs.
 *
 * A nodeid is the address of a struct wf_node (as libfuse's passthrough_ll
 * does with its inodes), so nodeid -> FID needs no lookup; FID -> node is a
 * hash table, so one FID has one nodeid while the kernel knows it (hard
 * links and every path to a file share the kernel's inode and page cache).
 * The kernel counts lookups (every reply to lookup, create, mkdir, ... and
 * every readdirplus entry adds one) and gives them back with forget; a node
 * is freed when its count reaches zero. The root is FUSE_ROOT_ID, never
 * counted, never freed.
 */
#define _GNU_SOURCE
#include "wf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define WF_NODES_BUCKETS 65536

int wf_nodes_init(struct wf *wf)
{
	pthread_mutex_init(&wf->wf_lock, NULL);
	wf->wf_nr_buckets = WF_NODES_BUCKETS;
	wf->wf_hash = calloc(wf->wf_nr_buckets, sizeof(*wf->wf_hash));
	return wf->wf_hash ? 0 : -ENOMEM;
}

void wf_nodes_fini(struct wf *wf)
{
	for (size_t i = 0; wf->wf_hash && i < wf->wf_nr_buckets; i++) {
		while (wf->wf_hash[i]) {
			struct wf_node *n = wf->wf_hash[i];
			wf->wf_hash[i] = n->wn_hnext;
			free(n);
		}
	}
	free(wf->wf_hash);
	wf->wf_hash = NULL;
	pthread_mutex_destroy(&wf->wf_lock);
}

static bool wf_fid_eq(const weir_fid_t *a, const weir_fid_t *b)
{
	return a->seq == b->seq && a->oid == b->oid;
}

static size_t wf_bucket(const struct wf *wf, const weir_fid_t *fid)
{
	uint64_t h = fid->seq * 0x9e3779b97f4a7c15ULL ^ fid->oid * 0xc2b2ae3d27d4eb4fULL;
	return (size_t)((h ^ (h >> 29)) % wf->wf_nr_buckets);
}

fuse_ino_t wf_node_get(struct wf *wf, const weir_fid_t *fid, bool fresh)
{
	struct wf_node *n;
	size_t b;

	if (wf_fid_eq(fid, &wf->wf_root))
		return FUSE_ROOT_ID;
	b = wf_bucket(wf, fid);
	pthread_mutex_lock(&wf->wf_lock);
	for (n = wf->wf_hash[b]; n; n = n->wn_hnext)
		if (wf_fid_eq(&n->wn_fid, fid))
			break;
	if (!n) {
		n = calloc(1, sizeof(*n));
		if (!n) {
			pthread_mutex_unlock(&wf->wf_lock);
			return 0;
		}
		n->wn_fid = *fid;
		n->wn_hnext = wf->wf_hash[b];
		wf->wf_hash[b] = n;
		wf->wf_nr_nodes++;
	}
	n->wn_nlookup++;
	if (fresh)
		n->wn_fresh_ns = weir_now_ns();
	pthread_mutex_unlock(&wf->wf_lock);
	return (fuse_ino_t)(uintptr_t)n;
}

fuse_ino_t wf_node_find(struct wf *wf, const weir_fid_t *fid)
{
	struct wf_node *n;

	if (wf_fid_eq(fid, &wf->wf_root))
		return FUSE_ROOT_ID;
	pthread_mutex_lock(&wf->wf_lock);
	for (n = wf->wf_hash[wf_bucket(wf, fid)]; n; n = n->wn_hnext)
		if (wf_fid_eq(&n->wn_fid, fid))
			break;
	pthread_mutex_unlock(&wf->wf_lock);
	/* (a nodeid the kernel forgets meanwhile is answered ENOENT by it: harmless) */
	return n ? (fuse_ino_t)(uintptr_t)n : 0;
}

void wf_node_forget(struct wf *wf, fuse_ino_t ino, uint64_t nlookup)
{
	struct wf_node *n = (struct wf_node *)(uintptr_t)ino;
	struct wf_node **pp;

	if (ino == FUSE_ROOT_ID)
		return;
	pthread_mutex_lock(&wf->wf_lock);
	n->wn_nlookup -= nlookup < n->wn_nlookup ? nlookup : n->wn_nlookup;
	if (n->wn_nlookup == 0) {
		for (pp = &wf->wf_hash[wf_bucket(wf, &n->wn_fid)]; *pp; pp = &(*pp)->wn_hnext) {
			if (*pp == n) {
				*pp = n->wn_hnext;
				wf->wf_nr_nodes--;
				free(n);
				break;
			}
		}
	}
	pthread_mutex_unlock(&wf->wf_lock);
}

void wf_node_fid(struct wf *wf, fuse_ino_t ino, weir_fid_t *fid)
{
	if (ino == FUSE_ROOT_ID) {
		*fid = wf->wf_root;
		return;
	}
	/* wn_fid never changes while the kernel holds the nodeid */
	*fid = ((const struct wf_node *)(uintptr_t)ino)->wn_fid;
}

struct wf_node *wf_node_of(fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? NULL : (struct wf_node *)(uintptr_t)ino;
}

uint64_t wf_node_fresh(struct wf *wf, const weir_fid_t *fid, fuse_ino_t ino)
{
	struct wf_node *n;
	uint64_t fresh = 0;

	if (ino == FUSE_ROOT_ID)
		return 0;
	pthread_mutex_lock(&wf->wf_lock);
	for (n = wf->wf_hash[wf_bucket(wf, fid)]; n; n = n->wn_hnext)
		if (wf_fid_eq(&n->wn_fid, fid))
			break;
	if (n && (fuse_ino_t)(uintptr_t)n == ino)
		fresh = n->wn_fresh_ns;
	pthread_mutex_unlock(&wf->wf_lock);
	return fresh;
}
