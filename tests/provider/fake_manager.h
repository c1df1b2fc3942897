/*
 * fake_manager.h - a trace manager for tests of the provider side (tests only): it listens
 * on a private socket in a fresh mkdtemp directory, accepts real provider processes and
 * drives them with format/nt_wire.h messages exactly as the shared design says (memfd made,
 * sized by nt_arena_layout_compute, sealed; the FIFO a socketpair), answers streaming's
 * SAVE_BUFFER with the shared saver (runtime/nt_arena_saver.h) on its own mapping, and reads
 * a provider's buffer back as an archive. Every wait is bounded; a failure returns -1 with a
 * message in fm_error.
 */
#ifndef FAKE_MANAGER_H
#define FAKE_MANAGER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "format/nt_arena_layout.h"
#include "runtime/nt_arena_saver.h"
#include "format/nt_wire.h"

extern char fm_error[512];

typedef struct fm {
	char dir[64];
	char path[128];
	int listen_fd;
} fm;

typedef struct fm_provider {
	int conn, fifo, memfd;
	uint32_t pid;         /* REGISTER's */
	uint64_t flags;       /* REGISTER's a */
	char name[NT_WIRE_MAX_NAME + 1];
	int mode;
	nt_arena_layout layout;
	uint8_t *map;         /* the manager's own mapping of the memfd */
	nt_arena_saver *saver;
	uint8_t *stream;      /* streaming: the saved stream */
	size_t stream_len, stream_cap;
	uint64_t saves;       /* SAVE_BUFFER requests answered */
	int stopped_seen;     /* STOPPED packets received */
} fm_provider;

int fm_listen(fm *m);
void fm_close(fm *m);

/* Accepts one provider and reads its REGISTER. */
int fm_accept_register(fm *m, fm_provider *p, int timeout_ms);
/* INITIALIZE with a fresh memfd and FIFO. */
int fm_initialize(fm_provider *p, int mode, uint64_t buffer_size, uint64_t chunk_size,
		  const char *categories);
int fm_send_msg(fm_provider *p, const nt_wire_msg *msg, const int *fds, int nfds);
int fm_send_simple(fm_provider *p, uint16_t type, uint64_t a, const char *text);
/* START, then wait for STARTED on the FIFO. */
int fm_start(fm_provider *p, int disposition, const char *extra);
/* STOP, then wait for STOPPED (serving SAVE_BUFFER meanwhile). */
int fm_stop(fm_provider *p);
/* Serve the FIFO until STOPPED arrives (a provider stopping itself at exit). */
int fm_wait_stopped(fm_provider *p, int timeout_ms);
/* Wait for the provider to close its connection (0), or -1. */
int fm_wait_eof(fm_provider *p, int timeout_ms);
/* The buffer as an archive (a copy: the arena, then for streaming the saved stream, with the
 * header's stream end set): *data is malloc'd. */
int fm_archive(fm_provider *p, uint8_t **data, size_t *size);
/* Let go of the buffer and FIFO held for `p` (after TERMINATE; a new INITIALIZE may follow). */
void fm_release_buffer(fm_provider *p);
/* Let go of everything held for `p` (TERMINATE is not sent). */
void fm_provider_free(fm_provider *p);

/* Runs argv[0] with NANOTRACE_MANAGER=path (and `env`, NULL-terminated "K=V" strings, may be
 * NULL) and pipes on its stdin, stdout and stderr. */
typedef struct fm_child {
	pid_t pid;
	int in, out, err;
} fm_child;
int fm_spawn(const char *manager_path, char *const argv[], char *const env[], fm_child *c);
/* One line of the child's stdout (without the newline), or -1 at EOF or timeout. */
int fm_read_line(fm_child *c, char *buf, size_t cap, int timeout_ms);
/* Everything on its stderr so far, up to cap - 1 bytes (non-blocking). */
void fm_read_stderr(fm_child *c, char *buf, size_t cap);
/* Waits for the child's exit; returns its wait status or -1 on timeout (it is then killed). */
int fm_wait_child(fm_child *c, int timeout_ms);

#endif /* FAKE_MANAGER_H */
