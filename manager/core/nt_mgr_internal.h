/*
 * nt_mgr_internal.h - the manager core's own structures, shared by its files, bottom first:
 *   nt_mgr_base.c     the log, the clock, sending one message, closing, a trace's problems
 *   nt_mgr_path.c     socket path and directory rules, listening
 *   nt_mgr_buffer.c   a provider's memfd and the manager's mapping of it
 *   nt_mgr_saver.c    streaming saves on a thread per streaming provider
 *   nt_mgr_section.c  the bundle: preamble, one section per provider, the END frame
 *   nt_mgr_ending.c   how a provider's process ended when its connection closed unstopped
 *   nt_mgr_provider.c a provider connection's state machine and its FIFO
 *   nt_mgr_trace.c    the trace session (Fuchsia's trace_session): begin, tick, stop, abort
 *   nt_mgr_control.c  the controller protocol
 *   nt_mgr_loop.c     the poll() loop, accepting, peer credentials, the first message
 */
#ifndef NT_MGR_INTERNAL_H
#define NT_MGR_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "format/nt_arena_layout.h"
#include "runtime/nt_arena_saver.h"
#include "format/nt_bundle.h"
#include "format/nt_fifo.h"
#include "format/nt_wire.h"
#include "format/nt_zchunk.h"
#include "nt_manager.h"

#define NT_MGR_MAX_CONNS 1024       /* connections of every kind at once */
#define NT_MGR_MAX_PER_PID 8        /* connections of one process: none takes every slot */
#define NT_MGR_CTL_RESERVE 16       /* slots providers never take: controllers get in */
#define NT_MGR_MAX_SELECT 64        /* CTL_SELECT names per trace */
#define NT_MGR_MSGS_PER_TURN 8      /* messages read from one connection per loop turn */
#define NT_MGR_HELLO_TIMEOUT_MS 5000 /* a connection that says nothing this long is closed */
#define NT_MGR_PROGRESS_MS 250
#define NT_MGR_ACCEPT_PAUSE_MS 200  /* after accept() ran out of descriptors */
#define NT_MGR_CTL_OWED 4           /* answers owed to a controller that does not read now */

enum nt_conn_kind { NT_CONN_NEW = 0, NT_CONN_PROVIDER, NT_CONN_CONTROLLER };

/* One streaming provider's saver thread: the loop hands it a SAVE_BUFFER, it saves into
 * the provider's stream file and answers BUFFER_SAVED on the FIFO itself, so one slow save
 * holds up only its own provider (a save is bounded by the arena's size). */
typedef struct nt_mgr_saver {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int started;         /* the thread exists */
	int quit;            /* under lock: the thread is to return */
	int pending;         /* under lock: a request waits or runs */
	nt_fifo_packet request;
	int fifo;            /* the manager's end of the FIFO (the thread writes answers) */
	nt_arena_saver *saver;
	int stream_fd;       /* memfd holding the saved stream, from offset 0 */
	uint64_t start;      /* the stream's offset in the section's archive (map_size) */
	uint64_t committed;  /* under lock: output end the saver committed (from `start`) */
	uint64_t saves;      /* under lock: answered SAVE_BUFFERs */
	uint64_t events;     /* under lock: events saved */
	int error;           /* under lock: errno of a failed save (the stream stops there) */
	/* nt_manager_config.on_stream: touched only by whoever runs the saves (the thread,
	 * then the loop once it has joined it) and, after that, the section. */
	void (*on_stream)(void *ctx, const nt_saved_range *st);
	void *stream_ctx;
	uint64_t stream_id;
	const struct nt_mgr_provider *prov;
	int level;           /* the manager's compression level: the header's codec */
	int header_ok;       /* the provider's header verified and is encoded in header[] */
	size_t header_len;
	uint8_t header[NT_ARENA_HEADER_BYTES];
	uint64_t handed;     /* the output end handed to on_stream (from `start`) */
} nt_mgr_saver;

typedef struct nt_mgr_provider {
	uint32_t id;          /* the manager's number for it: 1, 2, ... */
	pid_t pid;            /* from SO_PEERCRED, never from the message */
	char name[NT_WIRE_MAX_NAME + 1];
	int state;            /* NT_PROVIDER_STATE_* */
	int sync;             /* a REGISTERED answer is owed */
	int fifo;             /* the manager's end; -1 when none */
	int memfd;            /* the buffer; -1 when none */
	uint8_t *map;         /* the manager's shared mapping of memfd */
	nt_arena_layout layout;
	int mode;
	int in_trace;         /* has a buffer of the current trace whose section is not written */
	int kept;             /* holds a finished trace's buffer, stopped: the next trace may start
	                         it again (disposition retain or clear-nondurable) */
	char categories[NT_WIRE_MAX_TEXT + 1]; /* what INITIALIZE gave */
	int started_seen;     /* STARTED arrived on the FIFO */
	int stop_sent;        /* STOP sent: STOPPED answers it (FINISHED) */
	int self_stopped;     /* STOPPED arrived without STOP: the process is leaving (EXITED) */
	int64_t stop_deadline_ms;
	nt_mgr_saver *stream; /* streaming mode only */
	/* nt_mgr_ending.c: who the process was at registration, to learn how it ended */
	int pidfd;            /* -errno when none */
	unsigned long long start_ticks; /* /proc/PID/stat's start time (pid reuse check) */
	unsigned long long image_start, image_stack; /* its startcode, startstack (an exec moves
	                                                them); 0 when unknown */
	int has_exe;          /* exe_dev, exe_ino: the program it ran (an exec changes it) */
	dev_t exe_dev;
	ino_t exe_ino;
} nt_mgr_provider;

/* One entry of a CTL_LIST answer, taken when the request came. */
typedef struct nt_mgr_list_entry {
	uint32_t pid;
	int state;
	char name[NT_WIRE_MAX_NAME + 1];
} nt_mgr_list_entry;

/* What a controller's socket could not take yet (it was full: the controller does not read
 * now). Sent as the socket drains (POLLOUT); while anything waits here, the controller's
 * next requests are not read, so what is owed stays bounded. Progress is never kept: only
 * the latest matters. */
typedef struct nt_mgr_ctl_out {
	nt_wire_msg owed[NT_MGR_CTL_OWED]; /* answers that matter, in order */
	int nowed;
	nt_mgr_list_entry *list;            /* a CTL_LIST answer still being sent, or NULL */
	int nlist, list_next;
} nt_mgr_ctl_out;

typedef struct nt_mgr_conn {
	int fd;
	int kind;             /* nt_conn_kind */
	int closing;          /* closed at the end of this loop turn */
	pid_t pid;
	uid_t uid;
	int64_t since_ms;
	nt_mgr_provider *prov; /* NT_CONN_PROVIDER */
	nt_mgr_ctl_out *out;   /* NT_CONN_CONTROLLER: made when first needed */
} nt_mgr_conn;

/* The one trace a manager runs at a time. */
typedef struct nt_mgr_trace {
	int active;
	int stopping;         /* CTL_STOP received (or its controller left): finishing */
	int out_fd;           /* the bundle file, written with pwrite at `out_off` */
	uint64_t out_off;
	int out_error;        /* errno of a failed write: the bundle is given up, logged */
	char out_dir[4096];   /* the bundle's directory (streams are saved there), or "" */
	int ctl_fd;           /* the controller's connection, -1 once it left */
	int mode;
	int disposition;      /* CTL_START's d: for providers still holding a buffer (kept) */
	int compression_level; /* of the sections' chunks (format/nt_zchunk.h); 0 = none */
	uint64_t buffer_size;
	uint64_t chunk_size;
	char categories[NT_WIRE_MAX_TEXT + 1];
	char select[NT_MGR_MAX_SELECT][NT_WIRE_MAX_NAME + 1];
	int nselect;
	uint32_t sections;
	uint64_t events, bytes, drops;
	char problems[NT_WIRE_MAX_TEXT + 1];
	int64_t next_progress_ms;
	uint32_t started;
} nt_mgr_trace;

struct nt_manager {
	nt_manager_config cfg;
	char path[108];
	int listen_fd;
	int stop_fd;          /* eventfd: nt_manager_stop() */
	nt_mgr_conn conns[NT_MGR_MAX_CONNS];
	int nconns;
	uint32_t next_id;
	uint64_t next_stream; /* on_stream's numbers */
	int64_t accept_paused_until_ms;
	nt_mgr_trace trace;
	char pending_select[NT_MGR_MAX_SELECT][NT_WIRE_MAX_NAME + 1];
	int npending_select;
	int pending_select_fd; /* the controller whose CTL_SELECTs those are */
	/* nt_mgr_control_tell: how the trace session reaches the controller above it. */
	void (*tell_controller)(struct nt_manager *m, const nt_wire_msg *msg, int may_skip);
};

/* CTL_END's a: the nt_result numbers of nanotrace.h, which the wire contract names. */
enum { NT_MGR_RESULT_OK = 0, NT_MGR_RESULT_INVALID = -1, NT_MGR_RESULT_STATE = -2,
       NT_MGR_RESULT_IO = -4 };

/* manager/core is layered: nt_mgr_base.c at the bottom (calls nothing of manager/core);
 * path, buffer, saver and section above it; the provider protocol; the trace session; the
 * controller protocol; the loop on top (nothing calls it). The trace session speaks to its
 * controller through m->tell_controller, not by a call upwards. */

/* nt_mgr_base.c */
void nt_mgr_log(nt_manager *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int64_t nt_mgr_now_ms(void);
/* Sends one message with `nfds` descriptors, never blocking: 0, or -errno (-EAGAIN when
 * the peer does not read). */
int nt_mgr_send(int sock, const nt_wire_msg *msg, const int *fds, int nfds);
/* Marks a connection for closing at the end of this loop turn. */
void nt_mgr_conn_close(nt_manager *m, nt_mgr_conn *c);
/* Notes a problem of the current trace (CTL_STOPPED's text). */
void nt_mgr_trace_problem(nt_manager *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* nt_mgr_path.c */
int nt_mgr_listen(nt_manager *m, char *why, size_t whylen);

/* nt_mgr_buffer.c: the memfd as the shared design says (sealed, zero, sized by the layout)
 * and the manager's own mapping. 0, or -1 with the reason in why. */
int nt_mgr_buffer_create(nt_mgr_provider *p, uint64_t buffer_size, uint64_t chunk_size,
			 int mode, char *why, size_t whylen);
void nt_mgr_buffer_release(nt_mgr_provider *p);

/* nt_mgr_saver.c: the stream goes to an O_TMPFILE in `dir` (the bundle's directory: disk,
 * not the manager's memory), or to a memfd where that cannot be made. */
/* Its saves are handed to cfg->on_stream (when set) as stream number `stream_id`. */
int nt_mgr_saver_start(nt_mgr_provider *p, const char *dir, int compression_level,
		       const nt_manager_config *cfg, uint64_t stream_id, char *why,
		       size_t whylen);
/* The section is written: on_stream's last call (the archive `len` bytes at `offset` of
 * bundle_fd; len 0: none), with the section's header `final` (NULL: it did not verify)
 * re-encoded uncounted as the call's header. Only for a stream whose header was handed
 * over (header_ok). */
void nt_mgr_saver_ended(nt_mgr_saver *s, const nt_archive_info *final, int bundle_fd,
			uint64_t offset, uint64_t len);
/* Decodes the provider's header (copied once: the provider may still be writing) and checks
 * it against the manager's layout: 0, or -1 with what is wrong in why. */
int nt_mgr_provider_header(const nt_mgr_provider *p, nt_archive_info *info, char *why,
			   size_t whylen);
/* The fields a compact (Stream-layout) section's header takes from the manager: its codec
 * at `level`, the provider's pid. */
void nt_mgr_compact_fields(nt_archive_info *info, int level, pid_t pid);
/* A private scratch file, by the same rule (O_TMPFILE in `dir`, else a memfd); -1 with errno. */
int nt_mgr_scratch_file(const char *dir);
/* Hands a SAVE_BUFFER to the thread; -1 when one is still in flight (a protocol breach). */
int nt_mgr_saver_request(nt_mgr_saver *s, const nt_fifo_packet *pkt);
/* Waits for the thread to be idle, stops it and makes one last save of everything
 * published. The saver and its stream file stay for the section. */
void nt_mgr_saver_finish(nt_mgr_saver *s);
void nt_mgr_saver_free(nt_mgr_saver *s);
/* Bytes committed and events saved so far (for progress). */
void nt_mgr_saver_totals(nt_mgr_saver *s, uint64_t *bytes, uint64_t *events);

/* nt_mgr_ending.c */
/* Notes who a provider's process is (a pidfd, its start time, its program), at
 * registration over `conn_fd`; what cannot be had is left unknown. A few system calls. */
void nt_mgr_ending_watch(nt_mgr_provider *p, int conn_fd);
void nt_mgr_ending_release(nt_mgr_provider *p);
/* How the process ended, its connection having closed without STOPPED: an NT_SECTION_*
 * (KILLED, EXITED_UNSTOPPED, EXECED or ENDED_UNKNOWN) and the section's message in msg.
 * Waits only for an exiting process, at most about a second (normally microseconds). */
int nt_mgr_ending_of(const nt_mgr_provider *p, char *msg, size_t cap);

/* nt_mgr_provider.c */
void nt_mgr_provider_message(nt_manager *m, nt_mgr_conn *c, const nt_wire_msg *msg);
void nt_mgr_provider_fifo(nt_manager *m, nt_mgr_conn *c);
/* The connection or the FIFO closed: the section is final (KILLED, EXITED or FINISHED). */
void nt_mgr_provider_gone(nt_manager *m, nt_mgr_conn *c);
/* Drops a provider that broke the protocol: DAMAGED with `what`, connection closed. */
void nt_mgr_provider_damaged(nt_manager *m, nt_mgr_conn *c, const char *what);
/* Starts the provider in the current trace: START on the buffer it kept when the trace's
 * disposition allows (same mode, sizes and categories, not streaming), else TERMINATE of a
 * kept buffer and a fresh INITIALIZE + START. 0, or -1 (logged; a section may be written). */
int nt_mgr_provider_begin(nt_manager *m, nt_mgr_conn *c);
void nt_mgr_provider_send_stop(nt_manager *m, nt_mgr_conn *c);
/* Writes the section (end_state, message) and lets go of the buffer; TERMINATE is sent when
 * the provider is still connected and `terminate` is set. */
void nt_mgr_provider_end(nt_manager *m, nt_mgr_conn *c, int end_state, const char *message,
			 int terminate);
void nt_mgr_provider_timers(nt_manager *m, nt_mgr_conn *c, int64_t now);
int nt_mgr_provider_selected(const nt_manager *m, const char *name);
/* Events written and dropped so far, from the provider's header (untrusted: progress only). */
void nt_mgr_provider_counts(const nt_mgr_provider *p, uint64_t *events, uint64_t *drops);

/* nt_mgr_section.c */
int nt_mgr_bundle_preamble(nt_manager *m);
/* Writes one SECTION frame and archive for `p` into the bundle. */
void nt_mgr_bundle_section(nt_manager *m, nt_mgr_provider *p, int end_state,
			   const char *message);
void nt_mgr_bundle_end(nt_manager *m, int end_state, const char *message);

/* nt_mgr_control.c */
void nt_mgr_control_message(nt_manager *m, nt_mgr_conn *c, const nt_wire_msg *msg, int fd);
void nt_mgr_control_gone(nt_manager *m, nt_mgr_conn *c);
/* Nonzero while the controller is owed messages its socket could not take: poll it for
 * POLLOUT, not POLLIN. */
int nt_mgr_control_busy(const nt_mgr_conn *c);
/* Sends what the controller is owed as far as its socket takes it (it became writable). */
void nt_mgr_control_flush(nt_manager *m, nt_mgr_conn *c);
void nt_mgr_control_free(nt_mgr_conn *c);
/* To the current trace's controller, if it is still there: an answer that matters
 * (may_skip 0: kept until its socket drains) or progress (may_skip 1: skipped when it does
 * not read now). What m->tell_controller calls. */
void nt_mgr_control_tell(nt_manager *m, const nt_wire_msg *msg, int may_skip);

/* nt_mgr_trace.c */
/* STOPs every provider of the trace (once); the loop finishes it as they answer. */
void nt_mgr_trace_begin_stop(nt_manager *m);
/* Called each loop turn: progress, and the end of a stopping trace. */
void nt_mgr_trace_tick(nt_manager *m, int64_t now);
/* Stops the current trace now (the manager is stopping). */
void nt_mgr_trace_abort(nt_manager *m, const char *why);
/* STOPs every provider; the loop finishes the trace as answers and timeouts come. */
void nt_mgr_trace_stop_gracefully(nt_manager *m);

#endif /* NT_MGR_INTERNAL_H */
