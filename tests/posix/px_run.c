/*
 * tests/posix/px_run.c - the runner of the POSIX conformance suite (see
 * px_run.h and README.md); what cases call is in px_rec.c.
 *
 * Processes: the test binary's main process starts the cluster (harness.c,
 * fork/exec only: it has no threads) and never mounts Weir itself. For each
 * case and each backend it forks one process that sets the backend up (the
 * local one chroot()s into the reference directory; libweir mounts at its
 * first call), makes the case directory, runs the case and writes each
 * record to a pipe as it is made, so a crash still leaves the records up to
 * it. The main process reads the pipe (killing the process group after
 * PX_CASE_TIMEOUT_S), then compares the two logs. Client processes of a
 * case (px_clients_run) are forked by the case's process and record into
 * shared memory that the case's process appends to its log afterwards.
 */
#define _GNU_SOURCE
#include "px_run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "tests/lib/harness.h"

#define PX_CASE_TIMEOUT_S 60
#define PX_STEP_TIMEOUT_MS 30000
#define PX_CLIENT_LOG 65536
#define PX_MAX_CLIENTS 16
#define PX_DATA_SUMMARY 160

#define PX_MIN(a, b) ((a) < (b) ? (a) : (b))

/* ------------------------------------------------------------ removing trees */

/*
 * rm -rf of \a name in directory \a at, by descriptors (th_rm_rf() goes
 * by path, which fails past PATH_MAX: the path cases nest that deep).
 */
static void px_rm_at(int at, const char *name)
{
	if (!unlinkat(at, name, 0) || errno == ENOENT)
		return;
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			px_rm_at(dirfd(d), de->d_name);
	closedir(d);
	unlinkat(at, name, AT_REMOVEDIR);
}

static void px_rm_rf(const char *path)
{
	px_rm_at(AT_FDCWD, path);
}

/* ------------------------------------------------------------ running one case in a process */

enum px_be_kind { PX_KIND_WEIR, PX_KIND_LOCAL };

/* One side of the comparison. */
struct px_be_conf {
	const char *bc_label;     /* "libweir", "linux" */
	enum px_be_kind bc_kind;
	char bc_root[4096];       /* local: the directory */
	bool bc_chroot;           /* local: chroot into it */
	unsigned bc_flags;        /* PX_BE_* the backend will have */
};

/* What one run of a case left. */
struct px_result {
	char *pr_log;        /* records, NUL-terminated */
	size_t pr_len;
	bool pr_ran;         /* "#end" seen */
	bool pr_skipped;     /* "#skip" seen */
	char pr_skip[200];
	char pr_death[64];   /* "" or how the process ended abnormally */
};

static struct {
	const char *r_suite;
	const struct px_case *r_cases;
	size_t r_nr;
	size_t r_next;            /* next case the CUnit test function runs */
	struct th_cluster *r_cl;
	struct px_weir_env r_env;
	struct px_be_conf r_subject, r_ref;
	char r_ref_dir[64];       /* made here, removed at the end */
	bool r_verbose;
	const char *r_filter;
	char **r_lines;           /* per case: its summary line */
	bool *r_differs;          /* per case: it differs (named in the totals line) */
	unsigned r_ok, r_diff, r_skip, r_xfail, r_xpass;
} px_r;

static const struct px_ops *px_be_make(const struct px_be_conf *bc)
{
	if (bc->bc_kind == PX_KIND_WEIR)
		return px_ops_libweir(&px_r.r_env);
	return px_ops_local(bc->bc_root, bc->bc_chroot);
}

/* The child: set up, run, report; never returns. */
static void px_child(const struct px_be_conf *bc, const struct px_case *pc, int fd)
{
	static struct px_ctx c;
	setpgid(0, 0);
	alarm(PX_CASE_TIMEOUT_S);
	umask(0); /* libweir applies no umask: modes are compared as requested */
	memset(&c, 0, sizeof(c));
	c.pc_case = pc->pc_name;
	c.pc_log_fd = fd;
	c.pc_client = -1;
	snprintf(c.pc_dir, sizeof(c.pc_dir), "/%s.%s", px_r.r_suite, pc->pc_name);
	if (bc->bc_kind == PX_KIND_LOCAL && bc->bc_chroot &&
	    (chroot(bc->bc_root) < 0 || chdir("/") < 0)) {
		dprintf(fd, "#error chroot %s: %s\n", bc->bc_root, strerror(errno));
		_exit(2);
	}
	const struct px_ops *o = px_be_make(bc);
	int rc = o->po_mkdir(o, c.pc_dir, 0755);
	if (rc) {
		dprintf(fd, "#error mkdir %s: %s\n", c.pc_dir, px_errname(rc));
		_exit(2);
	}
	if ((pc->pc_flags & PX_STRIPED) && o->po_stripe_dir) {
		rc = o->po_stripe_dir(o, c.pc_dir, (uint32_t)-1, 64 * 1024);
		if (rc) {
			dprintf(fd, "#error setstripe %s: %s\n", c.pc_dir, px_errname(rc));
			_exit(2);
		}
	}
	rc = pc->pc_fn(o, &c);
	if (rc == PX_SKIPPED)
		dprintf(fd, "#skip %s\n", c.pc_skip[0] ? c.pc_skip : "(no reason given)");
	else
		dprintf(fd, "#end %d\n", rc);
	o->po_detach(o);
	_exit(0);
}

/* Run case \a pc on backend \a bc in a new process; fill \a res. */
static void px_run_one(const struct px_be_conf *bc, const struct px_case *pc, struct px_result *res)
{
	memset(res, 0, sizeof(*res));
	if (bc->bc_kind == PX_KIND_LOCAL) {
		/* a rerun on a persistent tree (a FUSE mount) starts clean */
		char dir[4096 + 300];
		snprintf(dir, sizeof(dir), "%s/%s.%s", bc->bc_root, px_r.r_suite, pc->pc_name);
		px_rm_rf(dir);
	}
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(res->pr_death, sizeof(res->pr_death), "pipe: %s", strerror(errno));
		return;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(res->pr_death, sizeof(res->pr_death), "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return;
	}
	if (pid == 0) {
		close(p[0]);
		px_child(bc, pc, p[1]);
	}
	setpgid(pid, pid);
	close(p[1]);
	size_t cap = 1 << 16;
	res->pr_log = malloc(cap);
	uint64_t deadline = th_now_ms() + (PX_CASE_TIMEOUT_S + 5) * 1000ULL;
	bool timed_out = false;
	for (;;) {
		uint64_t now = th_now_ms();
		if (now >= deadline) {
			timed_out = true;
			break;
		}
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		int pr = poll(&pfd, 1, (int)(deadline - now));
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0) {
			timed_out = pr == 0;
			break;
		}
		if (res->pr_log && res->pr_len + 4096 > cap) {
			cap *= 2;
			char *m = realloc(res->pr_log, cap);
			if (!m)
				break;
			res->pr_log = m;
		}
		ssize_t n = read(p[0], res->pr_log + res->pr_len, cap - res->pr_len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		res->pr_len += (size_t)n;
	}
	close(p[0]);
	if (timed_out)
		kill(-pid, SIGKILL);
	int st = 0;
	waitpid(pid, &st, 0);
	kill(-pid, SIGKILL); /* client processes left behind */
	if (res->pr_log)
		res->pr_log[res->pr_len] = 0;
	if (timed_out)
		snprintf(res->pr_death, sizeof(res->pr_death), "timeout after %d s",
			 PX_CASE_TIMEOUT_S);
	else if (WIFSIGNALED(st))
		snprintf(res->pr_death, sizeof(res->pr_death), "killed by signal %d (%s)",
			 WTERMSIG(st), strsignal(WTERMSIG(st)));
	else if (WEXITSTATUS(st))
		snprintf(res->pr_death, sizeof(res->pr_death), "exit status %d",
			 WEXITSTATUS(st));
	/* control lines */
	char *s = res->pr_log;
	while (s && (s = strstr(s, "#")) != NULL) {
		if (s != res->pr_log && s[-1] != '\n') {
			s++;
			continue;
		}
		if (!strncmp(s, "#end", 4)) {
			res->pr_ran = true;
		} else if (!strncmp(s, "#skip ", 6)) {
			res->pr_skipped = true;
			size_t l = strcspn(s + 6, "\n");
			snprintf(res->pr_skip, sizeof(res->pr_skip), "%.*s", (int)l, s + 6);
		} else if (!strncmp(s, "#error ", 7) && !res->pr_death[0]) {
			size_t l = strcspn(s + 7, "\n");
			snprintf(res->pr_death, sizeof(res->pr_death), "%.*s", (int)l, s + 7);
		}
		s++;
	}
}

/* ------------------------------------------------------------ comparing */

/* The records (not control lines) of \a log, as an array of line pointers (modifies log). */
static size_t px_split(char *log, char ***out)
{
	size_t n = 0, cap = 64;
	char **v = malloc(cap * sizeof(*v));
	char *save = NULL;
	for (char *l = log ? strtok_r(log, "\n", &save) : NULL; l && v;
	     l = strtok_r(NULL, "\n", &save)) {
		if (l[0] == '#')
			continue;
		if (n == cap) {
			cap *= 2;
			char **m = realloc(v, cap * sizeof(*v));
			if (!m)
				break;
			v = m;
		}
		v[n++] = l;
	}
	*out = v;
	return v ? n : 0;
}

/* Append to \a out the records of \a name before and at \a at. \return the new length. */
static size_t px_context(char *out, size_t cap, size_t used, const char *name, char **v, size_t n,
			 size_t at)
{
	size_t from = at > 3 ? at - 3 : 0;
	used += (size_t)snprintf(out + used, cap - used, "      %s log, records %zu..%zu:\n", name,
				 from + 1, PX_MIN(n, at + 1));
	for (size_t i = from; i <= at && i < n && used < cap; i++)
		used += (size_t)snprintf(out + used, cap - used, "        %s%s\n",
					 i == at ? "> " : "  ", v[i]);
	return PX_MIN(used, cap - 1);
}

/*
 * Compare the subject's and the reference's records; on a difference, put
 * a one-line description in \a why. \return true when equal.
 */
static bool px_compare(struct px_result *a, struct px_result *b, char *why, size_t whylen,
		       char *ctx, size_t ctxlen)
{
	char **va, **vb;
	size_t na = px_split(a->pr_log, &va), nb = px_split(b->pr_log, &vb);
	size_t i;
	bool same = true;
	for (i = 0; i < na && i < nb; i++)
		if (strcmp(va[i], vb[i]))
			break;
	if (i < na && i < nb) {
		const char *ea = strstr(va[i], " = "), *eb = strstr(vb[i], " = ");
		if (ea && eb && ea - va[i] == eb - vb[i] && !strncmp(va[i], vb[i], (size_t)(ea - va[i])))
			snprintf(why, whylen, "at record %zu \"%.*s\": %s %s, %s %s", i + 1,
				 (int)(ea - va[i]), va[i], px_r.r_subject.bc_label, ea + 3,
				 px_r.r_ref.bc_label, eb + 3);
		else
			snprintf(why, whylen, "at record %zu: %s \"%s\", %s \"%s\"", i + 1,
				 px_r.r_subject.bc_label, va[i], px_r.r_ref.bc_label, vb[i]);
		same = false;
	} else if (na != nb) {
		snprintf(why, whylen, "at record %zu: %s %s%s%s, %s %s%s%s", i + 1,
			 px_r.r_subject.bc_label, i < na ? "\"" : "", i < na ? va[i] : "(no more records)",
			 i < na ? "\"" : "", px_r.r_ref.bc_label, i < nb ? "\"" : "",
			 i < nb ? vb[i] : "(no more records)", i < nb ? "\"" : "");
		same = false;
	}
	if (!same) {
		size_t ndiff = 0, wl = strlen(why);
		for (size_t k = i; k < na && k < nb; k++)
			ndiff += strcmp(va[k], vb[k]) != 0;
		if (na == nb)
			snprintf(why + wl, whylen - wl, " (%zu of %zu records differ)", ndiff, na);
		else
			snprintf(why + wl, whylen - wl, " (%s has %zu records, %s %zu)",
				 px_r.r_subject.bc_label, na, px_r.r_ref.bc_label, nb);
		size_t used = px_context(ctx, ctxlen, 0, px_r.r_subject.bc_label, va, na, i);
		px_context(ctx, ctxlen, used, px_r.r_ref.bc_label, vb, nb, i);
	}
	free(va);
	free(vb);
	return same;
}

/* FAIL records of \a r: the first one in \a why. \return how many. */
static int px_fails(const struct px_result *r, char *why, size_t whylen)
{
	int n = 0;
	for (const char *s = r->pr_log; s && (s = strstr(s, "FAIL = ")) != NULL; s++) {
		if (s != r->pr_log && s[-1] != '\n' && s[-1] != ' ')
			continue;
		if (!n++)
			snprintf(why, whylen, "%.*s", (int)strcspn(s + 7, "\n"), s + 7);
	}
	return n;
}

static void px_print_log(const char *name, const struct px_result *r)
{
	printf("      ---- %s log%s%s\n", name, r->pr_death[0] ? ", " : "", r->pr_death);
	const char *s = r->pr_log;
	while (s && *s) {
		size_t l = strcspn(s, "\n");
		printf("        %.*s\n", (int)l, s);
		s += l + (s[l] == '\n');
	}
}

/* ------------------------------------------------------------ the CUnit test of one case */

static void px_summary(size_t idx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void px_summary(size_t idx, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	free(px_r.r_lines[idx]);
	px_r.r_lines[idx] = strdup(line);
}

static void px_fail(const char *msg)
{
	/* CUnit keeps the message pointer: give it one that lives on */
	CU_assertImplementation(CU_FALSE, __LINE__, strdup(msg), __FILE__, "", CU_FALSE);
}

static bool px_filtered_out(const char *name)
{
	if (!px_r.r_filter || !px_r.r_filter[0])
		return false;
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", px_r.r_filter);
	char *save = NULL;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (strstr(name, t))
			return false;
	return true;
}

static void px_case_run(void)
{
	size_t idx = px_r.r_next++;
	const struct px_case *pc = &px_r.r_cases[idx];
	struct px_result a, b;
	char why[2048];
	static char ctx[16384];

	if (px_filtered_out(pc->pc_name)) {
		px_r.r_skip++;
		px_summary(idx, "case %s: skipped (PX_CASES)", pc->pc_name);
		printf("skipped (PX_CASES) ");
		return;
	}
	const struct px_be_conf *sa = &px_r.r_subject, *rb = &px_r.r_ref;
	const char *need = NULL;
	if ((pc->pc_flags & PX_ROOTED) &&
	    !((sa->bc_flags & PX_BE_ROOTED) && ((pc->pc_flags & PX_DIRECT) ||
						(rb->bc_flags & PX_BE_ROOTED))))
		need = "a rooted backend: run as root (chroot) so that \"/\" is the root";
	if ((pc->pc_flags & PX_CREDS) &&
	    !((sa->bc_flags & PX_BE_CREDS) && ((pc->pc_flags & PX_DIRECT) ||
					       (rb->bc_flags & PX_BE_CREDS))))
		need = "credential switching: run as root";
	if ((pc->pc_flags & PX_WEIR) && sa->bc_kind != PX_KIND_WEIR)
		need = "the libweir backend";
	if (need) {
		px_r.r_skip++;
		px_summary(idx, "case %s: skipped (needs %s)", pc->pc_name, need);
		printf("skipped (needs %s) ", need);
		return;
	}

	uint64_t t0 = th_now_ms();
	px_run_one(sa, pc, &a);
	if (a.pr_skipped) {
		px_r.r_skip++;
		px_summary(idx, "case %s: skipped (needs %s)", pc->pc_name, a.pr_skip);
		printf("skipped (needs %s) ", a.pr_skip);
		free(a.pr_log);
		return;
	}
	bool direct = pc->pc_flags & PX_DIRECT;
	bool ok, hard = false; /* hard: a crash, hang or broken reference; never "expected" */
	why[0] = 0;
	ctx[0] = 0;
	memset(&b, 0, sizeof(b));
	if (!a.pr_ran) {
		/* the subject did not get through its case: say how it ended */
		ok = false;
		hard = true;
		snprintf(why, sizeof(why), "%s: %s", sa->bc_label,
			 a.pr_death[0] ? a.pr_death : "ended without finishing the case");
		if (!direct)
			px_run_one(rb, pc, &b);
	} else if (direct) {
		int nf = px_fails(&a, why, sizeof(why));
		ok = a.pr_ran && !a.pr_death[0] && nf == 0;
		if (!ok && !why[0])
			snprintf(why, sizeof(why), "%s: %s", sa->bc_label,
				 a.pr_death[0] ? a.pr_death : "did not finish");
	} else {
		px_run_one(rb, pc, &b);
		if (b.pr_skipped || !b.pr_ran || b.pr_death[0]) {
			/* the reference itself must run: a broken case, not a Weir finding */
			ok = false;
			hard = true;
			snprintf(why, sizeof(why), "the reference (%s) did not run: %s",
				 rb->bc_label,
				 b.pr_skipped ? b.pr_skip : b.pr_death[0] ? b.pr_death : "no end");
		} else {
			char *la = a.pr_log ? strdup(a.pr_log) : NULL;
			char *lb = b.pr_log ? strdup(b.pr_log) : NULL;
			struct px_result ca = a, cb = b;
			ca.pr_log = la;
			cb.pr_log = lb;
			ok = px_compare(&ca, &cb, why, sizeof(why), ctx, sizeof(ctx));
			free(la);
			free(lb);
			if (ok && (a.pr_death[0] || !a.pr_ran)) {
				ok = false;
				hard = true;
				snprintf(why, sizeof(why), "%s: %s", sa->bc_label,
					 a.pr_death[0] ? a.pr_death : "did not finish");
			}
			char fw[1024];
			if (ok && px_fails(&a, fw, sizeof(fw))) {
				ok = false;
				snprintf(why, sizeof(why), "%s: %s", sa->bc_label, fw);
			}
		}
	}
	uint64_t ms = th_now_ms() - t0;
	if (ok && !pc->pc_xfail) {
		px_r.r_ok++;
		px_summary(idx, "case %s: ok", pc->pc_name);
		printf("ok (%llu ms) ", (unsigned long long)ms);
	} else if (ok) {
		px_r.r_xpass++;
		px_summary(idx, "case %s: ok, but marked expected to fail (%s): remove the mark",
			   pc->pc_name, pc->pc_xfail);
		printf("XPASS (marked: %s) ", pc->pc_xfail);
	} else if (pc->pc_xfail && !hard) {
		px_r.r_xfail++;
		px_summary(idx, "case %s: expected failure (%s): DIFF %s", pc->pc_name,
			   pc->pc_xfail, why);
		printf("\n    expected failure (%s): %s\n%s    ", pc->pc_xfail, why, ctx);
	} else {
		px_r.r_diff++;
		px_r.r_differs[idx] = true;
		const char *what = direct || hard ? "FAIL" : "DIFF";
		px_summary(idx, "case %s: %s %s", pc->pc_name, what, why);
		printf("\n    %s %s\n%s    ", what, why, ctx);
		char msg[2300];
		snprintf(msg, sizeof(msg), "case %s: %s", pc->pc_name, why);
		px_fail(msg);
	}
	if (px_r.r_verbose || (!ok && (a.pr_death[0] || b.pr_death[0]))) {
		px_print_log(sa->bc_label, &a);
		if (!direct)
			px_print_log(rb->bc_label, &b);
	}
	free(a.pr_log);
	free(b.pr_log);
}

/* ------------------------------------------------------------ main */

static int px_suite_init(void)
{
	if (px_r.r_subject.bc_kind == PX_KIND_WEIR) {
		struct th_cluster_opts co;
		memset(&co, 0, sizeof(co));
		int rc = th_cluster_start(&co, &px_r.r_cl);
		if (rc) {
			fprintf(stderr, "th_cluster_start: %s\n", strerror(-rc));
			return -1;
		}
		px_r.r_env.pwe_mds_addr = th_cluster_mds_addr(px_r.r_cl);
		px_r.r_env.pwe_cluster = px_r.r_cl;
		px_ops_libweir(&px_r.r_env); /* binds the calls; mounts nothing */
		const char *mm = px_weir_mismatched();
		if (mm[0])
			printf("\nnote: weir.h declares %s with another signature than "
			       "tests/posix/px_ops_libweir.c expects: cases needing them skip\n",
			       mm);
	}
	return 0;
}

static int px_suite_clean(void)
{
	int rc = 0;
	if (px_r.r_cl)
		rc = th_cluster_stop(px_r.r_cl);
	px_r.r_cl = NULL;
	return rc ? -1 : 0;
}

/* Set up a local backend on \a root (made by mkdtemp when NULL). \return 0 or -1. */
static int px_local_conf(struct px_be_conf *bc, const char *label, const char *root, int chroot_env)
{
	bc->bc_label = label;
	bc->bc_kind = PX_KIND_LOCAL;
	if (root) {
		snprintf(bc->bc_root, sizeof(bc->bc_root), "%s", root);
	} else {
		snprintf(px_r.r_ref_dir, sizeof(px_r.r_ref_dir), "/tmp/weir-px-XXXXXX");
		if (!mkdtemp(px_r.r_ref_dir)) {
			perror("mkdtemp");
			return -1;
		}
		chmod(px_r.r_ref_dir, 0755);
		snprintf(bc->bc_root, sizeof(bc->bc_root), "%s", px_r.r_ref_dir);
	}
	bool can = geteuid() == 0;
	bc->bc_chroot = chroot_env < 0 ? can : chroot_env && can;
	bc->bc_flags = (bc->bc_chroot ? PX_BE_ROOTED : 0) | (can ? PX_BE_CREDS : 0);
	return 0;
}

int px_main(const char *suite, const struct px_case *cases)
{
	memset(&px_r, 0, sizeof(px_r));
	px_r.r_suite = suite;
	px_r.r_cases = cases;
	for (px_r.r_nr = 0; cases[px_r.r_nr].pc_name; px_r.r_nr++)
		;
	px_r.r_verbose = getenv("PX_VERBOSE") && atoi(getenv("PX_VERBOSE")) > 0;
	px_r.r_filter = getenv("PX_CASES");
	const char *subj = getenv("PX_SUBJECT_ROOT");
	const char *sch = getenv("PX_SUBJECT_CHROOT");
	int subj_chroot = sch ? atoi(sch) : -1;
	if (subj && subj[0]) {
		/* a FUSE mount of Weir, or a prefix the LD_PRELOAD shim serves */
		if (px_local_conf(&px_r.r_subject, "subject", subj, subj_chroot))
			return 1;
	} else if (geteuid() != 0) {
		/*
		 * The reference chroot()s and switches credentials, and the
		 * root directory of the cluster the harness starts is root's.
		 */
		printf("%s: skipped: the POSIX suite on libweir runs as root\n", suite);
		return 77;
	} else {
		px_r.r_subject.bc_label = "libweir";
		px_r.r_subject.bc_kind = PX_KIND_WEIR;
		px_r.r_subject.bc_flags = PX_BE_ROOTED | PX_BE_WEIR | PX_BE_CREDS;
	}
	if (px_local_conf(&px_r.r_ref, "linux", NULL, -1))
		return 1;
	px_r.r_lines = calloc(px_r.r_nr, sizeof(*px_r.r_lines));
	px_r.r_differs = calloc(px_r.r_nr, sizeof(*px_r.r_differs));
	struct th_test *tests = calloc(px_r.r_nr + 1, sizeof(*tests));
	if (!px_r.r_lines || !px_r.r_differs || !tests)
		return 1;
	for (size_t i = 0; i < px_r.r_nr; i++) {
		tests[i].tt_name = cases[i].pc_name;
		tests[i].tt_fn = px_case_run;
	}
	char sname[64];
	snprintf(sname, sizeof(sname), "posix_%s", suite);
	printf("%s: subject %s%s%s, reference %s (%s, %s)\n", sname, px_r.r_subject.bc_label,
	       subj ? " at " : "", subj ? subj : "", px_r.r_ref.bc_root,
	       px_r.r_ref.bc_chroot ? "chroot" : "path prefix", "Linux, umask 0");
	int rc = th_cunit_run(sname, px_suite_init, px_suite_clean, tests);

	/* the totals line names the cases that differ: it is often all a log shows */
	char names[512] = "";
	size_t nl = 0;
	for (size_t i = 0; i < px_r.r_nr && nl < sizeof(names); i++)
		if (px_r.r_differs[i])
			nl += (size_t)snprintf(names + nl, sizeof(names) - nl, "%s%s", nl ? ", " : "",
					       cases[i].pc_name);
	printf("\n%s: %zu cases: %u ok, %u differ%s%s%s, %u skipped, %u expected failures%s\n",
	       sname, px_r.r_nr, px_r.r_ok, px_r.r_diff, nl ? " (" : "", names, nl ? ")" : "",
	       px_r.r_skip, px_r.r_xfail, px_r.r_xpass ? " (and some marked cases pass now)" : "");
	for (size_t i = 0; i < px_r.r_nr; i++)
		printf("%s\n", px_r.r_lines[i] ? px_r.r_lines[i] : "case ?: did not run");
	fflush(stdout);
	if (px_r.r_ref_dir[0] && !(getenv("TH_KEEP") && atoi(getenv("TH_KEEP")) > 0))
		px_rm_rf(px_r.r_ref_dir);
	for (size_t i = 0; i < px_r.r_nr; i++)
		free(px_r.r_lines[i]);
	free(px_r.r_lines);
	free(px_r.r_differs);
	free(tests);
	return rc;
}
