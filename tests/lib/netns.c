/*
 * tests/lib/netns.c - the network of netns.h: namespaces, veth pairs, the
 * bridge, their removal and the check that nothing is left; a cluster
 * placed on it. Programs and in-process calls on a host: netns_host.c.
 *
 * DESIGN. Everything runs on the test's main thread. The network is made
 * and unmade with iproute2's `ip` (run by th_spawn(), its output kept for
 * the message when it fails); a namespace is deleted as `ip netns del`
 * does it (umount2 + unlink of /run/netns/NAME), which is also what the
 * fatal-signal hook does, because it is async-signal-safe. Every network
 * still up is on the list th_nets for the atexit and fatal-signal hooks, which
 * act only in the process that made it (th_nets_owner). Making and
 * deleting namespaces hold flock(TH_NET_LOCK) against other test processes.
 */
#define _GNU_SOURCE
#include "netns.h"
#include "netns_int.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "harness_int.h"

#define TH_NET_LOCK "/tmp/weir-netns.lock"
#define TH_NETNS_DIR "/run/netns"
#define TH_NET_TAG_PREFIX "weirt-"
#define TH_NET_GONE_WAIT_MS 5000
#define TH_IP_TIMEOUT_MS 30000

static const char *const th_std_hosts[] = { TH_NET_HOST_MDS,     TH_NET_HOST_OSS0,
					    TH_NET_HOST_OSS1,    TH_NET_HOST_CLIENT0,
					    TH_NET_HOST_CLIENT1, TH_NET_HOST_OUTSIDER,
					    NULL };

static struct th_net *th_nets; /* every network up, newest first */
static pid_t th_nets_owner;
static int th_net_seq; /* k of the tag weirt-<pid>-<k> */

/* ------------------------------------------------------------ namespaces */

int th_netns_enter(const char *netns, int *saved)
{
	char path[PATH_MAX];

	*saved = -1;
	if (!netns || !*netns)
		return 0;
	snprintf(path, sizeof(path), TH_NETNS_DIR "/%s", netns);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int cur = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (cur < 0) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	if (setns(fd, CLONE_NEWNET) < 0) {
		int rc = -errno;
		close(fd);
		close(cur);
		return rc;
	}
	close(fd);
	*saved = cur;
	return 0;
}

void th_netns_leave(int saved)
{
	if (saved < 0)
		return;
	if (setns(saved, CLONE_NEWNET) < 0)
		/* cannot happen to root with a valid fd; staying in the host would be worse */
		abort();
	close(saved);
}

/* Delete a named namespace as `ip netns del` does. Async-signal-safe. */
static void ns_delete(const char *path)
{
	umount2(path, MNT_DETACH);
	unlink(path);
}

static int lock_take(void)
{
	int fd = open(TH_NET_LOCK, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	while (flock(fd, LOCK_EX) < 0 && errno == EINTR)
		;
	return fd;
}

static void lock_drop(int fd)
{
	if (fd >= 0)
		close(fd);
}

static dev_t th_nsfs_dev; /* the device of namespace files (nsfs), once one was seen */

/* The inode of namespace file \a path, or 0. */
static ino_t ns_ino(const char *path)
{
	struct stat st;
	if (stat(path, &st))
		return 0;
	th_nsfs_dev = st.st_dev;
	return st.st_ino;
}

static bool ino_in(ino_t ino, const ino_t *inos, int n)
{
	for (int i = 0; i < n; i++)
		if (inos[i] && inos[i] == ino)
			return true;
	return false;
}

/*
 * Processes inside one of the namespaces \a inos (not this one): each
 * SIGKILLed when \a kill_them, printed when \a print. \return how many.
 */
static int ns_procs(const ino_t *inos, int n, bool kill_them, bool print)
{
	int found = 0;
	DIR *d = opendir("/proc");
	struct dirent *de;
	char path[PATH_MAX];
	while (d && (de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/ns/net", pid);
		if (!ino_in(ns_ino(path), inos, n))
			continue;
		found++;
		if (print) {
			char comm[64] = "?";
			snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
			ssize_t r = weir_file_read_small(path, comm, sizeof(comm));
			if (r > 0 && comm[r - 1] == '\n')
				comm[r - 1] = 0;
			fprintf(stderr, "harness: pid %ld (%s) is still on the network%s\n", pid,
				comm, kill_them ? "; SIGKILL" : "");
		}
		if (kill_them)
			kill((pid_t)pid, SIGKILL);
	}
	if (d)
		closedir(d);
	return found;
}

/* Open files of process \a pid on the namespaces \a inos. */
static int pid_ns_files(long pid, const ino_t *inos, int n, bool print)
{
	int found = 0;
	char path[64], fp[128];
	snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
	DIR *d = opendir(path);
	if (!d)
		return 0;
	for (struct dirent *fe; (fe = readdir(d));) {
		struct stat st;
		snprintf(fp, sizeof(fp), "%s/%.32s", path, fe->d_name);
		if (stat(fp, &st) || st.st_dev != th_nsfs_dev || !ino_in(st.st_ino, inos, n))
			continue;
		found++;
		if (print)
			fprintf(stderr, "harness: pid %ld holds namespace net:[%llu] open (fd %s)\n",
				pid, (unsigned long long)st.st_ino, fe->d_name);
	}
	closedir(d);
	return found;
}

/* Open files of the namespaces \a inos (ours too: a th_host_enter() not left). */
static int ns_open_files(const ino_t *inos, int n, bool print)
{
	int found = 0;
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	for (struct dirent *de; (de = readdir(d));) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (!*end && pid > 0)
			found += pid_ns_files(pid, inos, n, print);
	}
	closedir(d);
	return found;
}

/* Mounts of the namespaces \a inos in our mount namespace. */
static int ns_mounts(const ino_t *inos, int n, bool print)
{
	int found = 0;
	char line[1024];
	FILE *mi = fopen("/proc/self/mountinfo", "re");
	while (mi && fgets(line, sizeof(line), mi)) {
		const char *p = strstr(line, "net:[");
		unsigned long long ino;
		if (!p || sscanf(p, "net:[%llu]", &ino) != 1 || !ino_in((ino_t)ino, inos, n))
			continue;
		found++;
		if (print)
			fprintf(stderr, "harness: still mounted: %s", line);
	}
	if (mi)
		fclose(mi);
	return found;
}

/*
 * What holds one of the namespaces \a inos: a process inside, an open
 * namespace file, a mount. \return how many (each printed when \a print).
 */
static int ns_holders(const ino_t *inos, int n, bool print)
{
	return ns_procs(inos, n, false, print) + ns_open_files(inos, n, print) +
	       ns_mounts(inos, n, print);
}

/* The pid in a namespace name "weirt-<pid>-...", or 0 when not one of ours. */
static long tag_pid(const char *name)
{
	size_t pl = strlen(TH_NET_TAG_PREFIX);
	if (strncmp(name, TH_NET_TAG_PREFIX, pl))
		return 0;
	char *end;
	long pid = strtol(name + pl, &end, 10);
	return *end == '-' && pid > 0 ? pid : 0;
}

/*
 * Delete the namespaces of test processes that are gone (killed with -9,
 * say), after killing anything still inside them. Under the lock.
 */
static void sweep_stale(void)
{
	DIR *d = opendir(TH_NETNS_DIR);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		long pid = tag_pid(de->d_name);
		if (!pid || !(kill((pid_t)pid, 0) < 0 && errno == ESRCH))
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof(path), TH_NETNS_DIR "/%s", de->d_name);
		ino_t ino = ns_ino(path);
		fprintf(stderr, "harness: deleting namespace %s, left by dead test pid %ld\n",
			de->d_name, pid);
		if (ino)
			ns_procs(&ino, 1, true, false);
		ns_delete(path);
	}
	closedir(d);
}

int th_net_leftovers(const char *tag, bool print)
{
	int n = 0;
	size_t tl = strlen(tag);
	DIR *d = opendir(TH_NETNS_DIR);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (!strncmp(de->d_name, tag, tl) && de->d_name[tl] == '-') {
			if (print)
				fprintf(stderr, "harness: namespace %s is left\n", de->d_name);
			n++;
		}
	}
	if (d)
		closedir(d);
	return n;
}

/* ------------------------------------------------------------ ip */

/* iproute2's ip, or NULL. */
static const char *ip_path(void)
{
	static const char *const where[] = { "/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip" };
	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++)
		if (access(where[i], X_OK) == 0)
			return where[i];
	return NULL;
}

/*
 * Run "ip <words>", \a fmt split at spaces (no word has one). \return 0, or
 * -EIO after printing the command and its output (into \a why instead when
 * given).
 */
static int ip_cmd(char *why, size_t whylen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int ip_cmd(char *why, size_t whylen, const char *fmt, ...)
{
	char line[512];
	char *argv[32];
	int n = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	char words[512];
	snprintf(words, sizeof(words), "%s", line);
	argv[n++] = (char *)ip_path();
	if (!argv[0])
		return -ENOENT;
	for (char *save, *w = strtok_r(words, " ", &save); w && n < 31;
	     w = strtok_r(NULL, " ", &save))
		argv[n++] = w;
	argv[n] = NULL;
	char *out = NULL;
	int st = th_run_capture(NULL, argv, NULL, TH_IP_TIMEOUT_MS, &out);
	if (st != 0) {
		size_t ol = out ? strlen(out) : 0;
		while (ol && out[ol - 1] == '\n')
			out[--ol] = 0;
		if (why)
			snprintf(why, whylen, "ip %.120s: %.200s", line, out && *out ? out : "failed");
		else
			fprintf(stderr, "harness: ip %s: status %d: %s\n", line, st,
				out ? out : "");
		free(out);
		return st < 0 ? st : -EIO;
	}
	free(out);
	return 0;
}

/* ------------------------------------------------------------ availability */

static int probe(char *why, size_t len)
{
	if (geteuid() != 0) {
		snprintf(why, len, "not root: network namespaces and veth links need "
				   "CAP_SYS_ADMIN and CAP_NET_ADMIN");
		return -EPERM;
	}
	if (!ip_path()) {
		snprintf(why, len, "iproute2's ip is not installed (looked in /usr/sbin, /sbin, "
				   "/usr/bin, /bin)");
		return -ENOENT;
	}
	if (mkdir(TH_NETNS_DIR, 0755) < 0 && errno != EEXIST) {
		snprintf(why, len, "cannot make " TH_NETNS_DIR ": %s", strerror(errno));
		return -EPERM;
	}
	/* veth and bridge in a throwaway namespace: it goes with the child */
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		snprintf(why, len, "pipe: %s", strerror(errno));
		return -errno;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int rc = -errno;
		snprintf(why, len, "fork: %s", strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		return rc;
	}
	if (pid == 0) {
		char msg[400] = "";
		close(pfd[0]);
		if (unshare(CLONE_NEWNET) < 0)
			snprintf(msg, sizeof(msg), "unshare(CLONE_NEWNET): %s", strerror(errno));
		else if (!ip_cmd(msg, sizeof(msg), "link add wprobe0 type veth peer name wprobe1"))
			ip_cmd(msg, sizeof(msg), "link add wprobebr type bridge");
		if (msg[0] && write(pfd[1], msg, strlen(msg)) < 0)
			_exit(2);
		_exit(msg[0] ? 1 : 0);
	}
	close(pfd[1]);
	char msg[400];
	ssize_t n = read(pfd[0], msg, sizeof(msg) - 1);
	close(pfd[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	msg[n > 0 ? n : 0] = 0;
	snprintf(why, len, "cannot make a network namespace with veth and bridge links: %s",
		 msg[0] ? msg : "the probe failed");
	return -EOPNOTSUPP;
}

int th_net_available(char *why, size_t len)
{
	static int cached = 1; /* 1: not probed yet */
	static char cached_why[512];

	if (cached == 1)
		cached = probe(cached_why, sizeof(cached_why));
	if (why && len)
		snprintf(why, len, "%s", cached ? cached_why : "");
	return cached;
}

void th_net_require(void)
{
	char why[512];
	if (th_net_available(why, sizeof(why))) {
		printf("SKIP: needs network namespaces: %s\n", why);
		fflush(stdout);
		exit(77);
	}
}

/* ------------------------------------------------------------ the network */

static void nets_add(struct th_net *net)
{
	net->n_next = th_nets;
	th_nets = net;
}

static void nets_del(struct th_net *net)
{
	struct th_net **pp = &th_nets;
	while (*pp && *pp != net)
		pp = &(*pp)->n_next;
	if (*pp)
		*pp = net->n_next;
}

/* Async-signal-safe: kill what the networks started, delete their namespaces. */
static void nets_fatal(void)
{
	if (getpid() != th_nets_owner)
		return;
	for (struct th_net *net = th_nets; net; net = net->n_next) {
		th_net_procs_kill(net);
		for (int i = 0; i < net->n_nr_hosts; i++)
			ns_delete(net->n_hosts[i].h_path);
		ns_delete(net->n_switch.h_path);
		if (!th_keep_dirs())
			th_rm_rf_sigsafe(net->n_dir);
	}
}

static void nets_atexit(void)
{
	if (getpid() != th_nets_owner)
		return;
	/* clusters first: their servers exit cleanly before the network goes */
	th_clusters_stop_all();
	while (th_nets) {
		fprintf(stderr, "harness: network %s still up at exit; removing it\n",
			th_nets->n_tag);
		th_net_stop(th_nets);
	}
}

static bool name_ok(const char *name)
{
	size_t l = strlen(name);
	if (l == 0 || l > 12)
		return false;
	for (size_t i = 0; i < l; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
		      name[i] == '_'))
			return false;
	return strcmp(name, "sw") != 0;
}

static void host_names(struct th_net *net, struct th_host *h, const char *name)
{
	char ns[sizeof(h->h_netns)];

	h->h_net = net;
	snprintf(h->h_name, sizeof(h->h_name), "%s", name);
	snprintf(ns, sizeof(ns), "%.31s-%.12s", net->n_tag, name);
	memcpy(h->h_netns, ns, sizeof(ns));
	snprintf(h->h_path, sizeof(h->h_path), TH_NETNS_DIR "/%s", ns);
}

/* The last octet of \a ip when it is TH_NET_PREFIX.N with N in 1..254, else 0. */
static int ip_octet(const char *ip)
{
	size_t pl = strlen(TH_NET_PREFIX);
	if (strncmp(ip, TH_NET_PREFIX ".", pl + 1))
		return 0;
	char *end;
	long v = strtol(ip + pl + 1, &end, 10);
	return *end || end == ip + pl + 1 || v < 1 || v > 254 ? 0 : (int)v;
}

static bool ip_used(const struct th_net *net, int octet)
{
	for (int i = 0; i < net->n_nr_hosts; i++)
		if (ip_octet(net->n_hosts[i].h_ip) == octet)
			return true;
	return false;
}

/* Make host \a h's namespace and link it to the bridge. Under the lock. */
static int host_plumb(struct th_net *net, struct th_host *h)
{
	const char *sw = net->n_switch.h_netns;
	int rc = ip_cmd(NULL, 0, "netns add %s", h->h_netns);
	if (rc)
		return rc;
	h->h_made = true;
	h->h_ino = ns_ino(h->h_path);
	if ((rc = ip_cmd(NULL, 0, "-n %s link set lo up", h->h_netns)) ||
	    (rc = ip_cmd(NULL, 0, "-n %s link add v-%s type veth peer name eth0 netns %s", sw,
			 h->h_name, h->h_netns)) ||
	    (rc = ip_cmd(NULL, 0, "-n %s link set v-%s master br0 up", sw, h->h_name)) ||
	    (rc = ip_cmd(NULL, 0, "-n %s addr add %s/24 dev eth0", h->h_netns, h->h_ip)) ||
	    (rc = ip_cmd(NULL, 0, "-n %s link set eth0 up", h->h_netns)))
		return rc;
	return 0;
}

int th_net_host_add(struct th_net *net, const char *name, const char *ip, struct th_host **out)
{
	if (!name_ok(name) || th_net_host(net, name)) {
		fprintf(stderr, "harness: host name '%s': want 1 to 12 of [a-z0-9_], unused\n",
			name);
		return -EINVAL;
	}
	if (net->n_nr_hosts >= TH_NET_MAX_HOSTS)
		return -ENOSPC;
	int octet = 0;
	if (ip) {
		octet = ip_octet(ip);
		if (!octet || ip_used(net, octet)) {
			fprintf(stderr, "harness: host %s: address %s is not a free one in "
					TH_NET_PREFIX ".0/24\n", name, ip);
			return -EINVAL;
		}
	} else {
		for (octet = 11; octet < 255 && ip_used(net, octet); octet++)
			;
		if (octet == 255)
			return -ENOSPC;
	}
	struct th_host *h = &net->n_hosts[net->n_nr_hosts];
	memset(h, 0, sizeof(*h));
	host_names(net, h, name);
	snprintf(h->h_ip, sizeof(h->h_ip), TH_NET_PREFIX ".%d", octet);
	net->n_nr_hosts++;
	int lk = lock_take();
	int rc = host_plumb(net, h);
	lock_drop(lk);
	if (rc) {
		fprintf(stderr, "harness: cannot make host %s (%s)\n", name, h->h_netns);
		return rc;
	}
	if (out)
		*out = h;
	return 0;
}

/* Say so when the machine's own namespace uses our range (harmless: the hosts cannot see it). */
static void warn_range_used(void)
{
	struct ifaddrs *ifa = NULL;
	if (getifaddrs(&ifa))
		return;
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		char a[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, a, sizeof(a));
		if (ip_octet(a) || !strcmp(a, TH_NET_PREFIX ".0") || !strcmp(a, TH_NET_PREFIX ".255"))
			fprintf(stderr, "harness: note: this machine's %s has %s, in the test "
					"network's range; the test hosts cannot reach it\n",
				i->ifa_name, a);
	}
	freeifaddrs(ifa);
}

int th_net_start(const struct th_net_opts *opts, struct th_net **out)
{
	char why[512];
	if (th_net_available(why, sizeof(why))) {
		fprintf(stderr, "harness: no network namespaces here: %s\n", why);
		return -EOPNOTSUPP;
	}
	th_handlers_install();
	if (!th_nets_owner) {
		th_nets_owner = getpid();
		atexit(nets_atexit);
		th_fatal_hook_add(nets_fatal);
	}
	struct th_net *net = calloc(1, sizeof(*net));
	if (!net)
		return -ENOMEM;
	snprintf(net->n_tag, sizeof(net->n_tag), TH_NET_TAG_PREFIX "%d-%d", (int)getpid(),
		 th_net_seq++);
	int rc = th_bin_dir(net->n_bin, sizeof(net->n_bin));
	if (rc)
		fprintf(stderr, "harness: no Weir binaries in %s (set BUILD): only programs on "
				"PATH will run\n", net->n_bin);
	rc = th_tmpdir_new(net->n_dir, sizeof(net->n_dir));
	if (rc) {
		free(net);
		return rc;
	}
	nets_add(net);
	warn_range_used();
	uint64_t t0 = th_now_ms();

	int lk = lock_take();
	sweep_stale();
	host_names(net, &net->n_switch, "sw");
	rc = ip_cmd(NULL, 0, "netns add %s", net->n_switch.h_netns);
	if (!rc) {
		net->n_switch.h_made = true;
		net->n_switch.h_ino = ns_ino(net->n_switch.h_path);
		rc = ip_cmd(NULL, 0, "-n %s link add br0 type bridge", net->n_switch.h_netns);
	}
	if (!rc)
		rc = ip_cmd(NULL, 0, "-n %s link set br0 up", net->n_switch.h_netns);
	lock_drop(lk);
	const char *const *names = opts && opts->tno_hosts ? opts->tno_hosts : th_std_hosts;
	for (int i = 0; !rc && names[i]; i++) {
		char ip[32];
		snprintf(ip, sizeof(ip), TH_NET_PREFIX ".%d", 11 + i);
		rc = th_net_host_add(net, names[i], ip, NULL);
	}
	if (rc) {
		fprintf(stderr, "harness: network %s not made (rc=%d)\n", net->n_tag, rc);
		th_net_stop(net);
		return rc;
	}
	fprintf(stderr, "harness: network %s up in %llu ms: %d hosts on " TH_NET_PREFIX ".0/24, "
			"logs in %s\n", net->n_tag, (unsigned long long)(th_now_ms() - t0),
		net->n_nr_hosts, net->n_dir);
	*out = net;
	return 0;
}

int th_net_stop(struct th_net *net)
{
	if (!net)
		return 0;
	int rc = 0;
	th_net_procs_stop(net);
	ino_t inos[TH_NET_MAX_HOSTS + 1];
	int n = 0;
	for (int i = 0; i < net->n_nr_hosts; i++)
		inos[n++] = net->n_hosts[i].h_ino;
	inos[n++] = net->n_switch.h_ino;

	int lk = lock_take();
	/* anything else still on a host: a cluster not stopped, a daemon */
	ns_procs(inos, n, true, true);
	for (int i = 0; i < net->n_nr_hosts; i++)
		if (net->n_hosts[i].h_made)
			ns_delete(net->n_hosts[i].h_path);
	if (net->n_switch.h_made)
		ns_delete(net->n_switch.h_path);
	lock_drop(lk);
	/* what we SIGKILLed takes a moment (a zombie no longer holds its namespace) */
	uint64_t deadline = th_now_ms() + TH_NET_GONE_WAIT_MS;
	int left;
	while ((left = ns_holders(inos, n, false)) && th_now_ms() < deadline) {
		ns_procs(inos, n, true, false); /* one that joined late (setns of an open fd) */
		th_sleep_ms(50);
	}
	if (left) {
		fprintf(stderr, "harness: network %s: still held %d s after its removal:\n",
			net->n_tag, TH_NET_GONE_WAIT_MS / 1000);
		ns_holders(inos, n, true);
		rc = -EBUSY;
	}
	if (th_net_leftovers(net->n_tag, true))
		rc = -EBUSY;
	if (th_keep_dirs())
		fprintf(stderr, "harness: TH_KEEP set: keeping %s\n", net->n_dir);
	else
		th_rm_rf(net->n_dir);
	nets_del(net);
	free(net);
	return rc;
}

const char *th_net_tag(const struct th_net *net)
{
	return net->n_tag;
}

const char *th_net_dir(const struct th_net *net)
{
	return net->n_dir;
}

struct th_host *th_net_host(const struct th_net *net, const char *name)
{
	for (int i = 0; i < net->n_nr_hosts; i++)
		if (!strcmp(net->n_hosts[i].h_name, name))
			return (struct th_host *)&net->n_hosts[i];
	return NULL;
}

/* ------------------------------------------------------------ a cluster on it */

int th_net_cluster_start(struct th_net *net, const struct th_cluster_opts *opts,
			 struct th_cluster **out)
{
	struct th_cluster_opts o = { 0 };
	if (opts)
		o = *opts;
	if (o.tco_places)
		return -EINVAL;
	struct th_host *mds = th_net_host(net, TH_NET_HOST_MDS);
	int nr_oss_hosts = 0;
	char name[16];
	for (;; nr_oss_hosts++) {
		snprintf(name, sizeof(name), "oss%d", nr_oss_hosts);
		if (!th_net_host(net, name))
			break;
	}
	if (!o.tco_nr_oss)
		o.tco_nr_oss = nr_oss_hosts;
	if (!mds || o.tco_nr_oss < 1 || o.tco_nr_oss > nr_oss_hosts) {
		fprintf(stderr, "harness: network %s has %s host mds and %d oss<i> hosts; "
				"the cluster wants %d OSS\n", net->n_tag, mds ? "a" : "no",
			nr_oss_hosts, o.tco_nr_oss);
		return -EINVAL;
	}
	struct th_place places[1 + TH_NET_MAX_HOSTS];
	places[0].tp_netns = mds->h_netns;
	places[0].tp_ip = mds->h_ip;
	for (int i = 0; i < o.tco_nr_oss; i++) {
		snprintf(name, sizeof(name), "oss%d", i);
		struct th_host *h = th_net_host(net, name);
		places[1 + i].tp_netns = h->h_netns;
		places[1 + i].tp_ip = h->h_ip;
	}
	o.tco_places = places;
	return th_cluster_start(&o, out);
}
