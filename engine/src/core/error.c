/*
** error.c -- the thread-local error message of DESIGN §2.
** A failed call leaves its message here and returns a status; nothing else
** in the engine reports errors.
*/
#include "core/core.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char em_errbuf[1024];

const char *em_last_error(void) { return em_errbuf; }

const char *em_last_error_after(const char *op) {
  size_t k = strlen(op);
  if (strncmp(em_errbuf, op, k) == 0 && em_errbuf[k] == ':' && em_errbuf[k + 1] == ' ')
    return em_errbuf + k + 2;
  return em_errbuf;
}

/* The message is formatted aside, then copied in: an argument may be
** em_last_error() itself (a message that wraps the failure before it). */
em_status em_fail(em_status code, const char *fmt, ...) {
  char msg[sizeof em_errbuf];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  memcpy(em_errbuf, msg, strlen(msg) + 1);
  return code;
}

em_status em_set_error(em_status code, const char *msg) {
  return em_fail(code, "%s", msg ? msg : "");
}

char *em_fmt_shape(char *buf, size_t n, int ndim, const int64_t *sizes) {
  size_t used = 0;
  int w = snprintf(buf, n, "[");
  used = w > 0 ? (size_t)w : 0;
  for (int i = 0; i < ndim && used < n; i++) {
    w = snprintf(buf + used, n - used, i ? ", %lld" : "%lld",
                 (long long)sizes[i]);
    if (w < 0) break;
    used += (size_t)w;
  }
  if (used < n) snprintf(buf + used, n - used, "]");
  return buf;
}
