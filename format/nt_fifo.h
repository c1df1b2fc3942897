/*
 * nt_fifo.h - the provider <-> manager protocol of streaming mode (schema: FifoPacket).
 *
 * Fuchsia's trace provider FIFO protocol: 16-byte packets, one SAVE_BUFFER in flight at a
 * time. The provider sends STARTED (protocol version), then SAVE_BUFFER(wrap count, end of
 * durable data) each time a rolling half fills, and STOPPED at the end; the manager answers
 * each SAVE_BUFFER with BUFFER_SAVED echoing both values once the data is in the archive.
 * Writers do not wait for the answer to reuse space: a slot is theirs again once the saver
 * has marked its chunk saved (its saved-claim word), and a saver also saves unasked while a
 * half fills (nt_saver_pace.h); SAVE_BUFFER is what wakes it when a half is full, and also,
 * for the half still being filled (its wrap count not yet complete, answered as any), when
 * the writers find the saver a sixteenth of the arena behind (NT_SAVER_NUDGE_DIV). Only a
 * full half's answer counts in the header's buffers_saved.
 * In-process the two ends are threads on a socketpair; a manager process can speak the same
 * packets over a pipe or socket.
 */
#ifndef NT_FIFO_H
#define NT_FIFO_H

#include <stdint.h>

#include "nt_format.h"

#define NT_FIFO_PROTOCOL_VERSION 1u
/* SAVE_BUFFER's wrap count for the final save at stop: save everything. */
#define NT_FIFO_SAVE_ALL 0xFFFFFFFFu

enum {
	NT_FIFO_STARTED = 0x100,
	NT_FIFO_SAVE_BUFFER = 0x101,
	NT_FIFO_STOPPED = 0x102,
	NT_FIFO_BUFFER_SAVED = 0x103,
};

typedef struct nt_fifo_packet {
	uint16_t request;
	uint16_t data16;
	uint32_t data32;
	NT_ALIGN8 uint64_t data64;
} nt_fifo_packet;

NT_STATIC_ASSERT(sizeof(nt_fifo_packet) == 16, "FifoPacket is 16 bytes");

#endif /* NT_FIFO_H */
