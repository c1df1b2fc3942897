/*
 * nt_ship_spool.c - the spool: a directory of requests waiting to be sent, which outlives
 * the process (a collector's outage, a restart). An attack surface (SECURITY.md):
 *   - the directory is the user's own: made 0700 when missing (its missing parents too,
 *     0700); one that is a symbolic link, another user's, or open to group or others is
 *     refused, never repaired;
 *   - a request is written to a file made by mkostemp (runtime/nt_private_file.h: O_EXCL,
 *     0600, a random name) under ".tmp-", then renamed to "r-<wall ns>-<seq>-<t|m>-<random>"
 *     (rename never follows a link): no name can be predicted, and a crash leaves at most
 *     a ".tmp-" file, which a later open removes once it is a minute old, never sends;
 *   - a file is opened O_NOFOLLOW and must be a regular file of the user's.
 * Names sort in the order made, so the oldest is sent first, by any run.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nt_ship_internal.h"
#include "runtime/nt_private_file.h"
#include "runtime/nt_write_all.h"

#define REQ_PREFIX "r-"
#define TMP_PREFIX ".tmp-"
#define MAX_REQUEST ((size_t)64 << 20) /* a spool file larger is no request of ours */

/* mkdir -p with 0700 for what it makes; the last component is checked by the caller. */
static int make_dirs(const char *path)
{
	char buf[4096];
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *p = buf + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdir(buf, 0700) != 0 && errno != EEXIST)
			return -1;
		*p = c;
		if (c == '\0')
			return 0;
	}
}

static int check_dir(const char *path, char *why, size_t whylen)
{
	struct stat st;
	if (lstat(path, &st) != 0) {
		snprintf(why, whylen, "spool '%s': %s", path, strerror(errno));
		return -1;
	}
	const char *bad = S_ISLNK(st.st_mode)	   ? "is a symbolic link"
			  : !S_ISDIR(st.st_mode)   ? "is not a directory"
			  : st.st_uid != geteuid() ? "belongs to another user"
			  : (st.st_mode & 077)	   ? "is open to group or others (chmod 700 it)"
						   : NULL;
	if (bad != NULL) {
		snprintf(why, whylen, "spool '%s' %s: refused", path, bad);
		return -1;
	}
	return 0;
}

/* "r-" 16 hex "-" 8 hex "-" t|m "-" mkostemp's 6: 36 characters. */
static int is_request(const char *name, int *signal)
{
	if (strncmp(name, REQ_PREFIX, 2) != 0 || strlen(name) != 36 || name[18] != '-' ||
	    name[27] != '-' || (name[28] != 't' && name[28] != 'm') || name[29] != '-')
		return 0;
	*signal = name[28] == 'm';
	return 1;
}

/* A regular file of ours in the spool, opened without following a link; -1 otherwise. */
static int open_file(nt_ship *s, const char *name, struct stat *st)
{
	char path[4352];
	snprintf(path, sizeof(path), "%s/%s", s->conf.spool, name);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode) || st->st_uid != geteuid()) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

void nt_ship_spool_scan(nt_ship *s, uint64_t *files, uint64_t *bytes)
{
	*files = *bytes = 0;
	DIR *d = opendir(s->conf.spool);
	if (d == NULL)
		return;
	struct dirent *e;
	int sig;
	while ((e = readdir(d)) != NULL) {
		struct stat st;
		if (is_request(e->d_name, &sig) && fstatat(dirfd(d), e->d_name, &st,
							   AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode)) {
			(*files)++;
			*bytes += (uint64_t)st.st_size;
		}
	}
	closedir(d);
}

int nt_ship_spool_open(nt_ship *s, char *why, size_t whylen)
{
	const char *dir = s->conf.spool;
	if (dir[0] != '/') {
		snprintf(why, whylen, "spool '%s': not an absolute path", dir);
		return -1;
	}
	if (make_dirs(dir) != 0) {
		snprintf(why, whylen, "spool '%s': %s", dir, strerror(errno));
		return -1;
	}
	if (check_dir(dir, why, whylen) != 0)
		return -1;
	/* what a crash left half written is never sent; a temporary file younger than a
	 * minute may be another process's, being written now */
	DIR *d = opendir(dir);
	if (d != NULL) {
		struct dirent *e;
		struct stat st;
		time_t old = time(NULL) - 60;
		while ((e = readdir(d)) != NULL)
			if (strncmp(e->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0 &&
			    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    st.st_mtime < old)
				unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
	}
	char lock[4352];
	snprintf(lock, sizeof(lock), "%s/.lock", dir);
	s->lock_fd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (s->lock_fd < 0) {
		snprintf(why, whylen, "spool '%s': its lock file: %s", dir, strerror(errno));
		return -1;
	}
	nt_ship_spool_scan(s, &s->spool_files, &s->spool_bytes);
	s->counts.found = s->spool_files;
	return 0;
}

static void count_drop(int signal, const uint8_t *msg, size_t len,
		       uint64_t *requests, uint64_t *spans, uint64_t *points)
{
	int64_t items = nt_ship_pb_items(signal, msg, len);
	(*requests)++;
	*(signal ? points : spans) += items > 0 ? (uint64_t)items : 0;
}

/* The spool's bytes as the cap is judged by. The running total misses what other programs
 * add to or send from the same spool (a daemon holding the lock sends this process's
 * requests): it is counted afresh from the directory once the spool is half full, and every
 * RESCAN_EVERY requests. Only the exporter thread puts, so no request of ours is in flight. */
#define RESCAN_EVERY 64
static void refresh(nt_ship *s, size_t len)
{
	pthread_mutex_lock(&s->lock);
	int rescan = s->spool_bytes + len > s->conf.cap / 2 || ++s->puts_since_scan >= RESCAN_EVERY;
	pthread_mutex_unlock(&s->lock);
	if (!rescan)
		return;
	uint64_t files, bytes;
	nt_ship_spool_scan(s, &files, &bytes);
	pthread_mutex_lock(&s->lock);
	s->spool_files = files;
	s->spool_bytes = bytes;
	s->puts_since_scan = 0;
	pthread_mutex_unlock(&s->lock);
}

int nt_ship_spool_put(nt_ship *s, int signal, const uint8_t *msg, size_t len)
{
	refresh(s, len);
	pthread_mutex_lock(&s->lock);
	int full = s->spool_bytes + len > s->conf.cap;
	if (full) {
		nt_ship_counts *c = &s->counts;
		count_drop(signal, msg, len, &c->dropped_full, &c->dropped_full_spans,
			   &c->dropped_full_points);
		if (c->dropped_full == 1)
			nt_ship_log(s, "spool '%s' is full (%llu bytes): dropping requests, counted",
				    s->conf.spool, (unsigned long long)s->conf.cap);
	} else {
		s->spool_bytes += len; /* reserved until written (or given back) */
	}
	unsigned seq = s->seq++;
	pthread_mutex_unlock(&s->lock);
	if (full)
		return 1;
	char tmp[4352], final[4352];
	snprintf(tmp, sizeof(tmp), "%s/" TMP_PREFIX "XXXXXX", s->conf.spool);
	int fd = nt_private_create(tmp, 0600);
	int err = fd < 0 ? errno : 0;
	if (fd >= 0 && (err = nt_write_all(fd, msg, len, NULL)) == 0 && fdatasync(fd) != 0)
		err = errno;
	if (fd >= 0)
		close(fd);
	if (err == 0) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		const char *rnd = strrchr(tmp, '/') + 1 + strlen(TMP_PREFIX);
		snprintf(final, sizeof(final), "%s/" REQ_PREFIX "%016llx-%08x-%c-%s", s->conf.spool,
			 (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec,
			 seq, signal ? 'm' : 't', rnd);
		if (rename(tmp, final) != 0)
			err = errno;
	}
	pthread_mutex_lock(&s->lock);
	if (err != 0) {
		s->spool_bytes -= len;
		s->counts.dropped_io++;
		nt_ship_log(s, "writing a request into the spool '%s': %s", s->conf.spool,
			    strerror(err));
	} else {
		s->spool_files++;
		s->counts.spooled++;
		pthread_cond_broadcast(&s->wake);
	}
	pthread_mutex_unlock(&s->lock);
	if (err != 0 && fd >= 0)
		unlink(tmp);
	return err ? -1 : 0;
}

int nt_ship_spool_oldest(nt_ship *s, char *name, size_t cap, int *signal)
{
	DIR *d = opendir(s->conf.spool);
	if (d == NULL)
		return -1;
	struct dirent *e;
	int found = 0, sig;
	while ((e = readdir(d)) != NULL) {
		if (!is_request(e->d_name, &sig) || strlen(e->d_name) >= cap)
			continue;
		if (!found || strcmp(e->d_name, name) < 0) {
			snprintf(name, cap, "%s", e->d_name);
			*signal = sig;
			found = 1;
		}
	}
	closedir(d);
	return found;
}

int nt_ship_spool_read(nt_ship *s, const char *name, uint8_t **data, size_t *len)
{
	struct stat st;
	int fd = open_file(s, name, &st);
	if (fd < 0)
		return -1;
	if ((uint64_t)st.st_size > MAX_REQUEST) {
		close(fd);
		errno = EFBIG;
		return -1;
	}
	*len = (size_t)st.st_size;
	*data = malloc(*len ? *len : 1);
	size_t got = 0;
	while (*data != NULL && got < *len) {
		ssize_t n = read(fd, *data + got, *len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	int err = *data == NULL ? ENOMEM : got < *len ? EIO : 0;
	close(fd);
	if (err != 0) {
		free(*data);
		*data = NULL;
		errno = err;
		return -1;
	}
	return 0;
}

void nt_ship_spool_remove(nt_ship *s, const char *name, size_t len)
{
	char path[4352];
	snprintf(path, sizeof(path), "%s/%s", s->conf.spool, name);
	int gone = unlink(path) == 0;
	pthread_mutex_lock(&s->lock);
	if (gone) {
		s->spool_bytes -= len < s->spool_bytes ? len : s->spool_bytes;
		s->spool_files -= s->spool_files > 0;
	}
	pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->lock);
}
