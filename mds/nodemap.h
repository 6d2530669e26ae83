/*
 * mds/nodemap.h - the node map (Lustre's nodemap): which clients are trusted
 * with the identities they claim, how their ids are mapped, and who may do
 * admin operations.
 *
 * The file (weir-mds --nodemap FILE, INI) holds groups, in order:
 *
 *   [nodemap guests]
 *   keys = guests              ; connections that proved one of these keys
 *   ranges = 10.0.2.0/24, fd00::/64   ; or come from these addresses
 *   trusted = no               ; claimed uid/gid/groups believed? (default yes)
 *   squash_uid = 65534         ; untrusted clients run as these (default 65534)
 *   squash_gid = 65534
 *   root_squash = yes          ; trusted: uid/gid 0 become the squash ids (default no)
 *   map_uid = 1000:5000        ; trusted: claimed 1000 runs as 5000 (repeatable)
 *   map_gid = 100:500
 *   admin = no                 ; DRA, HSM, agents, OST registration, layout of / (default yes)
 *
 * A connection belongs to the first group whose keys include the name of
 * the key it proved, or whose ranges include its address; no match: the
 * default group (trusted, admin, root squash as --root-squash says), so that
 * without a node map every holder of the cluster key is trusted.
 * Thread safety: a map is read-only once loaded.
 */
#ifndef WEIR_MDS_NODEMAP_H
#define WEIR_MDS_NODEMAP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#define MDS_NM_MAX_GROUPS 32
#define MDS_NM_MAX_KEYS 8
#define MDS_NM_MAX_RANGES 16
#define MDS_NM_MAX_MAPS 64

struct mds_nm_range {
	int nr_family;       /* AF_INET or AF_INET6 */
	uint8_t nr_addr[16]; /* network byte order */
	unsigned nr_prefix;  /* bits */
};

struct mds_nm_group {
	char ng_name[64];
	char ng_keys[MDS_NM_MAX_KEYS][32];
	unsigned ng_nr_keys;
	struct mds_nm_range ng_ranges[MDS_NM_MAX_RANGES];
	unsigned ng_nr_ranges;
	bool ng_trusted;
	bool ng_root_squash;
	bool ng_admin;
	uint32_t ng_squash_uid, ng_squash_gid;
	uint32_t ng_map_uid[MDS_NM_MAX_MAPS][2]; /* client id, filesystem id */
	unsigned ng_nr_map_uid;
	uint32_t ng_map_gid[MDS_NM_MAX_MAPS][2];
	unsigned ng_nr_map_gid;
};

struct mds_nodemap {
	struct mds_nm_group nm_groups[MDS_NM_MAX_GROUPS];
	unsigned nm_nr;
	struct mds_nm_group nm_default; /* no group matched */
};

/**
 * Load \a path into \a nm (or, with \a path NULL, only the default group).
 * \param[in] root_squash  The default group's root squash (--root-squash).
 * \param[out] why  A reason with the line number on failure.
 * \return 0, -ENOENT, -EINVAL (a malformed file), -errno.
 */
int mds_nodemap_load(struct mds_nodemap *nm, const char *path, bool root_squash, char *why,
		     size_t why_len);

/** The group of a connection that proved key \a key_name ("" none) from \a sa. */
const struct mds_nm_group *mds_nodemap_match(const struct mds_nodemap *nm, const char *key_name,
					     const struct sockaddr_storage *sa);

/**
 * The identity a request of group \a g runs as, from the claimed one:
 * untrusted: the squash ids (no groups); trusted: mapped, then root squashed.
 * \param[in,out] uid, gid   Claimed in, effective out.
 * \param[in,out] groups     \a *nr_groups supplementary groups, mapped in place
 *                           (all dropped for an untrusted group).
 */
void mds_nodemap_ids(const struct mds_nm_group *g, uint32_t *uid, uint32_t *gid,
		     uint32_t *groups, uint32_t *nr_groups);

/** Log the map, one line per group (NOTICE). */
void mds_nodemap_log(const struct mds_nodemap *nm);

#endif /* WEIR_MDS_NODEMAP_H */
