/* nt_import_tables.h - a growable byte buffer (on nt_grow) and a byte-string -> index table
 * (a word-at-a-time multiply-xorshift hash), for trace-import (not installed). Hand-written:
 * the reader library has no dependencies, and these are twenty lines each. */
#ifndef NT_IMPORT_TABLES_H
#define NT_IMPORT_TABLES_H

#include <stddef.h>
#include <stdint.h>

typedef struct nt_bytes {
	uint8_t *p;
	size_t len, cap;
} nt_bytes;

/* Appends n zeroed bytes; returns where they start, or NULL when out of memory. */
void *nt_bytes_grow(nt_bytes *b, size_t n);

typedef struct nt_name_table {
	struct nt_slot {
		char *key; /* len bytes + NUL */
		size_t len;
		uint32_t value;
	} *slots;
	size_t cap, used;
} nt_name_table;

/* The slot for key (value 0 when new), or NULL when out of memory. */
struct nt_slot *nt_table_find(nt_name_table *t, const void *key, size_t len);
void nt_table_free(nt_name_table *t);

#endif /* NT_IMPORT_TABLES_H */
