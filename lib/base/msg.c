/*
 * msg.c - the library's messages: numbers formatted without printf, the
 * string builder every message is put together with (on the stack, with
 * no allocation: they are written from malloc, signal handlers and
 * fork handlers), and the one way misuse ends (jp__die: one line on
 * stderr, abort; jp__die_block_at adds the stacks where a block was
 * allocated and freed), and where the reports at exit go (a copy of
 * stderr kept from the start).  Declared in os.h, under "msg.c".
 */
#include "os.h"
#include "stack.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The copy of fd 2 and what file it is (jp__os_dup_high), or -1. */
static int report_fd = -1;
static uint64_t report_id[2];

void jp__report_keep(void)
{
	if (report_fd < 0)
		report_fd = jp__os_dup_high(2, 1000, report_id);
}

void jp__report_forget(void)
{
	if (report_fd >= 0)
		close(report_fd);
	report_fd = -1;
}

int jp__report_fd(void)
{
	return jp__os_fd_is(report_fd, report_id) ? report_fd : 2;
}

/* Where a report of misuse goes: fd 2 while it is open (a finding comes
 * while the program runs, and a program, or a test harness, may have put
 * its stderr elsewhere since the start), else the copy. */
static int die_fd(void)
{
	return fcntl(2, F_GETFD) != -1 ? 2 : jp__report_fd();
}

char *jp__fmt_hex(char *buf, uintptr_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[16];
	int n = 0, i = 0;

	do {
		tmp[n++] = digits[v & 15];
		v >>= 4;
	} while (v != 0);
	buf[i++] = '0';
	buf[i++] = 'x';
	while (n > 0)
		buf[i++] = tmp[--n];
	buf[i] = '\0';
	return buf;
}

char *jp__fmt_u64(char *buf, uint64_t v)
{
	char tmp[20];
	int n = 0, i = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	while (n > 0)
		buf[i++] = tmp[--n];
	buf[i] = '\0';
	return buf;
}

char *jp__fmt_bytes(char *buf, uint64_t v)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	uint64_t whole = v, tenths = 0;
	int u = -1;
	size_t n;

	if (v < 1024) {
		jp__fmt_u64(buf, v);
		strcat(buf, " B");
		return buf;
	}
	/* One decimal, rounded: 1536 is 1.5 KiB, 1048064 is 1023.5 KiB. */
	while (whole >= 1024 && u < 5) {
		tenths = (whole % 1024) * 10 + 512;
		whole /= 1024;
		u++;
	}
	tenths /= 1024;
	if (tenths >= 10) {
		whole++;
		tenths -= 10;
		if (whole == 1024 && u < 5) {
			whole = 1;
			u++;
		}
	}
	jp__fmt_u64(buf, whole);
	n = strlen(buf);
	buf[n++] = '.';
	buf[n++] = (char)('0' + tenths);
	buf[n++] = ' ';
	memcpy(buf + n, unit[u], strlen(unit[u]) + 1);
	return buf;
}

void jp__str_add(char *buf, size_t cap, size_t *len, const char *s)
{
	size_t n = strlen(s);

	if (n > cap - 1 - *len)
		n = cap - 1 - *len;
	memcpy(buf + *len, s, n);
	*len += n;
	buf[*len] = '\0';
}

void jp__str_add_shown(char *buf, size_t cap, size_t *len, const char *s,
		       size_t n, size_t max)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < n && i < max; i++) {
		unsigned char c = (unsigned char)s[i];
		char one[5] = { (char)c, '\0' };

		if (c == '\\') {
			one[1] = '\\';
			one[2] = '\0';
		} else if (c < 0x20 || c == 0x7f) {
			one[0] = '\\';
			one[1] = 'x';
			one[2] = hex[c >> 4];
			one[3] = hex[c & 15];
			one[4] = '\0';
		}
		jp__str_add(buf, cap, len, one);
	}
	if (n > max)
		jp__str_add(buf, cap, len, "...");
}

/* The length of the valid UTF-8 sequence at s (n bytes left), or 0: no
 * overlong form, no surrogate (U+D800 to U+DFFF), nothing above U+10FFFF. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t k;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		k = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		k = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		k = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (k > n)
		return 0;
	for (size_t i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((k == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (k == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return k;
}

void jp__str_add_json(char *buf, size_t cap, size_t *len, const char *s,
		      size_t n, size_t max)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	bool cut = n > max;

	if (cut)
		n = max;
	for (size_t i = 0; i < n;) {
		unsigned char c = u[i];
		char one[8] = { (char)c, '\0' };
		size_t k = 1;

		if (c == '"' || c == '\\') {
			one[0] = '\\';
			one[1] = (char)c;
			one[2] = '\0';
		} else if (c < 0x20 || c == 0x7f) {
			const char *short_form = c == '\n' ? "\\n" : c == '\t' ? "\\t" :
				c == '\r' ? "\\r" : c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;

			if (short_form != NULL)
				memcpy(one, short_form, 3);
			else {
				memcpy(one, "\\u00", 4);
				one[4] = hex[c >> 4];
				one[5] = hex[c & 15];
				one[6] = '\0';
			}
		} else if (c >= 0x80) {
			k = utf8_len(u + i, n - i);
			if (k == 0) {
				k = 1;
				memcpy(one, "\\ufffd", 7);
			} else {
				memcpy(one, u + i, k);
				one[k] = '\0';
			}
		}
		if (strlen(one) > cap - 1 - *len)
			return;		/* not half an escape or character */
		jp__str_add(buf, cap, len, one);
		i += k;
	}
	if (cut)
		jp__str_add(buf, cap, len, "...");
}

void jp__warn_cannot_write(const char *var, const char *path, int err, const char *tail)
{
	char line[PATH_MAX + 128], num[24];
	size_t len = 0;

	jp__str_add(line, sizeof line, &len, "jpsync: warning: JPSYNC_");
	jp__str_add(line, sizeof line, &len, var);
	jp__str_add(line, sizeof line, &len, ": cannot write ");
	jp__str_add(line, sizeof line, &len, path);
	jp__str_add(line, sizeof line, &len, " (errno ");
	jp__str_add(line, sizeof line, &len, jp__fmt_u64(num, (uint64_t)err));
	jp__str_add(line, sizeof line, &len, ")");
	jp__str_add(line, sizeof line, &len, tail);
	jp__str_add(line, sizeof line, &len, "\n");
	jp__os_write(2, line, len);
}

/* ---- misuse ------------------------------------------------------------- */

void jp__die(const char *what)
{
	char line[256];
	size_t n = strlen(what);

	if (n > sizeof line - 10)
		n = sizeof line - 10;
	memcpy(line, "jpsync: ", 8);
	memcpy(line + 8, what, n);
	line[8 + n] = '\n';
	jp__os_write(die_fd(), line, n + 9);
	abort();
}

void jp__die_ptr(const char *what, const void *ptr)
{
	char line[256], hex[20];
	size_t n = strlen(what), h;

	if (n > sizeof line - 40)
		n = sizeof line - 40;
	jp__fmt_hex(hex, (uintptr_t)ptr);
	h = strlen(hex);
	memcpy(line, "jpsync: ", 8);
	memcpy(line + 8, what, n);
	memcpy(line + 8 + n, " of ", 4);
	memcpy(line + 12 + n, hex, h);
	line[12 + n + h] = '\n';
	jp__os_write(die_fd(), line, n + h + 13);
	abort();
}

static void str_off(char *line, size_t cap, size_t *len, long long v)
{
	char num[24];

	if (v < 0)
		jp__str_add(line, cap, len, "-");
	jp__str_add(line, cap, len, jp__fmt_u64(num, v < 0 ? (uint64_t)-v : (uint64_t)v));
}

static void block_msg(char *line, size_t cap, const char *what, const void *ptr,
		   size_t size, long long first, long long last, const char *note)
{
	char num[24];
	size_t len = 0;

	line[0] = '\0';
	jp__str_add(line, cap, &len, what);
	jp__str_add(line, cap, &len, " of ");
	jp__str_add(line, cap, &len, jp__fmt_hex(num, (uintptr_t)ptr));
	if (size != SIZE_MAX) {
		jp__str_add(line, cap, &len, " (");
		jp__str_add(line, cap, &len, jp__fmt_u64(num, size));
		jp__str_add(line, cap, &len, size == 1 ? " byte)" : " bytes)");
	}
	if (first <= last) {
		jp__str_add(line, cap, &len, first == last ? ": byte " : ": bytes ");
		str_off(line, cap, &len, first);
		if (first != last) {
			jp__str_add(line, cap, &len, " to ");
			str_off(line, cap, &len, last);
		}
		jp__str_add(line, cap, &len, " changed");
	}
	if (note != NULL) {
		jp__str_add(line, cap, &len, " (");
		jp__str_add(line, cap, &len, note);
		jp__str_add(line, cap, &len, ")");
	}
}

void jp__die_block(const char *what, const void *ptr, size_t size,
		   long long first, long long last, const char *note)
{
	jp__die_block_at(what, ptr, size, first, last, note, 0, 0);
}

/* "  <label>\n" and a line per frame of the stack id, "    #i <pc>"; nothing
 * for a stack the depot does not hold.  True when a frame printed in the
 * file form. */
bool jp__put_site(char *buf, size_t cap, size_t *len, const char *label, uint32_t id)
{
	uintptr_t pcs[JP_STACK_MAX];
	unsigned n = jp__stack_depot_get(id, pcs, JP_STACK_MAX);
	bool unnamed = false;
	char num[24];

	if (n == 0)
		return false;
	if (label != NULL) {
		jp__str_add(buf, cap, len, "  ");
		jp__str_add(buf, cap, len, label);
		jp__str_add(buf, cap, len, "\n");
	}
	for (unsigned i = 0; i < n; i++) {
		jp__str_add(buf, cap, len, "    #");
		jp__str_add(buf, cap, len, jp__fmt_u64(num, i));
		jp__str_add(buf, cap, len, " ");
		unnamed |= jp__stack_put_pc(buf, cap, len, pcs[i]);
		jp__str_add(buf, cap, len, "\n");
	}
	return unnamed;
}

void jp__die_block_at(const char *what, const void *ptr, size_t size,
		      long long first, long long last, const char *note,
		      uint32_t alloc_site, uint32_t free_site)
{
	char line[240], buf[4096];
	size_t len = 0;
	bool unnamed;

	block_msg(line, sizeof line, what, ptr, size, first, last, note);
	if (alloc_site == 0 && free_site == 0)
		jp__die(line);
	buf[0] = '\0';
	jp__str_add(buf, sizeof buf, &len, "jpsync: ");
	jp__str_add(buf, sizeof buf, &len, line);
	jp__str_add(buf, sizeof buf, &len, "\n");
	unnamed = jp__put_site(buf, sizeof buf, &len, "allocated at:", alloc_site);
	unnamed |= jp__put_site(buf, sizeof buf, &len,
			    strcmp(what, "double free") == 0 ? "first freed at:" : "freed at:",
			    free_site);
	if (unnamed)
		jp__str_add(buf, sizeof buf, &len, "  (for file(+0xoff): addr2line -f -e file"
			    " +0xoff; link with -rdynamic for names)\n");
	jp__os_write(die_fd(), buf, len);
	abort();
}
