/*
 * nt_reader_access.c - the public accessors of an open reader's tables and header. A
 * many-process reader holds the same tables (its sections' renumbered), so none of these
 * asks which kind of reader it is given: that is nt_reader.c's question alone.
 */
#include "nt_reader_internal.h"
#include "format/nt_version.h"

const char *nt_reader_version(void)
{
	return NT_VERSION_STRING; /* this library's, compiled in here: not the caller's header */
}

const nt_archive_info *nt_reader_info(const nt_reader *r)
{
	return &r->info;
}

uint32_t nt_reader_process_count(const nt_reader *r)
{
	return r ? (uint32_t)r->nprocesses : 0;
}

const nt_reader_process *nt_reader_process_at(const nt_reader *r, uint32_t index)
{
	if (r == NULL || index >= r->nprocesses || !r->processes[index].defined)
		return NULL;
	return &r->processes[index];
}

const char *nt_reader_name(const nt_reader *r)
{
	return r->name;
}

uint32_t nt_reader_thread_count(const nt_reader *r)
{
	return r ? r->summary.threads : 0;
}

const nt_reader_thread *nt_reader_thread_at(const nt_reader *r, uint32_t i)
{
	if (r == NULL || i >= r->summary.threads)
		return NULL;
	return &r->threads[r->thread_order[i]];
}

const nt_reader_thread *nt_reader_thread_by_index(const nt_reader *r, uint32_t index)
{
	if (r == NULL || index >= r->thread_limit || r->threads[index].name == NULL)
		return NULL;
	return &r->threads[index];
}

uint32_t nt_reader_thread_index_limit(const nt_reader *r)
{
	return r ? r->thread_limit : 0;
}

uint32_t nt_reader_max_category_len(const nt_reader *r)
{
	return r->max_category_len;
}

uint32_t nt_reader_max_name_len(const nt_reader *r)
{
	return r->max_name_len;
}

uint32_t nt_reader_max_event_name_len(const nt_reader *r)
{
	return r ? r->max_event_name_len : 0;
}

void nt_reader_get_summary(const nt_reader *r, nt_reader_summary *out)
{
	*out = r->summary;
}
