/* nt_import_tables.c - see nt_import_tables.h. */
#include <stdlib.h>
#include <string.h>

#include "../common/nt_grow.h"
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

static uint64_t hash_bytes(const void *p, size_t n)
{
	const uint8_t *s = p;
	uint64_t h = 1469598103934665603u; /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 1099511628211u;
	return h;
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
