/* nt_import_tables.c - see nt_import_tables.h. */
#include <stdlib.h>
#include <string.h>

#include "reader/common/nt_grow.h"
#include "nt_import_tables.h"

void *nt_bytes_grow(nt_bytes *b, size_t n)
{
	if (n > SIZE_MAX - b->len || !nt_grow(&b->p, &b->cap, b->len + n, 1))
		return NULL;
	void *at = b->p + b->len;
	memset(at, 0, n);
	b->len += n;
	return at;
}

/* Eight bytes a step (each multiply-xorshift mixes a word in), the tail as one zero-padded
 * word, a final mix so that the low bits the table masks depend on every byte. Keys are
 * SIDs, thread names and argument names of every line: FNV-1a's byte loop was a tenth of
 * an import. */
static uint64_t hash_bytes(const void *p, size_t n)
{
	const uint8_t *s = p;
	uint64_t h = 0x9e3779b97f4a7c15u ^ n, w;
	for (; n >= 8; s += 8, n -= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdu;
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, s, n);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53u;
	return h ^ h >> 29;
}

struct nt_slot *nt_table_find(nt_name_table *t, const void *key, size_t len)
{
	if (t->used * 2 >= t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct nt_slot *s = calloc(cap, sizeof(*s));
		if (s == NULL)
			return NULL;
		for (size_t i = 0; i < t->cap; i++) {
			if (t->slots[i].key == NULL)
				continue;
			size_t j = hash_bytes(t->slots[i].key, t->slots[i].len) & (cap - 1);
			while (s[j].key != NULL)
				j = (j + 1) & (cap - 1);
			s[j] = t->slots[i];
		}
		free(t->slots);
		t->slots = s;
		t->cap = cap;
	}
	size_t j = hash_bytes(key, len) & (t->cap - 1);
	while (t->slots[j].key != NULL) {
		if (t->slots[j].len == len && memcmp(t->slots[j].key, key, len) == 0)
			return &t->slots[j];
		j = (j + 1) & (t->cap - 1);
	}
	char *k = malloc(len + 1);
	if (k == NULL)
		return NULL;
	memcpy(k, key, len);
	k[len] = '\0';
	t->slots[j] = (struct nt_slot){ k, len, 0 };
	t->used++;
	return &t->slots[j];
}

void nt_table_free(nt_name_table *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->slots[i].key);
	free(t->slots);
}
