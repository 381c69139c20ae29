/* SPDX-License-Identifier: Apache-2.0 */
/* "Did you mean": the candidate nearest a misspelt word. Internal to
 * libfedrun (not fedrun_: the library exports only those). */
#ifndef FEDRUN_UTIL_SUGGEST_H
#define FEDRUN_UTIL_SUGGEST_H
#include <stddef.h>

/* Feed candidates one at a time to a suggestion for `word`; best() is the
 * nearest by optimal string alignment distance (Levenshtein with adjacent
 * transpositions, each edit 1), case ignored for letters, among those
 * within max(1, strlen(word) / 4) edits (and closer than the word's own
 * length, so "x" suggests nothing; a looser bound made "global" suggest
 * "local", the opposite of the "central" meant), the first of equal ones; NULL when
 * none is near. Candidates are borrowed: they must outlive the use of
 * best(). Words longer than 63 bytes get no suggestion. */
struct suggest {
	const char *word;
	const char *best;
	size_t best_d;
};

void suggest_init(struct suggest *s, const char *word);
void suggest_add(struct suggest *s, const char *candidate);
/* Candidates separated by `sep` in one string (e.g. "iid|files|dirichlet"):
 * the nearest copied into out (n bytes); 0 when none is near. */
int suggest_among(const char *word, const char *list, char sep, char *out, size_t n);

/* The distance itself (SIZE_MAX when a word is longer than 63 bytes). */
size_t edit_distance(const char *a, const char *b);

#endif
