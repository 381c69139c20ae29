/* SPDX-License-Identifier: Apache-2.0 */
/* The safetensors reader (checkpoints, final models, init files): any
 * bytes are read or refused, never crash or leak; what is read is looked
 * up like resume and init do. */
#include <string.h>
#include "fedrun/error.h"
#include "fedrun/io.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fedrun_st_file f;
	if (fedrun_st_read(&f, fuzz_file(0, data, size)) == 0) {
		(void)fedrun_st_checksum_kind(&f);
		(void)fedrun_st_meta_get(&f, "fedrun.round");
		for (uint32_t i = 0; i < f.n; i++)
			if (fedrun_st_find(&f, f.t[i].name) == NULL)
				__builtin_trap(); /* every tensor read is found by name */
		fedrun_st_fini(&f);
	}
	fedrun_error_clear();
	return 0;
}
