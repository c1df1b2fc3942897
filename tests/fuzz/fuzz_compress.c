/*
 * fuzz_compress.c - libFuzzer target: nt_archive_compress (trace-import's last step,
 * reader/import) on any bytes: the input compressed at zstd's fastest level, and what it
 * makes opened and visited in time order (its CompressedChunk records hold well-formed
 * frames of whatever the input's chunks held).
 */
#include "fuzz_reader_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	void *z = NULL;
	size_t zsize = 0;
	nt_reader_error err;
	if (nt_archive_compress(data, size, -5, &z, &zsize, &err) != 0)
		return 0;
	nt_reader *r = nt_reader_open_memory(z, zsize, "compressed", &err);
	if (r != NULL) {
		fuzz_visit(r, NT_ORDER_TIME, NT_ON_CORRUPT_SKIP);
		nt_reader_close(r);
	}
	free(z);
	return 0;
}
