/*
 * fuzz_wire.c - libFuzzer target: the trace manager's side of its sockets (format/nt_wire.h
 * messages, format/nt_fifo.h packets) against up to three hostile peers, each of which may
 * act as a provider or a controller. The manager is the real one (manager/core): its loop
 * file is compiled into this program so the fuzzer drives its static steps (accept_one,
 * read_conn, timers, compact) over socketpairs instead of poll() on a listening socket;
 * the rest of manager/core is linked as it is (this object defines every global of
 * nt_mgr_loop.c, so the linker never takes the library's copy of it).
 *
 * The input is a list of steps; each starts with one byte, op:
 *   op & 3 == 0  peer ((op >> 2) & 3) % 3 sends a message: 48 header bytes (magic ... d) from the
 *                input, then name_len bytes of name and text_len of text (as far as they fit
 *                and the input goes); op & 0x10 attaches an output file (CTL_START's),
 *                op & 0x20 writes a valid magic and version over the input's
 *   op & 3 == 1  that peer sends a FIFO packet (16 bytes) on the FIFO INITIALIZE gave it
 *   op & 3 == 2  that peer hangs up (its FIFO too); its next step connects again
 *   op & 3 == 3  op & 0x10: that peer writes into its buffer (a 16-bit offset in 8-byte
 *                words, a length byte, the bytes); else the manager's timers run
 * after each step the manager reads what it was sent and each peer takes its answers (and
 * closes the descriptors they carry, keeping the FIFO; the buffer of an INITIALIZE is
 * mapped and given the header a provider writes, so the manager goes on to save whatever
 * the peer puts in it: its saver and section writer read hostile arenas). At the end the manager is freed
 * (a trace still running is aborted and its bundle written) and the process must hold the
 * descriptors it held before (it aborts otherwise). Bounded by the harness, not
 * by the manager: CTL_START buffers above 4 MiB (or 0: the default) are made 256 KiB, so an
 * execution stays fast.
 *
 * The harness skips the system calls that cannot change what happens: a step polls the
 * manager's descriptors only when a peer has acted since a poll that found none ready, or
 * the manager polls others (manager_quiet), and the peers' sockets only when the manager has
 * sent or closed something since they were read (peers_quiet: its sends counted through
 * -Wl,--wrap=nt_mgr_send) or a peer connected; a socket the manager closed is not polled
 * after its end of file; a message other than CTL_START carries /dev/null, opened once,
 * rather than a new output file (the manager closes it unread). Each skipped poll would
 * have found nothing ready, so every input runs as it did with a poll per step (most steps
 * are hang-ups of peers not connected, which do nothing). What lasts from one input to the
 * next: /dev/null (held before the first descriptor count, so each count includes it), the
 * scratch directory, and the sends and closes counted (only compared for a change); both
 * memos are cleared when an input starts.
 *
 * Built a second time as fuzz_wire_msg (fuzz_wire_msg.c, WIRE_MESSAGES_ONLY): the same steps
 * without the arena (no INITIALIZE buffer mapped, so no arena write and nothing for the
 * saver to read; CTL_START buffers made 64 KiB; no descriptor count): the message and FIFO
 * packet handling alone, so its corpus holds only what reaches new message paths. It is no
 * faster: what is left of both, beside libFuzzer's own bookkeeping of features (a fifth to a
 * quarter of their time, clang 14's entropic scheduling), is the manager's own system calls
 * and page faults (socketpairs, buffers and their pages, saver threads started and joined,
 * /proc reads of a peer's process, output and stream files made and destroyed). What makes
 * both run at thousands of executions a CPU-second is their scheduling: tests/fuzz/
 * fuzz_flags.sh weighs each input by its execution time (-entropic_scale_per_exec_time).
 */
#include "manager/core/nt_mgr_loop.c"

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "format/nt_archive_header_encode.h"
#include "tests/support/nt_provider_header_test.h"

#define PEERS 3

#ifndef WIRE_MESSAGES_ONLY
#define WIRE_MESSAGES_ONLY 0
#endif
/* The largest CTL_START buffer an execution makes (larger ones, and 0, are made this). */
#define START_BUFFER_CAP (WIRE_MESSAGES_ONLY ? 64u << 10 : 256u << 10)

typedef struct peer {
	int sock;      /* -1: not connected */
	int ended;     /* the manager closed its end: sock reads nothing but EOF from now on */
	int fifo;      /* from INITIALIZE, or -1 */
	uint8_t *arena; /* the buffer INITIALIZE gave, mapped shared, or NULL */
	size_t arena_size;
} peer;

static char scratch_dir[512];
static int stand_in = -1; /* /dev/null: what a message other than CTL_START carries */

/* The manager's descriptors as serve() last polled them when none was ready, and whether a
 * peer has acted since (sent, written its FIFO, hung up, taken answers, connected). Only a
 * peer makes one of the manager's sockets or FIFOs readable (or a controller's writable):
 * the manager's own work (timers, compact, the saver threads' FIFO answers) reads, writes
 * toward the peers and closes. So while no peer acts and the manager polls the same
 * descriptors for the same events, that poll would find none ready again: serve() skips it
 * (most steps are such, a hang-up of a peer not connected above all). Reset per input. */
static struct {
	int valid;
	nfds_t n;
	struct pollfd pfd[2 * NT_MGR_MAX_CONNS];
} manager_quiet;

/* A peer acted: serve() polls again. */
static void peer_acted(void)
{
	manager_quiet.valid = 0;
}

/* Messages the manager sent and connections it closed, counted from the start of the
 * process: only these make a peer's socket readable. Every message the manager sends a peer
 * goes through nt_mgr_send (the saver threads write only FIFOs, which the peers never
 * read), and tests/fuzz/meson.build links these targets with -Wl,--wrap=nt_mgr_send so
 * that the calls come here first; connections are closed by compact(), which serve() calls
 * (nt_manager_free's are after the last drain). Both are touched only by the loop's
 * thread. */
static unsigned long manager_sends, manager_closes;

/* The peers' sockets as drain_all() last left them: each read until nothing was left (or
 * its end of file), with the counts above at that time. While those counts and the peers
 * polled stay the same, a poll would find none readable: drain_all() skips it. */
static struct {
	int valid;
	int n;
	int sock[PEERS];
	unsigned long sends, closes;
} peers_quiet;

int __real_nt_mgr_send(int sock, const nt_wire_msg *msg, const int *fds, int nfds);
int __wrap_nt_mgr_send(int sock, const nt_wire_msg *msg, const int *fds, int nfds);
int __wrap_nt_mgr_send(int sock, const nt_wire_msg *msg, const int *fds, int nfds)
{
	manager_sends++;
	return __real_nt_mgr_send(sock, msg, fds, nfds);
}

/* Up to `want` bytes of the input into out (the rest of out is left as it was). */
static size_t take(const uint8_t **p, const uint8_t *end, void *out, size_t want)
{
	size_t n = (size_t)(end - *p) < want ? (size_t)(end - *p) : want;
	memcpy(out, *p, n);
	*p += n;
	return n;
}

/* The manager's log: silent, or on stderr with NT_FUZZ_WIRE_LOG=1 (to see what a seed
 * reaches). */
static void log_line(void *ctx, const char *line)
{
	(void)ctx;
	static int verbose = -1;
	if (verbose < 0)
		verbose = getenv("NT_FUZZ_WIRE_LOG") != NULL;
	if (verbose)
		fprintf(stderr, "manager: %s\n", line);
}

static nt_manager *manager_new(void)
{
	nt_manager_config cfg = { .log = log_line };
	char why[256];
	nt_manager *m = manager_alloc(&cfg, why, sizeof(why)); /* nt_mgr_loop.c's own */
	if (m == NULL)
		abort();
	return m;
}

static void hang_up(peer *p)
{
	if (p->sock >= 0)
		close(p->sock);
	if (p->fifo >= 0)
		close(p->fifo);
	if (p->arena != NULL)
		munmap(p->arena, p->arena_size);
	if (p->sock >= 0 || p->fifo >= 0)
		peer_acted();
	*p = (peer){ -1, 0, -1, NULL, 0 };
}

/* What a provider writes at the start of the buffer INITIALIZE gave it (as
 * tests/manager/arena_header.c does for the Python fake providers): an Arena-layout header
 * that agrees with the manager's layout, so that the manager goes on to save the arena, which
 * the fuzzer then writes into. */
static void provider_arena(peer *pr, const nt_wire_msg *init, int memfd)
{
	nt_arena_layout l;
	struct stat st;
	if (pr->arena != NULL) /* a later trace's buffer replaces the last one */
		munmap(pr->arena, pr->arena_size);
	pr->arena = NULL;
	pr->arena_size = 0;
	if (nt_arena_layout_compute(init->b, init->c, &l) != 0 ||
	    fstat(memfd, &st) != 0 || (uint64_t)st.st_size != l.map_size)
		return;
	void *map = mmap(NULL, l.map_size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (map == MAP_FAILED)
		return;
	nt_archive_info info;
	test_provider_header(&info, &l, (int)init->a, (uint32_t)getpid());
	nt_header_encode(&info, map, NT_ARENA_HEADER_BYTES, NULL);
	pr->arena = map;
	pr->arena_size = l.map_size;
}

/* The peer writes into its arena: a 16-bit offset in 8-byte words, a length, the bytes. */
static void arena_write(peer *pr, const uint8_t **p, const uint8_t *end)
{
	uint16_t words = 0;
	uint8_t len = 0;
	take(p, end, &words, sizeof(words));
	take(p, end, &len, 1);
	uint8_t bytes[255];
	size_t n = take(p, end, bytes, len);
	size_t at = (size_t)words * 8;
	if (pr->arena != NULL && at < pr->arena_size && n <= pr->arena_size - at)
		memcpy(pr->arena + at, bytes, n);
}

static int connect_peer(nt_manager *m, peer *p)
{
	if (p->sock >= 0)
		return 1;
	int sv[2];
	if (m->nconns >= NT_MGR_MAX_CONNS ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
		return 0;
	int before = m->nconns;
	accept_one(m, sv[0]); /* SO_PEERCRED of a socketpair: this process, as a peer */
	if (m->nconns == before) {
		close(sv[1]);
		return 0;
	}
	p->sock = sv[1];
	p->ended = 0;
	peer_acted();
	peers_quiet.valid = 0; /* a new socket (perhaps under a closed one's number) */
	return 1;
}

/* Its files are O_TMPFILEs, gone when closed: the directory is empty at exit. */
static void remove_scratch_dir(void)
{
	rmdir(scratch_dir);
}

/* An O_TMPFILE in a private directory under /dev/shm (tmpfs: ext4's O_TMPFILE and the
 * saver's fdatasync were a tenth of an execution), else $TMPDIR or /tmp: the bundle's
 * streams go beside it. */
static int output_file(void)
{
	if (scratch_dir[0] == '\0') {
		const char *tmp = getenv("TMPDIR");
		if (access("/dev/shm", W_OK | X_OK) == 0)
			tmp = "/dev/shm";
		snprintf(scratch_dir, sizeof(scratch_dir), "%s/nt-fuzz-wire-XXXXXX",
			 tmp != NULL && tmp[0] == '/' && strlen(tmp) < 400 ? tmp : "/tmp");
		if (mkdtemp(scratch_dir) == NULL)
			abort();
		atexit(remove_scratch_dir);
	}
	return open(scratch_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
}

static void send_message(peer *pr, const uint8_t **p, const uint8_t *end, int op)
{
	nt_wire_msg msg;
	memset(&msg, 0, sizeof(msg));
	take(p, end, &msg, offsetof(nt_wire_msg, name));
	take(p, end, msg.name, msg.name_len < sizeof(msg.name) ? msg.name_len : sizeof(msg.name));
	take(p, end, msg.text, msg.text_len < sizeof(msg.text) ? msg.text_len : sizeof(msg.text));
	if (op & 0x20) {
		msg.magic = NT_WIRE_MAGIC;
		msg.version = NT_WIRE_VERSION;
	}
	if (msg.type == NT_WIRE_CTL_START &&
	    (msg.b == 0 || msg.b > (WIRE_MESSAGES_ONLY ? START_BUFFER_CAP : 4u << 20)))
		msg.b = START_BUFFER_CAP;
	/* Only CTL_START's descriptor is looked at (the manager writes the bundle into it); any
	 * other message's is closed unread, so it gets a copy of a file held for the process
	 * (stand_in, opened before the first descriptor count) instead of a new file made and
	 * destroyed. */
	int fd = !(op & 0x10) ? -1 : msg.type == NT_WIRE_CTL_START ? output_file() : stand_in;
	__real_nt_mgr_send(pr->sock, &msg, &fd, fd >= 0 ? 1 : 0); /* not the manager's */
	peer_acted();
	if (fd >= 0 && fd != stand_in)
		close(fd);
}

/* The peer takes its answers; the FIFO of an INITIALIZE is kept, other descriptors closed.
 * End of file (the manager closed the connection, and never sends an empty message) is
 * noted: nothing can come after it, so drain_all() no longer polls that socket. */
static void drain(peer *pr)
{
	for (;;) {
		nt_wire_msg msg;
		int fds[4], nfds;
		ssize_t n = pr->sock < 0 ? -1
			    : nt_sock_recv(pr->sock, &msg, sizeof(msg), fds, 4, &nfds, 1);
		pr->ended |= n == 0;
		if (n <= 0)
			return;
		peer_acted(); /* room in its socket (a controller owed answers), FIFOs closed */
		for (int i = 0; i < nfds; i++) {
			if (msg.type == NT_WIRE_INITIALIZE && i == 0 && !WIRE_MESSAGES_ONLY)
				provider_arena(pr, &msg, fds[i]);
			if (msg.type == NT_WIRE_INITIALIZE && i == 1) {
				if (pr->fifo >= 0)
					close(pr->fifo);
				pr->fifo = fds[i];
				fcntl(pr->fifo, F_SETFL, O_NONBLOCK);
			} else {
				close(fds[i]);
			}
		}
	}
}

/* Each peer takes its answers, as drain(): one poll() of the connected peers, then only
 * those with something to read are read (a failing recvmsg per peer and step was a third of
 * the system calls of a fuzz_wire_msg execution); no poll while none can have anything
 * (peers_quiet: most steps, the manager having sent nothing). */
static void drain_all(peer *peers)
{
	struct pollfd pfd[PEERS];
	int who[PEERS], sock[PEERS], n = 0;
	for (int i = 0; i < PEERS; i++) {
		if (peers[i].sock < 0 || peers[i].ended)
			continue;
		who[n] = i;
		sock[n] = peers[i].sock;
		pfd[n++] = (struct pollfd){ .fd = peers[i].sock, .events = POLLIN };
	}
	if (peers_quiet.valid && peers_quiet.n == n &&
	    memcmp(peers_quiet.sock, sock, (size_t)n * sizeof(sock[0])) == 0 &&
	    peers_quiet.sends == manager_sends && peers_quiet.closes == manager_closes)
		return;
	if (n > 0 && poll(pfd, (nfds_t)n, 0) > 0)
		for (int k = 0; k < n; k++)
			if (pfd[k].revents != 0)
				drain(&peers[who[k]]);
	/* Read to EAGAIN or end of file, each of the sockets: none is readable now (one that
	 * ended is left out of the next poll, so the set is taken after the reads). */
	n = 0;
	for (int i = 0; i < PEERS; i++)
		if (peers[i].sock >= 0 && !peers[i].ended)
			peers_quiet.sock[n++] = peers[i].sock;
	peers_quiet.n = n;
	peers_quiet.sends = manager_sends;
	peers_quiet.closes = manager_closes;
	peers_quiet.valid = 1;
}

/* One turn of the loop as turn() takes it, without its listening socket and stop eventfd
 * and without waiting: one poll() of every connection and FIFO, then each that is ready
 * read (or, a controller owed answers, flushed), as the manager does (the harness used to
 * read every connection each step, a failing recvmsg for each that had nothing). */
static void serve(nt_manager *m)
{
	struct pollfd pfd[2 * NT_MGR_MAX_CONNS];
	int who[2 * NT_MGR_MAX_CONNS]; /* conn index * 2 + (1 = its FIFO) */
	int n = 0, nconns = m->nconns;
	for (int i = 0; i < nconns; i++) {
		nt_mgr_conn *c = &m->conns[i];
		who[n] = 2 * i;
		pfd[n++] = (struct pollfd){ .fd = c->fd,
					    .events = nt_mgr_control_busy(c) ? POLLOUT : POLLIN };
		if (c->prov != NULL && c->prov->fifo >= 0) {
			who[n] = 2 * i + 1;
			pfd[n++] = (struct pollfd){ .fd = c->prov->fifo, .events = POLLIN };
		}
	}
	if (manager_quiet.valid && manager_quiet.n == (nfds_t)n &&
	    memcmp(manager_quiet.pfd, pfd, (size_t)n * sizeof(pfd[0])) == 0) {
		n = 0; /* none would be ready (manager_quiet) */
	} else if (n > 0) {
		int ready = poll(pfd, (nfds_t)n, 0);
		manager_quiet.valid = ready == 0;
		if (ready == 0) {
			manager_quiet.n = (nfds_t)n;
			memcpy(manager_quiet.pfd, pfd, (size_t)n * sizeof(pfd[0]));
		}
		if (ready <= 0)
			n = 0;
	}
	for (int k = 0; k < n; k++) {
		nt_mgr_conn *c = &m->conns[who[k] / 2];
		if (pfd[k].revents == 0 || c->closing)
			continue;
		if (who[k] % 2 == 0 && nt_mgr_control_busy(c))
			nt_mgr_control_flush(m, c);
		else if (who[k] % 2 == 0)
			read_conn(m, c);
		else if (c->prov != NULL && c->prov->fifo >= 0)
			nt_mgr_provider_fifo(m, c);
	}
	timers(m);
	int before = m->nconns;
	compact(m);
	manager_closes += (unsigned long)(before - m->nconns);
}

/* Descriptors this process holds (a leak shows as a count that grows across one run). */
static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	if (d == NULL)
		return -1;
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (stand_in < 0 && (stand_in = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
		abort();
	int fds_before = WIRE_MESSAGES_ONLY ? 0 : open_fds();
	nt_manager *m = manager_new();
	peer peers[PEERS];
	for (int i = 0; i < PEERS; i++)
		peers[i] = (peer){ -1, 0, -1, NULL, 0 };
	peer_acted(); /* nothing of the last input's manager is known */
	peers_quiet.valid = 0;
	const uint8_t *p = data, *end = data + size;
	while (p < end) {
		int op = *p++;
		peer *pr = &peers[((op >> 2) & 3) % PEERS]; /* bits 2-3; 3 is peer 0 */
		switch (op & 3) {
		case 0:
			if (connect_peer(m, pr))
				send_message(pr, &p, end, op);
			break;
		case 1: {
			nt_fifo_packet pkt;
			memset(&pkt, 0, sizeof(pkt));
			take(&p, end, &pkt, sizeof(pkt));
			if (pr->fifo >= 0) {
				ssize_t w = write(pr->fifo, &pkt, sizeof(pkt));
				(void)w; /* a full FIFO drops it, as a provider's would */
				peer_acted();
			}
			break;
		}
		case 2:
			hang_up(pr);
			break;
		case 3:
			if (op & 0x10)
				arena_write(pr, &p, end);
			else
				timers(m);
			break;
		}
		serve(m);
		drain_all(peers);
	}
	for (int i = 0; i < PEERS; i++)
		hang_up(&peers[i]);
	serve(m); /* the manager sees them go */
	nt_manager_free(m);
	int fds_after = WIRE_MESSAGES_ONLY ? 0 : open_fds();
	if (fds_after != fds_before) {
		fprintf(stderr, "fuzz_wire: %d descriptors before the run, %d after\n", fds_before,
			fds_after);
		abort();
	}
	return 0;
}
