/* SPDX-License-Identifier: Apache-2.0 */
/* Declarations shared inside libfedrun, not exported. */
#ifndef FEDRUN_INTERNAL_H
#define FEDRUN_INTERNAL_H

/* The directory relative input paths are resolved against (opts.c). */
const char *opts_base_dir(void);

#endif
