/*
 * tools/weir_key.c - `weir key gen|rotate|retire|show`: the cluster key file.
 *
 * The file format and what each key is for are in common/key.h. Rotation
 * without downtime, in three steps:
 *   1. weir key rotate FILE: a new key goes first, the old one stays
 *      (accepted); copy FILE to the MDS, then the OSSs (they re-read it).
 *   2. copy FILE to the clients (they connect with the new key; clients with
 *      the old file still get in, since the servers accept both).
 *   3. weir key retire FILE: only the new key stays; copy it everywhere:
 *      from then on the old key is refused.
 * None of these commands talks to a server.
 */
#define _GNU_SOURCE
#include "weir_cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "common/key.h"
#include "common/util.h"

/* Parse [-n NAME] [-f] FILE. \return 0 or a usage exit code. */
static int key_args(struct wcli *cli, int argc, char **argv, bool allow_force, const char **name,
		    bool *force, const char **file)
{
	static const struct option lo[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "force", no_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	*name = NULL;
	*force = false;
	optind = 1;
	while ((c = getopt_long(argc, argv, allow_force ? "n:f" : "n:", lo, NULL)) != -1) {
		if (c == 'n') {
			*name = optarg;
		} else if (c == 'f' && allow_force) {
			*force = true;
		} else {
			return wcli_bad_opt(cli, argv);
		}
	}
	if (optind != argc - 1)
		return wcli_usage(cli, "want one key FILE");
	*file = argv[optind];
	if (*name && !weir_key_name_valid(*name))
		return wcli_usage(cli, "bad key name '%s': 1 to 31 of A-Z a-z 0-9 . _ -", *name);
	return 0;
}

static int key_load(struct wcli *cli, const char *file, struct weir_keyring *kr)
{
	char why[512];
	int rc = weir_keyring_load(file, kr, why, sizeof(why));
	if (rc)
		wcli_errf(cli, NULL, "%s (-%s)", why, weir_errno_name(-rc));
	return rc;
}

static int key_save(struct wcli *cli, const char *file, const struct weir_keyring *kr, bool excl)
{
	int rc = weir_keyring_save(file, kr, excl);
	if (rc == -EEXIST)
		wcli_errf(cli, file, "exists; not overwriting a key file (use -f to replace it, or"
			  " 'weir key rotate' to add a key) (-EEXIST)");
	else if (rc)
		wcli_err(cli, file, rc);
	return rc;
}

int wcli_cmd_key_gen(struct wcli *cli, int argc, char **argv)
{
	const char *name, *file;
	bool force;
	int rc = key_args(cli, argc, argv, true, &name, &force, &file);
	if (rc)
		return rc;
	struct weir_keyring kr = { .kr_nr = 1 };
	rc = weir_key_generate(name, &kr.kr_keys[0]);
	if (rc) {
		wcli_errf(cli, NULL, "cannot make a key: no randomness (-EIO)");
		return WCLI_EXIT_FAIL;
	}
	rc = key_save(cli, file, &kr, !force);
	char id[2 * WEIR_KEY_ID_LEN + 1];
	if (!rc)
		printf("%s: new cluster key '%s' (id %s); copy this file, mode 0600, to every"
		       " server and client\n",
		       file, kr.kr_keys[0].wk_name, weir_key_id_hex(kr.kr_keys[0].wk_id, id));
	weir_keyring_wipe(&kr);
	return rc ? WCLI_EXIT_FAIL : WCLI_EXIT_OK;
}

int wcli_cmd_key_rotate(struct wcli *cli, int argc, char **argv)
{
	const char *name, *file;
	bool force;
	int rc = key_args(cli, argc, argv, false, &name, &force, &file);
	if (rc)
		return rc;
	struct weir_keyring kr, nk = { 0 };
	if (key_load(cli, file, &kr))
		return WCLI_EXIT_FAIL;
	if (kr.kr_nr >= WEIR_KEYRING_MAX) {
		wcli_errf(cli, file, "already holds %d keys: retire old ones first ('weir key retire')",
			  WEIR_KEYRING_MAX);
		weir_keyring_wipe(&kr);
		return WCLI_EXIT_FAIL;
	}
	rc = weir_key_generate(name, &nk.kr_keys[0]);
	for (unsigned i = 0; !rc && i < kr.kr_nr; i++)
		if (!strcmp(kr.kr_keys[i].wk_name, nk.kr_keys[0].wk_name))
			rc = -EEXIST;
	if (rc) {
		if (rc == -EEXIST)
			wcli_errf(cli, file, "a key named '%s' is already in the file (-EEXIST)",
				  nk.kr_keys[0].wk_name);
		else
			wcli_errf(cli, file, "cannot make a key: no randomness (-EIO)");
		weir_keyring_wipe(&kr);
		weir_keyring_wipe(&nk);
		return WCLI_EXIT_FAIL;
	}
	nk.kr_nr = 1;
	for (unsigned i = 0; i < kr.kr_nr; i++)
		nk.kr_keys[nk.kr_nr++] = kr.kr_keys[i];
	rc = key_save(cli, file, &nk, false);
	if (!rc)
		printf("%s: new current key '%s'; '%s'%s still accepted. Copy the file to the MDS,"
		       " then the OSSs, then the clients; then run 'weir key retire %s' and copy it"
		       " again\n",
		       file, nk.kr_keys[0].wk_name, kr.kr_keys[0].wk_name,
		       kr.kr_nr > 1 ? " (and older keys)" : "", file);
	weir_keyring_wipe(&kr);
	weir_keyring_wipe(&nk);
	return rc ? WCLI_EXIT_FAIL : WCLI_EXIT_OK;
}

int wcli_cmd_key_retire(struct wcli *cli, int argc, char **argv)
{
	const char *name, *file;
	bool force;
	int rc = key_args(cli, argc, argv, false, &name, &force, &file);
	if (rc)
		return rc;
	if (name)
		return wcli_usage(cli, "--name does not apply to retire");
	struct weir_keyring kr;
	if (key_load(cli, file, &kr))
		return WCLI_EXIT_FAIL;
	unsigned old = kr.kr_nr - 1;
	kr.kr_nr = 1;
	rc = key_save(cli, file, &kr, false);
	if (!rc)
		printf("%s: only '%s' left (%u older key%s retired); copy the file to every server"
		       " and client\n",
		       file, kr.kr_keys[0].wk_name, old, old == 1 ? "" : "s");
	weir_keyring_wipe(&kr);
	return rc ? WCLI_EXIT_FAIL : WCLI_EXIT_OK;
}

int wcli_cmd_key_show(struct wcli *cli, int argc, char **argv)
{
	const char *name, *file;
	bool force;
	int rc = key_args(cli, argc, argv, false, &name, &force, &file);
	if (rc)
		return rc;
	struct weir_keyring kr;
	if (key_load(cli, file, &kr))
		return WCLI_EXIT_FAIL;
	for (unsigned i = 0; i < kr.kr_nr; i++) {
		char id[2 * WEIR_KEY_ID_LEN + 1];
		printf("%-31s id %s  %s\n", kr.kr_keys[i].wk_name,
		       weir_key_id_hex(kr.kr_keys[i].wk_id, id),
		       i ? "accepted" : "current (connects with it; accepted)");
	}
	weir_keyring_wipe(&kr);
	return WCLI_EXIT_OK;
}
