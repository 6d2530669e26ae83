/*
 * client/preload/pl_mmap.c - mmap of Weir files: mmap, mmap64, munmap,
 * msync, mprotect, mremap.
 *
 * A mapping of a Weir descriptor is anonymous memory filled from the file
 * at mmap() time (bytes past the end of file read as zeros, where the kernel
 * would raise SIGBUS). MAP_PRIVATE mappings are then the process's own, as
 * with a real file. MAP_SHARED mappings are anonymous shared memory (so a
 * forked child shares them) that is written back to the file by msync(),
 * munmap(), exit and exec, when they are writable; the write-back covers
 * the mapping's whole range up to the file's current size. Not supported:
 * seeing other writers' later changes through a mapping (no coherence with
 * write() or other clients after mmap), and sharing one mapping with an
 * unrelated process.
 */
#define _GNU_SOURCE
#include "pl_int.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct pl_map {
	char *pm_addr;		 /* page-aligned */
	size_t pm_len;		 /* bytes, page multiple */
	uint64_t pm_off;	 /* file offset of pm_addr */
	struct pl_file *pm_file; /* a reference */
	int pm_prot;		 /* as last set by mmap/mprotect */
	bool pm_shared;
	bool pm_write; /* shared and writable: written back */
	struct pl_map *pm_next;
};

static pthread_mutex_t pl_map_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pl_map *_Atomic pl_maps;

static size_t pl_page(void)
{
	static size_t pg;

	if (!pg)
		pg = (size_t)sysconf(_SC_PAGESIZE);
	return pg;
}

/* Fill [p, p + len) from the file at \a off. \return 0 or -errno. */
static int pl_map_fill(struct pl_file *f, char *p, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pl_io_pread(f, p + done, len - done, off + done);
		if (n < 0)
			return (int)n;
		if (n == 0)
			break; /* the rest is past the end of file: zeros */
		done += (size_t)n;
	}
	return 0;
}

/* Write [a, a + len) of mapping \a m back, up to the file's current size. */
static int pl_map_writeback(struct pl_map *m, char *a, size_t len)
{
	struct stat st;
	int rc = pl_file_stat(m->pm_file, &st);

	if (rc)
		return rc;
	uint64_t foff = m->pm_off + (uint64_t)(a - m->pm_addr);
	if (foff >= (uint64_t)st.st_size)
		return 0;
	if (foff + len > (uint64_t)st.st_size)
		len = (size_t)((uint64_t)st.st_size - foff);
	size_t done = 0;
	while (done < len) {
		ssize_t n = pl_io_pwrite_at(m->pm_file, a + done, len - done, foff + done);
		if (n <= 0)
			return n < 0 ? (int)n : -EIO;
		done += (size_t)n;
	}
	return 0;
}

static void *pl_mmap_any(void *addr, size_t len, int prot, int flags, int fd, int64_t off,
			 bool is64)
{
	int saved = errno;
	struct pl_file *f;
	int rc = 0;

	if ((flags & MAP_ANONYMOUS) || !pl_fd_is_weir(fd) || !(f = pl_fd_get(fd)))
		return is64 ? PL_REAL(mmap64)(addr, len, prot, flags, fd, off)
			    : PL_REAL(mmap)(addr, len, prot, flags, fd, (off_t)off);
	int type = flags & MAP_TYPE;
	bool shared = type == MAP_SHARED || type == MAP_SHARED_VALIDATE;
	int acc = pl_file_flags(f) & O_ACCMODE;
	if (f->pf_kind == PL_K_PATH)
		rc = -EBADF;
	else if (f->pf_kind == PL_K_DIR)
		rc = -ENODEV;
	else if (!len || off < 0 || (uint64_t)off % pl_page())
		rc = -EINVAL;
	else if (acc == O_WRONLY)
		rc = -EACCES;
	else if (shared && (prot & PROT_WRITE) && acc != O_RDWR)
		rc = -EACCES;
	if (rc)
		goto out_put;

	int keep =
	    flags & (MAP_FIXED | MAP_FIXED_NOREPLACE | MAP_NORESERVE | MAP_POPULATE | MAP_LOCKED);
	char *p = PL_REAL(mmap)(addr, len, PROT_READ | PROT_WRITE,
				keep | MAP_ANONYMOUS | (shared ? MAP_SHARED : MAP_PRIVATE), -1, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		goto out_put;
	}
	rc = pl_map_fill(f, p, len, (uint64_t)off);
	if (!rc && prot != (PROT_READ | PROT_WRITE) && PL_REAL(mprotect)(p, len, prot))
		rc = -errno;
	struct pl_map *m = rc ? NULL : calloc(1, sizeof(*m));
	if (!rc && !m)
		rc = -ENOMEM;
	if (rc) {
		PL_REAL(munmap)(p, len);
		goto out_put;
	}
	m->pm_addr = p;
	m->pm_len = (len + pl_page() - 1) & ~(pl_page() - 1);
	m->pm_off = (uint64_t)off;
	m->pm_file = f; /* keeps our reference */
	m->pm_prot = prot;
	m->pm_shared = shared;
	m->pm_write = shared && (prot & PROT_WRITE);
	pthread_mutex_lock(&pl_map_lock);
	m->pm_next = pl_maps;
	atomic_store(&pl_maps, m);
	pthread_mutex_unlock(&pl_map_lock);
	errno = saved;
	return p;

out_put:
	pl_file_put(f);
	errno = -rc;
	return MAP_FAILED;
}

PL_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return pl_mmap_any(addr, len, prot, flags, fd, off, false);
}

PL_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
	return pl_mmap_any(addr, len, prot, flags, fd, off, true);
}

static bool pl_overlap(const struct pl_map *m, const char *a, size_t len)
{
	return a < m->pm_addr + m->pm_len && m->pm_addr < a + len;
}

PL_EXPORT int msync(void *addr, size_t len, int flags)
{
	int saved = errno;
	int rc = 0;

	if (!atomic_load(&pl_maps))
		return PL_REAL(msync)(addr, len, flags);
	if (PL_REAL(msync)(addr, len, flags))
		return -1;
	pthread_mutex_lock(&pl_map_lock);
	for (struct pl_map *m = pl_maps; m; m = m->pm_next) {
		if (!m->pm_write || !pl_overlap(m, addr, len))
			continue;
		char *a = (char *)addr > m->pm_addr ? (char *)addr : m->pm_addr;
		char *e = (char *)addr + len < m->pm_addr + m->pm_len ? (char *)addr + len
								      : m->pm_addr + m->pm_len;
		int r = pl_map_writeback(m, a, (size_t)(e - a));
		if (r && !rc)
			rc = r;
	}
	pthread_mutex_unlock(&pl_map_lock);
	if (rc) {
		PL_LOG_ONCE("msync rc=%d: write-back to Weir failed: EIO", rc);
		rc = -EIO;
	}
	return pl_ret(rc, saved);
}

PL_EXPORT int munmap(void *addr, size_t len)
{
	int saved = errno;
	struct pl_map **pp, *drop = NULL;
	int rc = 0;

	if (!atomic_load(&pl_maps))
		return PL_REAL(munmap)(addr, len);
	char *a = addr, *e = (char *)addr + ((len + pl_page() - 1) & ~(pl_page() - 1));
	pthread_mutex_lock(&pl_map_lock);
	for (pp = (struct pl_map **)&pl_maps; *pp;) {
		struct pl_map *m = *pp;
		if (!pl_overlap(m, a, (size_t)(e - a))) {
			pp = &m->pm_next;
			continue;
		}
		char *lo = a > m->pm_addr ? a : m->pm_addr;
		char *hi = e < m->pm_addr + m->pm_len ? e : m->pm_addr + m->pm_len;
		if (m->pm_write) {
			int r = pl_map_writeback(m, lo, (size_t)(hi - lo));
			if (r && !rc)
				rc = r;
		}
		if (lo == m->pm_addr && hi == m->pm_addr + m->pm_len) {
			*pp = m->pm_next; /* all of it */
			m->pm_next = drop;
			drop = m;
			continue;
		}
		if (lo == m->pm_addr) { /* the head */
			m->pm_off += (uint64_t)(hi - m->pm_addr);
			m->pm_len -= (size_t)(hi - m->pm_addr);
			m->pm_addr = hi;
		} else if (hi == m->pm_addr + m->pm_len) { /* the tail */
			m->pm_len = (size_t)(lo - m->pm_addr);
		} else { /* the middle: two mappings remain */
			struct pl_map *t = malloc(sizeof(*t));
			if (t) {
				*t = *m;
				t->pm_addr = hi;
				t->pm_len = (size_t)(m->pm_addr + m->pm_len - hi);
				t->pm_off = m->pm_off + (uint64_t)(hi - m->pm_addr);
				pl_tab_lock();
				m->pm_file->pf_refs++;
				pl_tab_unlock();
				m->pm_len = (size_t)(lo - m->pm_addr);
				m->pm_next = t;
			} else {
				m->pm_len =
				    (size_t)(lo - m->pm_addr); /* the tail is lost for write-back */
			}
		}
		pp = &m->pm_next;
	}
	pthread_mutex_unlock(&pl_map_lock);
	int r = PL_REAL(munmap)(addr, len);
	while (drop) {
		struct pl_map *m = drop;
		drop = m->pm_next;
		pl_file_put(m->pm_file);
		free(m);
	}
	if (r)
		return -1;
	if (rc)
		PL_LOG_ONCE("munmap rc=%d: write-back to Weir failed", rc);
	errno = saved;
	return 0;
}

PL_EXPORT int mprotect(void *addr, size_t len, int prot)
{
	int saved = errno;
	int rc = 0;

	if (!atomic_load(&pl_maps))
		return PL_REAL(mprotect)(addr, len, prot);
	pthread_mutex_lock(&pl_map_lock);
	for (struct pl_map *m = pl_maps; m; m = m->pm_next) {
		if (!pl_overlap(m, addr, len))
			continue;
		m->pm_prot = prot;
		if (!(prot & PROT_WRITE) || !m->pm_shared || m->pm_write)
			continue;
		if ((pl_file_flags(m->pm_file) & O_ACCMODE) != O_RDWR)
			rc = -EACCES; /* as the kernel: the file is not open for writing */
		else
			m->pm_write = true;
	}
	pthread_mutex_unlock(&pl_map_lock);
	if (rc)
		return pl_ret(rc, saved);
	return PL_REAL(mprotect)(addr, len, prot);
}

PL_EXPORT void *mremap(void *old, size_t oldlen, size_t newlen, int flags, ...)
{
	void *newaddr = NULL;
	va_list ap;

	va_start(ap, flags);
	if (flags & MREMAP_FIXED)
		newaddr = va_arg(ap, void *);
	va_end(ap);
	if (!atomic_load(&pl_maps))
		return PL_REAL(mremap)(old, oldlen, newlen, flags, newaddr);
	pthread_mutex_lock(&pl_map_lock);
	struct pl_map *m;
	for (m = pl_maps; m; m = m->pm_next)
		if (pl_overlap(m, old, oldlen ? oldlen : 1))
			break;
	if (!m) {
		pthread_mutex_unlock(&pl_map_lock);
		return PL_REAL(mremap)(old, oldlen, newlen, flags, newaddr);
	}
	size_t oldr = (oldlen + pl_page() - 1) & ~(pl_page() - 1);
	if ((char *)old != m->pm_addr || oldr != m->pm_len) {
		pthread_mutex_unlock(&pl_map_lock);
		PL_LOG_ONCE("mremap of part of a Weir mapping is not supported: EINVAL");
		errno = EINVAL;
		return MAP_FAILED;
	}
	char *p = PL_REAL(mremap)(old, oldlen, newlen, flags, newaddr);
	if (p != MAP_FAILED) {
		size_t newr = (newlen + pl_page() - 1) & ~(pl_page() - 1);
		if (newr > oldr) {
			/* the grown part: filled from the file with the mapping's protection */
			PL_REAL(mprotect)(p + oldr, newr - oldr, PROT_READ | PROT_WRITE);
			pl_map_fill(m->pm_file, p + oldr, newr - oldr, m->pm_off + oldr);
			PL_REAL(mprotect)(p + oldr, newr - oldr, m->pm_prot);
		}
		m->pm_addr = p;
		m->pm_len = newr;
	}
	pthread_mutex_unlock(&pl_map_lock);
	return p;
}

void pl_mmap_flush_all(void)
{
	if (!atomic_load(&pl_maps))
		return;
	pthread_mutex_lock(&pl_map_lock);
	for (struct pl_map *m = pl_maps; m; m = m->pm_next)
		if (m->pm_write)
			pl_map_writeback(m, m->pm_addr, m->pm_len);
	pthread_mutex_unlock(&pl_map_lock);
}
