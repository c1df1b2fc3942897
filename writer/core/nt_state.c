/* nt_state.c - the session's state (nt_S) and the changes of it that call nothing else of
 * the writer: halting, the recording test, a configuration's defaults. The bottom of
 * writer/core (nt_state.h). */
#include <string.h>

#include "nt_state.h"

nt_session nt_S = { .intern_lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1 };
/* What every event loads first (nanotrace.h): 0 when not recording, else the generation,
 * enabled bit and run epoch that a call site's state must match (nt_site_current). */
uint32_t nt_session_tag_;
nt_core_hooks nt_hooks;

int nt_mode_from_name(const char *name)
{
	static const char *const names[] = { [NT_MODE_ONESHOT] = "oneshot",
					      [NT_MODE_CIRCULAR] = "circular",
					      [NT_MODE_STREAMING] = "streaming" };
	for (int m = 0; name != NULL && m < (int)(sizeof(names) / sizeof(names[0])); m++)
		if (strcmp(name, names[m]) == 0)
			return m;
	return -1;
}

void nt_config_init(nt_config *cfg)
{
	if (cfg == NULL)
		return;
	memset(cfg, 0, sizeof(*cfg));
	cfg->struct_size = sizeof(*cfg);
	cfg->buffer_size = 0; /* the mode's: nt_default_buffer_bytes() */
	cfg->chunk_size = 0;
	cfg->mode = NT_MODE_ONESHOT;
	cfg->clock = NT_CLOCK_AUTO;
	cfg->handle_signals = 1;
}

void nt_session_halt(uint8_t final_state)
{
	if (nt_S.final_state == NT_FINAL_RECORDING) {
		nt_S.final_state = final_state;
		*nt_header_u8(NT_HDR_FINAL_STATE) = final_state;
	}
	nt_store_release_32(&nt_session_tag_, NT_TAG_HALTED);
}

void nt_record_save_failure(int err, uint64_t unsaved)
{
	uint32_t none = 0;
	__atomic_compare_exchange_n(nt_header_u32(NT_HDR_SAVE_ERRNO), &none, (uint32_t)err, 0,
				    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	if (unsaved)
		nt_count_drop(nt_S.dropped_unsaved, unsaved);
}

int nt_is_recording(void)
{
	uint32_t tag = nt_load_32(&nt_session_tag_);
	return tag != 0 && tag != NT_TAG_HALTED;
}
