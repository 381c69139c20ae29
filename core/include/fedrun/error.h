/* SPDX-License-Identifier: Apache-2.0 */
/* fedrun error codes and the per-thread error message.
 * Library functions return 0 or a negative FEDRUN_E* code; the detail of the
 * most recent failure on the calling thread is kept for fedrun_error_message(). */
#ifndef FEDRUN_ERROR_H
#define FEDRUN_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* One table generates the enum, the names and the descriptions (libuv style).
 * New codes go at the end: their values are part of the ABI. */
#define FEDRUN_ERRNO_MAP(XX)                                                   \
	XX(NOMEM, 1, "out of memory")                                          \
	XX(INVAL, 2, "invalid argument")                                       \
	XX(IO, 3, "input/output error")                                        \
	XX(NOENT, 4, "no such file or directory")                              \
	XX(FORMAT, 5, "malformed file")                                        \
	XX(CONFIG, 6, "invalid pipeline")                                      \
	XX(ABI, 7, "plugin ABI mismatch")                                      \
	XX(PLUGIN, 8, "plugin failed")                                         \
	XX(NUMERIC, 9, "non-finite value")                                     \
	XX(UNSUPPORTED, 10, "operation not supported")                         \
	XX(INTERRUPTED, 11, "interrupted")                                     \
	XX(STATE, 12, "inconsistent state")

enum fedrun_errno {
	FEDRUN_OK = 0,
#define FEDRUN_ERR_ENUM_(name, num, desc) FEDRUN_E##name = -(num),
	FEDRUN_ERRNO_MAP(FEDRUN_ERR_ENUM_)
#undef FEDRUN_ERR_ENUM_
};

/* Static description of a code ("out of memory"); never NULL. */
const char *fedrun_strerror(int code);
/* Static name of a code ("FEDRUN_ENOMEM"); never NULL. */
const char *fedrun_err_name(int code);

/* Records a formatted message for the calling thread and returns `code`, so
 * that callers can write `return fedrun_error(FEDRUN_EINVAL, "...", ...)`. */
int fedrun_error(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Prepends formatted context ("pipeline.json: ") to the current message and
 * returns `code` unchanged. */
int fedrun_error_wrap(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The calling thread's last message (borrowed, valid until the next
 * fedrun_error* call on this thread); "" if none. */
const char *fedrun_error_message(void);
/* Forgets the calling thread's last message. */
void fedrun_error_clear(void);

#ifdef __cplusplus
}
#endif
#endif
