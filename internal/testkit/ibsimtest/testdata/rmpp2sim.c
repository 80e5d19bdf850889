// rmpp2sim: RMPP for SA tables between programs under libumad2sim, which
// carries single MADs only: umad2sim_write copies at most one 256-byte
// MAD into ibsim's sim_request, and nothing reassembles. Preloaded
// before libumad2sim.so (LD_PRELOAD="rmpp2sim.so libumad2sim.so") in
// OpenSM and in the tool that asks:
//
//   write: an SA MAD with RMPP active longer than one MAD (OpenSM's
//          SubnAdmGetTableResp, which it leaves to the kernel to cut)
//          goes out as RMPP DATA segments, each with the 56-byte header,
//          flags Active, First, Last and the segment number; the first
//          one's PayloadLength is the table's length in bytes.
//   read:  those segments are put together again as the kernel hands an
//          RMPP response to the reader: the first segment's header, then
//          the data, the umad length the whole; a buffer too small gets
//          the header with that length and ENOSPC, and the MAD waits for
//          the next read (libibumad's umad_recv then reallocates).
//   poll:  a umad fd holding a whole MAD is readable.
//
// A segment carries 168 bytes, not the 200 of the wire format: libumad2sim
// receives every MAD into a buffer of sizeof(struct sim_request) (288
// bytes) for the umad header and the MAD (64 + 256), so the last 32 bytes
// of every MAD a program under it reads are lost. Both ends are this
// library. No ACKs: ibsim delivers the segments in order and loses none.
// Built by ibsimtest.RMPPShim with cc; test code only.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define UMAD_HDR 64   /* struct ib_user_mad with pkey_index */
#define MAD 256
#define SA_HDR 56     /* common 24 + RMPP 12 + SA 20 */
#define SEG_DATA 168  /* 224 bytes of a MAD arrive whole, less SA_HDR */
#define FD_MIN 1024   /* libumad2sim's umad fds */
#define FD_MAX 2048

static ssize_t (*next_read)(int, void *, size_t);
static ssize_t (*next_write)(int, const void *, size_t);
static int (*next_poll)(struct pollfd *, nfds_t, int);

struct acc {
	uint8_t *buf;     /* header + data so far, then the whole umad */
	size_t len;       /* bytes in buf */
	size_t want;      /* bytes of the whole umad */
	uint32_t next;    /* segment number expected */
	int ready;        /* buf holds a whole umad for the next read */
};

static struct acc accs[FD_MAX - FD_MIN];

static void init(void)
{
	if (!next_read) {
		next_read = dlsym(RTLD_NEXT, "read");
		next_write = dlsym(RTLD_NEXT, "write");
		next_poll = dlsym(RTLD_NEXT, "poll");
	}
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static int umad_fd(int fd)
{
	return fd >= FD_MIN && fd < FD_MAX;
}

/* an SA MAD with RMPP active: class 0x03, flag Active */
static int sa_rmpp(const uint8_t *mad)
{
	return mad[1] == 0x03 && (mad[26] & 0x01);
}

ssize_t write(int fd, const void *buf, size_t count)
{
	init();
	const uint8_t *u = buf;
	if (!umad_fd(fd) || count <= UMAD_HDR + MAD || !sa_rmpp(u + UMAD_HDR))
		return next_write(fd, buf, count);
	size_t data = count - UMAD_HDR - SA_HDR;
	uint32_t nseg = (data + SEG_DATA - 1) / SEG_DATA;
	uint8_t seg[UMAD_HDR + MAD];
	for (uint32_t i = 1; i <= nseg; i++) {
		size_t off = (size_t)(i - 1) * SEG_DATA;
		size_t n = data - off < SEG_DATA ? data - off : SEG_DATA;
		memcpy(seg, u, UMAD_HDR + SA_HDR);
		memset(seg + UMAD_HDR + SA_HDR, 0, MAD - SA_HDR);
		memcpy(seg + UMAD_HDR + SA_HDR, u + UMAD_HDR + SA_HDR + off, n);
		uint8_t *m = seg + UMAD_HDR;
		m[25] = 1; /* DATA */
		m[26] = (m[26] & 0xf8) | 0x01 | (i == 1 ? 0x02 : 0) | (i == nseg ? 0x04 : 0);
		m[27] = 0;
		put_be32(m + 28, i);
		put_be32(m + 32, i == 1 ? data : 0);
		if (next_write(fd, seg, sizeof seg) < 0)
			return -1;
	}
	return count;
}

static ssize_t deliver(struct acc *a, void *buf, size_t count)
{
	if (count < a->len) {
		memcpy(buf, a->buf, count < UMAD_HDR ? count : UMAD_HDR);
		errno = ENOSPC;
		return -1;
	}
	memcpy(buf, a->buf, a->len);
	ssize_t n = a->len;
	free(a->buf);
	memset(a, 0, sizeof *a);
	return n;
}

ssize_t read(int fd, void *buf, size_t count)
{
	init();
	if (!umad_fd(fd))
		return next_read(fd, buf, count);
	struct acc *a = &accs[fd - FD_MIN];
	if (a->ready)
		return deliver(a, buf, count);
	for (;;) {
		uint8_t u[UMAD_HDR + MAD];
		ssize_t n = next_read(fd, u, sizeof u);
		if (n <= UMAD_HDR) {
			if (!a->buf)
				return n;
			/* between segments: wait for the next (ibsim loses none) */
			struct pollfd p = { .fd = fd, .events = POLLIN };
			if (next_poll(&p, 1, 10000) <= 0) {
				free(a->buf);
				memset(a, 0, sizeof *a);
				errno = ETIMEDOUT;
				return -1;
			}
			continue;
		}
		uint8_t *m = u + UMAD_HDR;
		int first = m[26] & 0x02, last = m[26] & 0x04;
		if (!sa_rmpp(m) || m[25] != 1 || (!a->buf && (!first || last))) {
			size_t c = (size_t)n < count ? (size_t)n : count;
			memcpy(buf, u, c);
			return c;
		}
		uint32_t segnum = be32(m + 28);
		if (first) {
			free(a->buf);
			memset(a, 0, sizeof *a);
			a->want = UMAD_HDR + SA_HDR + (size_t)be32(m + 32);
			a->buf = malloc(a->want);
			if (!a->buf) {
				errno = ENOMEM;
				return -1;
			}
			memcpy(a->buf, u, UMAD_HDR + SA_HDR);
			a->len = UMAD_HDR + SA_HDR;
			a->next = 1;
		}
		if (!a->buf || segnum != a->next) {
			free(a->buf);
			memset(a, 0, sizeof *a);
			errno = EIO;
			return -1;
		}
		size_t c = a->want - a->len < SEG_DATA ? a->want - a->len : SEG_DATA;
		memcpy(a->buf + a->len, u + UMAD_HDR + SA_HDR, c);
		a->len += c;
		a->next++;
		if (!last)
			continue;
		if (a->len != a->want) {
			free(a->buf);
			memset(a, 0, sizeof *a);
			errno = EIO;
			return -1;
		}
		uint32_t length = a->len; /* struct ib_user_mad.length, host order */
		memcpy(a->buf + 16, &length, sizeof length);
		a->ready = 1;
		return deliver(a, buf, count);
	}
}

int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	init();
	for (nfds_t i = 0; i < nfds; i++) {
		if (umad_fd(fds[i].fd) && accs[fds[i].fd - FD_MIN].ready) {
			for (nfds_t j = 0; j < nfds; j++)
				fds[j].revents = 0;
			fds[i].revents = POLLIN;
			return 1;
		}
	}
	return next_poll(fds, nfds, timeout);
}
