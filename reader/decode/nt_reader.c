/*
 * nt_reader.c - the top of reader/decode: the public calls whose work differs between a
 * reader of one archive (nt_reader_open.c) and a reader of many processes (a bundle, a
 * directory, several files: nt_reader_many.c). This is the one place that asks which kind
 * a reader is, or which kind a file is; nothing in the folder calls up into it. (The
 * cursor, which builds one visit per section, asks its own question: nt_reader_cursor.c.)
 */
#define _GNU_SOURCE
#include <string.h>
#include <sys/stat.h>

#include "nt_reader_internal.h"

nt_reader *nt_reader_open_memory(const void *data, size_t size, const char *name,
				 nt_reader_error *err)
{
	name = name ? name : "(memory)";
	if (nt_is_bundle(data, size))
		return nt_many_open_bundle(data, size, 0, name, err);
	return nt_reader_over(data, size, 0, name, err);
}

nt_reader *nt_reader_open(const char *path, nt_reader_error *err)
{
	if (path == NULL) {
		nt_reader_fail(err, "(null)", 0, "%s", "no archive path given");
		return NULL;
	}
	const uint8_t *data;
	size_t size;
	if (!nt_map_path(path, &data, &size, err))
		return NULL;
	if (nt_is_bundle(data, size))
		return nt_many_open_bundle(data, size, 1, path, err);
	return nt_reader_over(data, size, 1, path, err);
}

nt_reader *nt_reader_open_many(const char *const *paths, size_t n, nt_reader_error *err)
{
	if (paths == NULL || n == 0) {
		nt_reader_fail(err, "(none)", 0, "%s", "no archive path given");
		return NULL;
	}
	struct stat st;
	if (n == 1 && paths[0] != NULL && (stat(paths[0], &st) != 0 || !S_ISDIR(st.st_mode)))
		return nt_reader_open(paths[0], err);
	return nt_many_open_paths(paths, n, err);
}

void nt_reader_close(nt_reader *r)
{
	if (r != NULL && r->many)
		nt_many_close(r);
	else
		nt_single_close(r);
}

/* Wherever the layout keeps records (nt_reader_count.c), in every section. */
void nt_reader_count_records(const nt_reader *r, uint64_t counts[256])
{
	if (r == NULL || counts == NULL)
		return;
	memset(counts, 0, 256 * sizeof(*counts));
	nt_count_records(r, counts);
}

uint64_t nt_reader_count_blocked(const nt_reader *r, nt_reader_blocked *per_thread, uint32_t n)
{
	if (r == NULL || (per_thread == NULL && n != 0))
		return 0;
	if (n != 0)
		memset(per_thread, 0, (size_t)n * sizeof(*per_thread));
	return nt_count_blocked(r, per_thread, n);
}

/* Summed over the sections: a reader of one archive is its own one section. */
void nt_reader_get_compression(const nt_reader *r, uint64_t *compressed_chunks,
			       uint64_t *chunk_bytes_uncompressed)
{
	uint64_t z = 0, plain = 0;
	if (r != NULL && r->many != NULL) { /* the sections' sums, as they opened */
		z = r->many->totals.zchunks;
		plain = r->many->totals.plain_chunk_bytes;
	} else if (r != NULL) {
		z = r->zchunks;
		plain = r->plain_chunk_bytes;
	}
	if (compressed_chunks != NULL)
		*compressed_chunks = z;
	if (chunk_bytes_uncompressed != NULL)
		*chunk_bytes_uncompressed = plain;
}

uint32_t nt_reader_section_count(const nt_reader *r)
{
	return r == NULL ? 0 : r->many ? (uint32_t)r->many->nsections : 1;
}

const nt_reader_section *nt_reader_section_peek(const nt_reader *r, uint32_t i)
{
	if (r == NULL || i >= nt_reader_section_count(r))
		return NULL;
	return r->many ? &r->many->sections[i] : &r->self;
}

const nt_reader_section *nt_reader_section_at(const nt_reader *r, uint32_t i)
{
	const nt_reader_section *s = nt_reader_section_peek(r, i);
	if (s != NULL && r->many != NULL)
		(void)nt_many_section_pin(r, i); /* a closed one opened for the reader's life */
	return s;
}

int nt_reader_section_header(const nt_reader *r, uint32_t i, nt_archive_info *out)
{
	const nt_reader_section *s = nt_reader_section_peek(r, i);
	if (s == NULL || out == NULL)
		return -1;
	const nt_archive_info *info = __atomic_load_n(&s->info, __ATOMIC_ACQUIRE);
	if (info != NULL) {
		*out = *info;
		return 0;
	}
	if (!nt_many_section_closed(r, i))
		return -1; /* it could not be opened */
	const lazy_section *lz = &r->many->lazy[i];
	char why[160];
	uint64_t where;
	return nt_header_decode(lz->data, lz->size, out, why, sizeof(why), &where) != 0 ? 0 : -1;
}

uint32_t nt_reader_problem_count(const nt_reader *r)
{
	return r && r->many ? (uint32_t)r->many->nproblems : 0;
}

const char *nt_reader_problem_at(const nt_reader *r, uint32_t i, uint64_t *offset)
{
	if (i >= nt_reader_problem_count(r))
		return NULL;
	if (offset)
		*offset = r->many->problems[i].offset;
	return r->many->problems[i].message;
}

