/* SPDX-License-Identifier: Apache-2.0 */
/* Error codes, their names, and the per-thread message that carries the
 * detail of a failure up to main(). */
#include "config.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "fedrun/error.h"

#define MSG_MAX 2048

static _Thread_local char msg_buf[MSG_MAX];

const char *fedrun_strerror(int code)
{
	switch (code) {
	case FEDRUN_OK: return "success";
#define XX(name, num, desc) case FEDRUN_E##name: return desc;
	FEDRUN_ERRNO_MAP(XX)
#undef XX
	default: return "unknown error";
	}
}

const char *fedrun_err_name(int code)
{
	switch (code) {
	case FEDRUN_OK: return "FEDRUN_OK";
#define XX(name, num, desc) case FEDRUN_E##name: return "FEDRUN_E" #name;
	FEDRUN_ERRNO_MAP(XX)
#undef XX
	default: return "FEDRUN_E?";
	}
}

int fedrun_error(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg_buf, sizeof msg_buf, fmt, ap);
	va_end(ap);
	return code;
}

int fedrun_error_wrap(int code, const char *fmt, ...)
{
	char prefix[MSG_MAX], old[MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	memcpy(old, msg_buf, sizeof old);
	const char *tail = old[0] ? old : fedrun_strerror(code);
	/* prefix + tail, cut to the buffer. */
	size_t np = strlen(prefix), nt = strlen(tail);
	if (np > MSG_MAX - 1)
		np = MSG_MAX - 1;
	if (nt > MSG_MAX - 1 - np)
		nt = MSG_MAX - 1 - np;
	memcpy(msg_buf, prefix, np);
	memcpy(msg_buf + np, tail, nt);
	msg_buf[np + nt] = '\0';
	return code;
}

const char *fedrun_error_message(void)
{
	return msg_buf;
}

void fedrun_error_clear(void)
{
	msg_buf[0] = '\0';
}
