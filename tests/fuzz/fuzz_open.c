/*
 * fuzz_open.c - libFuzzer target: any bytes as an archive (or a bundle), opened from memory
 * and visited in both orders under both damage policies; records counted before and after
 * (a clean stream-order visit keeps the count it made: it must be the walk's), the summary,
 * the compression counts and every section and problem read. The reader's promise
 * (nanotrace_reader.h, ARCHITECTURE.md "Reader"): no input makes it read outside the buffer,
 * hit undefined behaviour, leak or crash; damage is reported, never trusted. The renderers
 * have targets of their own (fuzz_render_*), so an execution here stays fast.
 */
#include "fuzz_reader_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(data, size, "fuzz", &err);
	if (r == NULL)
		return 0;
	/* Counted by the walk first; after a stream-order visit that met no damage the count
	 * is the one that visit kept: both must be the same. */
	uint64_t walked[256], counts[256], zchunks, zbytes;
	nt_reader_count_records(r, walked);
	for (int order = 0; order < 2; order++)
		for (int policy = 0; policy < 2; policy++)
			fuzz_visit(r, order ? NT_ORDER_TIME : NT_ORDER_STREAM,
				   policy ? NT_ON_CORRUPT_SKIP : NT_ON_CORRUPT_STOP);
	nt_reader_count_records(r, counts);
	if (memcmp(walked, counts, sizeof(counts)) != 0)
		__builtin_trap();
	nt_reader_summary s;
	nt_reader_get_summary(r, &s);
	nt_reader_get_compression(r, &zchunks, &zbytes);
	for (uint32_t i = 0; i < nt_reader_section_count(r); i++)
		(void)nt_reader_section_at(r, i);
	for (uint32_t i = 0; i < nt_reader_problem_count(r); i++)
		(void)nt_reader_problem_at(r, i, NULL);
	nt_reader_close(r);
	return 0;
}
