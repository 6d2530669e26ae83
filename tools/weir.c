/*
 * tools/weir.c - the `weir` command: the command table, global options,
 * help, and the helpers every command shares (mount, one error format,
 * paths). The commands live in tools/weir_copy.c (put, get, cat),
 * tools/weir_ns.c (ls, stat, mkdir, rm, mv, path2fid),
 * tools/weir_layout.c (setstripe, getstripe, df), tools/weir_dra.c (dra ...)
 * and tools/weir_hsm.c (hsm ...).
 *
 * To add a command: write its handler, add one row to wcli_cmds[]. To add a
 * command with subcommands (e.g. `weir hsm archive`), give its row a
 * cc_sub table instead of a handler.
 */
#define _GNU_SOURCE
#include "weir_cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"

/* weir dra ...: data repository associations (tools/weir_dra.c) */
static const struct wcli_cmd wcli_dra_cmds[] = {
	{ "create", wcli_cmd_dra_create,
	  "PATH s3://BUCKET[/PREFIX] [--import] [--auto-export] [--reimport] [--no-check]",
	  "Associate directory PATH with an S3 bucket and prefix.\n"
	  "PATH must be an existing directory, not inside or above another association.\n"
	  "A file's S3 key is PREFIX/ + its path below PATH (at archive time). Root only.\n"
	  "  --import       then build the tree under PATH from the bucket listing (see\n"
	  "                 'weir dra import'): files appear at once, released, and are\n"
	  "                 restored from S3 on first read\n"
	  "  --auto-export  files closed after writing are queued for archive automatically\n"
	  "  --reimport     an imported, never-modified file whose object changed in S3 is\n"
	  "                 imported again (new size, mtime, ETag) when read; without it the\n"
	  "                 file is marked lost and its reads fail with EIO\n"
	  "  --no-check     do not check first that the bucket exists and can be listed\n"
	  "                 (needs no S3 settings here; the copytool's are what count)\n"
	  "The check and the import list the bucket with the S3 settings of the environment:\n"
	  "AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION.",
	  NULL, 0 },
	{ "list", wcli_cmd_dra_list, "",
	  "List the associations: id, path, S3 URL, flags, creation time.",
	  NULL, 0 },
	{ "delete", wcli_cmd_dra_delete, "PATH...",
	  "Remove the association rooted at PATH.\n"
	  "Files stay as they are (released files are still restored on access while\n"
	  "their S3 objects remain); the S3 objects are kept. Root only.",
	  NULL, 0 },
	{ "import", wcli_cmd_dra_import, "PATH...",
	  "Rescan the bucket of the association rooted at PATH.\n"
	  "Lists every object under the prefix (AWS_* environment as for create) and\n"
	  "applies the listing without copying data: new objects become released files\n"
	  "(directories made as needed; keys ending in '/' are directory markers), changed\n"
	  "objects update imported files that were never modified in Weir, and imported\n"
	  "files whose object is gone are removed if they are clean and closed (else kept).\n"
	  "Keys that cannot be a path (an empty component, '.' or '..', a component over\n"
	  "255 bytes) are skipped with a warning. A key that is both a file and a\n"
	  "directory (out and out/x) gives the directory; the file is shadowed: not\n"
	  "imported, with a warning (an imported, unmodified, closed file in the way is\n"
	  "removed). Progress on stderr; the summary counts created, updated, unchanged,\n"
	  "removed, kept, skipped, shadowed and gives objects/s. Exit 1 if any object\n"
	  "could not be applied (skipped and shadowed keys are warnings). Root only.",
	  NULL, 0 },
};

/* weir hsm ...: the S3 tier's file commands (tools/weir_hsm.c) */
static const struct wcli_cmd wcli_hsm_cmds[] = {
	{ "archive", wcli_cmd_hsm_archive, "[-r] [--no-wait] [-v] PATH...",
	  "Copy files to their S3 key (multipart, by the copytool weir-hsmd).\n"
	  "Queues one archive action per file and waits for them, showing files and bytes\n"
	  "done and MB/s on stderr (a line every 5 s when stderr is not a terminal), then\n"
	  "prints the totals with MB/s and files/s. An archived file's ETag (read back from\n"
	  "S3) and data version are recorded; a file modified later is dirty and can be\n"
	  "archived again. Clean archived files are counted as already archived.\n"
	  "  -r, --recursive  directories: every regular file below them\n"
	  "      --no-wait    queue and return; follow with 'weir hsm queue'\n"
	  "  -v, --verbose    one line per file\n"
	  "Interrupting the wait does not cancel the actions. Exit 1 if any file was\n"
	  "refused or failed.",
	  NULL, 0 },
	{ "restore", wcli_cmd_hsm_restore, "[-r] [--no-wait] [-v] PATH...",
	  "Bring released files back from S3 ahead of use (prefetch).\n"
	  "Reads of a released file restore it anyway; this fetches whole trees before a\n"
	  "job starts. A restore already running for a file (a reader's) is shared. Waits\n"
	  "with the same progress and totals (MB/s, files/s) as archive.\n"
	  "  -r, --recursive  directories: every regular file below them\n"
	  "      --no-wait    queue and return; follow with 'weir hsm queue'\n"
	  "  -v, --verbose    one line per file\n"
	  "Exit 1 if any restore failed (e.g. the S3 object changed behind Weir's back).",
	  NULL, 0 },
	{ "release", wcli_cmd_hsm_release, "[-r] [-v] PATH...",
	  "Free the OST space of files whose S3 copy is current and verified.\n"
	  "The file keeps its name, size, attributes and layout; its next read restores\n"
	  "it. Refused (exit 1) for a file that is dirty, never archived or lost\n"
	  "(-ENODATA), whose archive is still pending (auto-export; 'weir hsm archive'\n"
	  "waits for it), or open anywhere (-EBUSY). Done by the MDS at once.\n"
	  "  -r, --recursive  directories: every regular file below them\n"
	  "  -v, --verbose    one line per file",
	  NULL, 0 },
	{ "state", wcli_cmd_hsm_state, "PATH...",
	  "Show files' HSM state, like lfs hsm_state.\n"
	  "PATH: (0xFLAGS) followed by the words exists, archived, released, dirty, lost,\n"
	  "imported; then the FID, the S3 key and ETag of the archive copy, the data\n"
	  "version (and the one the copy holds), when it was archived, the size, the bytes\n"
	  "restored so far of a file being restored, and a pending action.",
	  NULL, 0 },
	{ "queue", wcli_cmd_hsm_queue, "",
	  "Show the coordinator's pending actions and throughput.\n"
	  "One line per waiting or running action: id, action, state, FID, bytes\n"
	  "done/total, agent, S3 key; then waiting and running counts, the backlog in\n"
	  "bytes, archive and restore MB/s over the last 10 s, the agents heard from in\n"
	  "the last 10 s, and the totals since the MDS started.",
	  NULL, 0 },
};

/* weir key ...: the cluster key file (tools/weir_key.c) */
static const struct wcli_cmd wcli_key_cmds[] = {
	{ "gen", wcli_cmd_key_gen, "[-n NAME] [-f] FILE",
	  "Make a new cluster key file (mode 0600) holding one random key.\n"
	  "Copy it to every server (--key-file, default /etc/weir/cluster.key) and\n"
	  "client (WEIR_KEY_FILE, or the same default).\n"
	  "  -n, --name NAME  the key's name (default key-YYYYMMDD-HHMMSS, UTC)\n"
	  "  -f, --force      replace an existing FILE",
	  NULL, 0 },
	{ "rotate", wcli_cmd_key_rotate, "[-n NAME] FILE",
	  "Put a new current key first in FILE, keeping the others (still accepted).\n"
	  "Copy FILE to the MDS, then the OSSs, then the clients (servers re-read a\n"
	  "changed key file within a second), then run 'weir key retire'.\n"
	  "  -n, --name NAME  the new key's name",
	  NULL, 0 },
	{ "retire", wcli_cmd_key_retire, "FILE",
	  "Drop every key but the current one from FILE; copied to the servers, it\n"
	  "makes them refuse the old keys.",
	  NULL, 0 },
	{ "show", wcli_cmd_key_show, "FILE",
	  "List the keys of FILE: names and ids (never the key material).", NULL, 0 },
};

static const struct wcli_cmd wcli_cmds[] = {
	{ "put", wcli_cmd_put, "[-r] [-v] LOCAL... PATH",
	  "Copy local files (and with -r, trees) into Weir.\n"
	  "Follows cp -r's rules: if PATH is an existing directory each LOCAL lands\n"
	  "inside it as PATH/basename(LOCAL); otherwise the single LOCAL is copied to PATH.\n"
	  "  -r, --recursive  copy directories and their contents\n"
	  "  -v, --verbose    print each file copied and a summary line\n"
	  "Copies of 64 MiB or more show progress on stderr when it is a terminal\n"
	  "(or WEIR_PROGRESS=1).",
	  NULL, 0 },
	{ "get", wcli_cmd_get, "[-r] [-v] PATH... LOCAL",
	  "Copy files (and with -r, trees) out of Weir.\n"
	  "Same rules as put, in the other direction.\n"
	  "  -r, --recursive  copy directories and their contents\n"
	  "  -v, --verbose    print each file copied and a summary line",
	  NULL, 0 },
	{ "ls", wcli_cmd_ls, "[-l] [-a] [PATH...]",
	  "List directories (a file lists itself). PATH defaults to /.\n"
	  "  -l  long format: mode, links, uid, gid, size, mtime, name\n"
	  "  -a  also show entries starting with '.' (and . and ..)",
	  NULL, 0 },
	{ "stat", wcli_cmd_stat, "PATH...",
	  "Show every attribute of files and directories.\n"
	  "FID, type, mode, links, owner, size, blocks, stripe size, and the times\n"
	  "with nanoseconds.",
	  NULL, 0 },
	{ "cat", wcli_cmd_cat, "PATH...", "Write files to standard output.", NULL, 0 },
	{ "mkdir", wcli_cmd_mkdir, "[-p] [-i MDT] PATH...",
	  "Make directories.\n"
	  "  -p, --parents        make parents as needed; no error if it exists\n"
	  "  -i, --mdt-index MDT  make each directory on that MDT (a remote directory when\n"
	  "                       its parent is on another one), as lfs mkdir -i; what is\n"
	  "                       made in it lives on that MDT (README: Several MDTs)",
	  NULL, 0 },
	{ "rmdir", wcli_cmd_rmdir, "DIR...",
	  "Remove empty directories, as rmdir(1) (a remote directory too: a two-MDT\n"
	  "transaction)",
	  NULL, 0 },
	{ "rm", wcli_cmd_rm, "[-r] [-f] PATH...",
	  "Remove files (and with -r, directory trees, depth-first).\n"
	  "  -r, --recursive  remove directories and their contents\n"
	  "  -f, --force      ignore missing paths",
	  NULL, 0 },
	{ "mv", wcli_cmd_mv, "SRC DST",
	  "Rename (move) a file or directory.\n"
	  "Renames SRC to DST atomically, replacing a DST file; if DST is an existing\n"
	  "directory, SRC moves into it.",
	  NULL, 0 },
	{ "ln", wcli_cmd_ln, "[-s] [-f] TARGET LINK_NAME",
	  "Make a hard link LINK_NAME to the file TARGET (with -s, a symlink holding\n"
	  "TARGET). If LINK_NAME is an existing directory, the link is made in it,\n"
	  "named as TARGET's last component. A hard link may be on another MDT than\n"
	  "the file: a two-MDT transaction (README: Several MDTs).\n"
	  "  -s, --symbolic  make a symbolic link\n"
	  "  -f, --force     remove an existing LINK_NAME first",
	  NULL, 0 },
	{ "setstripe", wcli_cmd_setstripe, "[-c COUNT] [-S SIZE] [-i OST] PATH...",
	  "Set a file's layout or a directory's default layout.\n"
	  "On a directory: the default for files created in it later. On a path that\n"
	  "does not exist: create an empty file with that layout.\n"
	  "  -c, --stripe-count COUNT  objects per file; -1 = every OST; 0 = default\n"
	  "  -S, --stripe-size SIZE    bytes per stripe, a multiple of 64K (1M, 64K, 4MiB)\n"
	  "  -i, --stripe-index OST    OST index of the first object (alone: with the default\n"
	  "                            count); an index no OST has is refused; -1 = MDS chooses",
	  NULL, 0 },
	{ "getstripe", wcli_cmd_getstripe, "PATH...",
	  "Show a file's layout or a directory's default layout.\n"
	  "For a file: stripe count, size, pattern, and each object's OST index, id and\n"
	  "size (asked of the OSTs), as lfs getstripe prints them.",
	  NULL, 0 },
	{ "df", wcli_cmd_df, "[-h]",
	  "Show space per MDT and OST (as lfs df) and the filesystem summary.\n"
	  "  -h, --human-readable  sizes in K, M, G, T",
	  NULL, 0 },
	{ "path2fid", wcli_cmd_path2fid, "PATH...", "Print the FID of each path.", NULL, 0 },
	{ "dra", NULL, "SUBCOMMAND [ARGS...]",
	  "Data repository associations: tie a directory to s3://BUCKET/PREFIX.\n"
	  "An association makes the files below a directory archivable to S3 and\n"
	  "restorable from it; an import builds the tree from the bucket listing.",
	  wcli_dra_cmds, WEIR_ARRAY_SIZE(wcli_dra_cmds) },
	{ "hsm", NULL, "SUBCOMMAND [ARGS...]",
	  "The S3 tier: archive, release, restore files; their state; the queue.\n"
	  "Files must be under a data repository association ('weir dra'). Archive and\n"
	  "restore are done by the copytool weir-hsmd; the MDS coordinates.",
	  wcli_hsm_cmds, WEIR_ARRAY_SIZE(wcli_hsm_cmds) },
	{ "key", NULL, "SUBCOMMAND [ARGS...]",
	  "The cluster key file: make one, rotate keys, list them.\n"
	  "Every connection to a Weir server proves it holds a key of the cluster's key\n"
	  "file (HMAC-SHA256 challenge-response); see the README's Security section.",
	  wcli_key_cmds, WEIR_ARRAY_SIZE(wcli_key_cmds) },
};

/* ------------------------------------------------------------ messages */

void wcli_err(const struct wcli *cli, const char *path, int rc)
{
	int e = rc < 0 ? -rc : rc;
	if (path)
		fprintf(stderr, "weir %s: %s: %s (-%s)\n", cli->cl_cmd, path, strerror(e),
			weir_errno_name(e));
	else
		fprintf(stderr, "weir %s: %s (-%s)\n", cli->cl_cmd, strerror(e),
			weir_errno_name(e));
}

void wcli_utc_time(int64_t ns, char *buf, size_t len)
{
	time_t t = (time_t)(ns / 1000000000LL);
	struct tm tm;

	if (!len)
		return;
	buf[0] = '\0';
	if (gmtime_r(&t, &tm))
		strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

void wcli_errf(const struct wcli *cli, const char *path, const char *fmt, ...)
{
	va_list ap;

	if (path)
		fprintf(stderr, "weir %s: %s: ", cli->cl_cmd, path);
	else
		fprintf(stderr, "weir %s: ", cli->cl_cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int wcli_usage(const struct wcli *cli, const char *fmt, ...)
{
	va_list ap;

	if (fmt) {
		fprintf(stderr, "weir %s: ", cli->cl_cmd);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	if (cli->cl_cur)
		fprintf(stderr, "usage: weir %s %s\nTry 'weir %s --help' for more.\n", cli->cl_cmd,
			cli->cl_cur->cc_usage, cli->cl_cmd);
	return WCLI_EXIT_USAGE;
}

int wcli_bad_opt(const struct wcli *cli, char **argv)
{
	if (optopt)
		return wcli_usage(cli, "invalid option -- '%c'", optopt);
	return wcli_usage(cli, "invalid option '%s'", argv[optind - 1]);
}

int wcli_help_cmd(const struct wcli *cli)
{
	const struct wcli_cmd *c = cli->cl_cur;

	printf("usage: weir %s %s\n\n%s\n", cli->cl_cmd, c->cc_usage, c->cc_help);
	if (c->cc_sub) {
		printf("\nSubcommands:\n");
		for (size_t i = 0; i < c->cc_nr_sub; i++) {
			const char *h = c->cc_sub[i].cc_help;
			int n = (int)strcspn(h, "\n");
			printf("  %-11s %.*s\n", c->cc_sub[i].cc_name, n, h);
		}
	}
	return WCLI_EXIT_OK;
}

static void wcli_help_table(FILE *f, const struct wcli_cmd *table, size_t nr, const char *prefix)
{
	if (*prefix)
		fprintf(f, "usage: weir [--mds HOST:PORT] %s SUBCOMMAND [ARGS...]\n\n", prefix);
	else
		fprintf(f, "usage: weir [--mds HOST:PORT] COMMAND [ARGS...]\n\n"
			   "Weir's user and admin tool.\n\n"
			   "Options:\n"
			   "  --mds HOST:PORT  the MDS to talk to (default: $WEIR_MDS)\n"
			   "  --key-file FILE  the cluster key file (default: $WEIR_KEY_FILE, else\n"
			   "                   /etc/weir/cluster.key)\n"
			   "  --insecure       connect without a key (servers running --insecure)\n"
			   "  --help           this help\n\n");
	fprintf(f, "%s:\n", *prefix ? "Subcommands" : "Commands");
	for (size_t i = 0; i < nr; i++) {
		const char *h = table[i].cc_help;
		int n = (int)strcspn(h, "\n");
		fprintf(f, "  %-11s %.*s\n", table[i].cc_name, n, h);
	}
	fprintf(f, "  %-11s %s\n", "help", "Show help for a command.");
	fprintf(f, "\nRun 'weir %s%shelp COMMAND' or 'weir %s%sCOMMAND --help' for details.\n",
		prefix, *prefix ? " " : "", prefix, *prefix ? " " : "");
}

/* ------------------------------------------------------------ dispatch */

static const struct wcli_cmd *wcli_find(const struct wcli_cmd *table, size_t nr,
					const char *name)
{
	for (size_t i = 0; i < nr; i++)
		if (!strcmp(table[i].cc_name, name))
			return &table[i];
	return NULL;
}

static void wcli_set_cmd(struct wcli *cli, const char *prefix, const struct wcli_cmd *c)
{
	char tmp[sizeof(cli->cl_cmd)];
	size_t pl = strnlen(prefix, sizeof(tmp) / 2 - 1);
	size_t nl = strnlen(c->cc_name, sizeof(tmp) / 2 - 1);

	cli->cl_cur = c;
	memcpy(tmp, prefix, pl);
	if (pl)
		tmp[pl++] = ' ';
	memcpy(tmp + pl, c->cc_name, nl);
	tmp[pl + nl] = '\0';
	memcpy(cli->cl_cmd, tmp, sizeof(tmp));
}

/* Long options are spelled out in a command's help text: "--name". */
static bool wcli_long_known(const struct wcli_cmd *c, const char *opt)
{
	size_t n = strcspn(opt, "=");
	for (const char *p = strstr(c->cc_help, "--"); p; p = strstr(p + 2, "--"))
		if (!strncmp(p + 2, opt, n) && !isalnum((unsigned char)p[2 + n]) && p[2 + n] != '-')
			return true;
	return false;
}

/* True when "--help" is among the options (before a "--"). */
static bool wcli_wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			return false;
		if (!strcmp(argv[i], "--help"))
			return true;
	}
	return false;
}

int wcli_dispatch(struct wcli *cli, const struct wcli_cmd *table, size_t nr, const char *prefix,
		  int argc, char **argv)
{
	const struct wcli_cmd *c;

	if (argc < 1) {
		wcli_help_table(stderr, table, nr, prefix);
		return WCLI_EXIT_USAGE;
	}
	if (!strcmp(argv[0], "help") || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
		if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
		    !strcmp(argv[1], "help")) {
			wcli_help_table(stdout, table, nr, prefix);
			return WCLI_EXIT_OK;
		}
		c = wcli_find(table, nr, argv[1]);
		if (!c) {
			fprintf(stderr, "weir%s%s: unknown command '%s'; see 'weir %s%s--help'\n",
				*prefix ? " " : "", prefix, argv[1], prefix, *prefix ? " " : "");
			return WCLI_EXIT_USAGE;
		}
		wcli_set_cmd(cli, prefix, c);
		if (c->cc_sub && argc > 2) {
			char sub_prefix[sizeof(cli->cl_cmd)];
			memcpy(sub_prefix, cli->cl_cmd, sizeof(sub_prefix));
			argv[1] = "help";
			return wcli_dispatch(cli, c->cc_sub, c->cc_nr_sub, sub_prefix, argc - 1,
					     argv + 1);
		}
		return wcli_help_cmd(cli);
	}
	c = wcli_find(table, nr, argv[0]);
	if (!c) {
		fprintf(stderr, "weir%s%s: unknown command '%s'; see 'weir %s%s--help'\n",
			*prefix ? " " : "", prefix, argv[0], prefix, *prefix ? " " : "");
		return WCLI_EXIT_USAGE;
	}
	wcli_set_cmd(cli, prefix, c);
	if (c->cc_sub) {
		char sub_prefix[sizeof(cli->cl_cmd)];
		memcpy(sub_prefix, cli->cl_cmd, sizeof(sub_prefix));
		if (argc < 2) {
			wcli_help_cmd(cli);
			return WCLI_EXIT_USAGE;
		}
		if (!strcmp(argv[1], "--help"))
			return wcli_help_cmd(cli);
		return wcli_dispatch(cli, c->cc_sub, c->cc_nr_sub, sub_prefix, argc - 1, argv + 1);
	}
	if (wcli_wants_help(argc, argv))
		return wcli_help_cmd(cli);
	/* getopt's own messages would lack the "weir CMD:" prefix: report
	 * unknown options here instead (commands see '?' and return usage) */
	opterr = 0;
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (argv[i][0] != '-' || !argv[i][1])
			continue;
		if (argv[i][1] == '-' && !wcli_long_known(c, argv[i] + 2))
			return wcli_usage(cli, "unknown option '%s'", argv[i]);
	}
	return c->cc_fn(cli, argc, argv);
}

/*
 * Say why weir_mount() of cli->cl_mds failed with \a rc, in the user's terms:
 * libweir reports a host name that does not resolve as -EHOSTUNREACH (and
 * other lookup failures as -EINVAL), so the name is looked up again here
 * for getaddrinfo's own message; -EOPNOTSUPP is a Weir server that serves
 * no MDS requests (an OSS), -EPROTO a peer that does not speak Weir.
 */
static void wcli_mount_err(struct wcli *cli, int rc)
{
	const char *a = cli->cl_mds;
	char host[256];
	uint16_t port;

	if (weir_parse_hostport(a, host, sizeof(host), &port)) {
		wcli_errf(cli, a, "not a valid MDS address: expected HOST:PORT with a port from 1"
			  " to 65535 (-EINVAL)");
		return;
	}
	if (rc == -EHOSTUNREACH || rc == -EINVAL) {
		struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
		struct addrinfo *res = NULL;
		int gai = getaddrinfo(host, NULL, &hints, &res);
		if (gai) {
			wcli_errf(cli, a, "cannot resolve the host name '%s': %s", host,
				  gai == EAI_SYSTEM ? strerror(errno) : gai_strerror(gai));
			return;
		}
		freeaddrinfo(res);
	}
	if (weir_mount_error()[0] && (rc == -EACCES || rc == -ENOENT || rc == -EPERM ||
				      rc == -EINVAL)) {
		/* "HOST:PORT: authentication failed: the cluster key differs", or
		 * what is wrong with the key file */
		fprintf(stderr, "weir: %s (-%s)\n", weir_mount_error(), weir_errno_name(-rc));
		return;
	}
	if (rc == -EOPNOTSUPP)
		wcli_errf(cli, a, "the peer at %s is not an MDS: it is a Weir server that serves"
			  " no MDS requests (an OSS); give the MDS's address to --mds or WEIR_MDS"
			  " (-EOPNOTSUPP)", a);
	else if (rc == -EPROTO)
		wcli_errf(cli, a, "the peer at %s is not an MDS: it does not speak the Weir"
			  " protocol (-EPROTO)", a);
	else
		wcli_err(cli, a, rc);
}

int wcli_mount(struct wcli *cli)
{
	int rc;

	if (cli->cl_fs)
		return 0;
	if (!cli->cl_mds || !*cli->cl_mds) {
		fprintf(stderr, "weir: no MDS address: use --mds HOST:PORT or set WEIR_MDS\n");
		return WCLI_EXIT_USAGE;
	}
	rc = weir_mount(cli->cl_mds, &cli->cl_fs);
	if (rc) {
		cli->cl_fs = NULL;
		wcli_mount_err(cli, rc);
		return WCLI_EXIT_FAIL;
	}
	return 0;
}

/* ------------------------------------------------------------ paths, time */

char *wcli_path_join(const char *dir, const char *name)
{
	size_t dl = strlen(dir);
	char *p;

	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	if (asprintf(&p, "%.*s%s%s", (int)dl, dir, (dl && dir[dl - 1] == '/') ? "" : "/",
		     name) < 0)
		return NULL;
	return p;
}

char *wcli_basename(const char *path)
{
	size_t len = strlen(path);
	size_t start;

	while (len > 1 && path[len - 1] == '/')
		len--;
	start = len;
	while (start > 0 && path[start - 1] != '/')
		start--;
	if (start == len) /* "/" or "" */
		return strdup(len ? "/" : "");
	return strndup(path + start, len - start);
}

bool wcli_path_is_root(const char *path)
{
	if (!*path)
		return false;
	for (; *path; path++)
		if (*path != '/')
			return false;
	return true;
}

double wcli_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
	struct wcli cli;
	const char *mds = NULL;
	int i = 1, out = 1, rc;

	memset(&cli, 0, sizeof(cli));
	snprintf(cli.cl_cmd, sizeof(cli.cl_cmd), "%s", "weir");
	/* --mds may come before or after the command (but not after "--") */
	for (int k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--")) {
			while (k < argc)
				argv[out++] = argv[k++];
			break;
		}
		if (!strcmp(argv[k], "--mds")) {
			if (k + 1 >= argc) {
				fprintf(stderr, "weir: --mds needs HOST:PORT\n");
				return WCLI_EXIT_USAGE;
			}
			mds = argv[++k];
		} else if (!strncmp(argv[k], "--mds=", 6)) {
			mds = argv[k] + 6;
		} else if (!strcmp(argv[k], "--key-file") || !strncmp(argv[k], "--key-file=", 11)) {
			/* libweir reads WEIR_KEY_FILE at mount */
			const char *kf = argv[k][10] == '=' ? argv[k] + 11 : NULL;
			if (!kf && k + 1 >= argc) {
				fprintf(stderr, "weir: --key-file needs FILE\n");
				return WCLI_EXIT_USAGE;
			}
			setenv("WEIR_KEY_FILE", kf ? kf : argv[++k], 1);
		} else if (!strcmp(argv[k], "--insecure")) {
			setenv("WEIR_INSECURE", "1", 1);
		} else {
			argv[out++] = argv[k];
		}
	}
	argc = out;
	argv[argc] = NULL;
	if (i < argc && argv[i][0] == '-' && strcmp(argv[i], "--help") && strcmp(argv[i], "-h")) {
		fprintf(stderr, "weir: unknown option '%s'; see 'weir --help'\n", argv[i]);
		return WCLI_EXIT_USAGE;
	}
	cli.cl_mds = mds ? mds : getenv("WEIR_MDS");
	rc = wcli_dispatch(&cli, wcli_cmds, WEIR_ARRAY_SIZE(wcli_cmds), "", argc - i, argv + i);
	if (cli.cl_fs)
		weir_umount(cli.cl_fs);
	if (fflush(stdout) && rc == WCLI_EXIT_OK) {
		fprintf(stderr, "weir: write error on standard output\n");
		rc = WCLI_EXIT_FAIL;
	}
	return rc;
}
