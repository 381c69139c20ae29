/* SPDX-License-Identifier: Apache-2.0 */
/* What the tests of the federated vocabulary need beyond fedrun/fedvocab.h:
 * the protocol with keys smaller than 2048 bits, so that a test can run it
 * many times. Internal to libfedrun; nothing outside tests/ may call it. */
#ifndef FEDRUN_FEDVOCAB_INTERNAL_H
#define FEDRUN_FEDVOCAB_INTERNAL_H

#include "fedrun/fedvocab.h"

/* fedrun_fedvocab_order with keys of min_bits or more accepted (256 at the
 * least). */
int fedvocab_order_min_bits(const struct fedrun_fedvocab_party *parties, uint32_t n_parties,
			    const struct fedrun_fedvocab_opts *opts, uint32_t min_bits,
			    char ***words_out, uint64_t *n_out,
			    struct fedrun_fedvocab_transcript *tr);

#endif
