/* SPDX-License-Identifier: Apache-2.0 */
/* What the fuzz targets share: the libFuzzer entry point, and a file that
 * holds the input (fedrun's readers take paths). Built two ways: with
 * clang's libFuzzer by `make fuzz`, and with standalone.c's main() as the
 * regression runners of `make check`, which run every saved input. */
#ifndef FEDRUN_FUZZ_H
#define FEDRUN_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Writes data to this process's scratch file number `which` (0..3) and
 * returns its path (static storage). Aborts the process if it cannot: a
 * fuzz harness has no better way to say so. */
const char *fuzz_file(int which, const void *data, size_t size);

#endif
