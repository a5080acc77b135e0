/*
 * sockdiag.c: NETLINK_SOCK_DIAG requests and their replies.
 *
 * Replies are read through a bounds-checked cursor over one receive
 * buffer, not through the NLMSG_* pointer macros. A reply that does not
 * carry the question's sequence number (one left over from a question
 * that timed out) is skipped. A dump is always read to its end, so the
 * next question starts on an empty socket. Only TCP, only IPv4 and IPv6.
 */
#include "sockdiag.h"

#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define REPLY_MAX 32768 /* the kernel fills at most 32 KiB per dump datagram */
#define ALIGN4(n) (((size_t)(n) + 3u) & ~(size_t)3u)
#define ANSWER_TIMEOUT_S 1

typedef void (*reply_fn)(const struct inet_diag_msg *m, const unsigned char *attrs,
			 size_t alen, void *arg);

static uint32_t seq_last;
static union {
	struct nlmsghdr align;
	unsigned char b[REPLY_MAX];
} rbuf;

int sockdiag_open(void)
{
	struct timeval tv = { .tv_sec = ANSWER_TIMEOUT_S };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);

	if (fd == -1)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == -1) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Send one inet_diag_req_v2; *seq names its replies. Returns 0 or -1. */
static int ask(int nl, const struct inet_diag_req_v2 *r, bool dump, uint32_t *seq)
{
	struct {
		struct nlmsghdr h;
		struct inet_diag_req_v2 r;
	} req;
	ssize_t n;

	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = sizeof(req);
	req.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.h.nlmsg_flags = NLM_F_REQUEST | (dump ? NLM_F_DUMP : 0);
	req.h.nlmsg_seq = *seq = ++seq_last;
	req.r = *r;
	do
		n = send(nl, &req, sizeof(req), 0);
	while (n == -1 && errno == EINTR);
	if (n == -1)
		return -1;
	if ((size_t)n != sizeof(req)) {
		errno = EIO;
		return -1;
	}
	return 0;
}

/*
 * Read the replies to seq, calling fn for each socket: until NLMSG_DONE
 * for a dump, until the one answer otherwise. Returns 0, or -1 with errno
 * (the kernel's error, EAGAIN when it did not answer in time, EPROTO for
 * a malformed reply, EMSGSIZE for one larger than the buffer).
 */
static int read_replies(int nl, uint32_t seq, bool dump, reply_fn fn, void *arg)
{
	for (;;) {
		ssize_t n = recv(nl, rbuf.b, sizeof(rbuf.b), MSG_TRUNC);
		size_t off = 0, len;

		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return -1;
		if ((size_t)n > sizeof(rbuf.b)) {
			errno = EMSGSIZE;
			return -1;
		}
		len = (size_t)n;
		while (len - off >= sizeof(struct nlmsghdr)) {
			const unsigned char *p = rbuf.b + off + sizeof(struct nlmsghdr);
			struct nlmsghdr h;
			size_t plen;

			memcpy(&h, rbuf.b + off, sizeof(h));
			if (h.nlmsg_len < sizeof(h) || h.nlmsg_len > len - off) {
				errno = EPROTO;
				return -1;
			}
			plen = h.nlmsg_len - sizeof(h);
			off += ALIGN4(h.nlmsg_len) < len - off ? ALIGN4(h.nlmsg_len) : len - off;
			if (h.nlmsg_seq != seq)
				continue;
			if (h.nlmsg_type == NLMSG_DONE)
				return 0;
			if (h.nlmsg_type == NLMSG_ERROR) {
				int32_t err;

				if (plen < sizeof(err)) {
					errno = EPROTO;
					return -1;
				}
				memcpy(&err, p, sizeof(err));
				if (err == 0) /* an acknowledgement */
					continue;
				errno = -err;
				return -1;
			}
			if (h.nlmsg_type != SOCK_DIAG_BY_FAMILY ||
			    plen < sizeof(struct inet_diag_msg))
				continue;
			{
				struct inet_diag_msg m;
				size_t a = ALIGN4(sizeof(m));

				memcpy(&m, p, sizeof(m));
				fn(&m, p + a, plen > a ? plen - a : 0, arg);
			}
			if (!dump)
				return 0;
		}
	}
}

/* The address bytes and port of ss (AF_INET or AF_INET6); false for another family. */
static bool addr_parts(const struct sockaddr_storage *ss, const void **addr, size_t *alen,
		       uint16_t *port_be)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;

		*addr = &in->sin_addr;
		*alen = sizeof(in->sin_addr);
		*port_be = in->sin_port;
		return true;
	}
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)ss;

		*addr = &in6->sin6_addr;
		*alen = sizeof(in6->sin6_addr);
		*port_be = in6->sin6_port;
		return true;
	}
	return false;
}

struct listener_query {
	const struct sockaddr_storage *addr;
	bool found;
};

static void match_listener(const struct inet_diag_msg *m, const unsigned char *attrs,
			   size_t alen, void *arg)
{
	static const unsigned char zero[16];
	struct listener_query *q = arg;
	const void *want;
	size_t wlen;
	uint16_t port;

	if (!addr_parts(q->addr, &want, &wlen, &port) || m->idiag_family != q->addr->ss_family ||
	    m->idiag_state != TCP_LISTEN || m->id.idiag_sport != port)
		return;
	if (memcmp(m->id.idiag_src, want, wlen) == 0 || memcmp(m->id.idiag_src, zero, wlen) == 0)
		q->found = true;
}

int sockdiag_find_listener(int nl, const struct sockaddr_storage *addr, bool *found)
{
	struct listener_query q = { .addr = addr, .found = false };
	struct inet_diag_req_v2 r;
	uint32_t seq;

	if (addr->ss_family != AF_INET && addr->ss_family != AF_INET6) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	memset(&r, 0, sizeof(r));
	r.sdiag_family = (uint8_t)addr->ss_family;
	r.sdiag_protocol = IPPROTO_TCP;
	r.idiag_states = 1u << TCP_LISTEN;
	if (ask(nl, &r, true, &seq) == -1 || read_replies(nl, seq, true, match_listener, &q) == -1)
		return -1;
	*found = q.found;
	return 0;
}

struct cgroup_query {
	bool answered;
	bool have_id;
	uint64_t id;
};

static void read_cgroup(const struct inet_diag_msg *m, const unsigned char *attrs, size_t alen,
			void *arg)
{
	struct cgroup_query *q = arg;
	size_t off = 0;

	q->answered = true;
	while (alen - off >= sizeof(struct nlattr)) {
		struct nlattr a;

		memcpy(&a, attrs + off, sizeof(a));
		if (a.nla_len < sizeof(a) || a.nla_len > alen - off)
			return;
		if ((a.nla_type & NLA_TYPE_MASK) == INET_DIAG_CGROUP_ID &&
		    a.nla_len >= sizeof(a) + sizeof(q->id)) {
			memcpy(&q->id, attrs + off + sizeof(a), sizeof(q->id));
			q->have_id = true;
		}
		off += ALIGN4(a.nla_len) < alen - off ? ALIGN4(a.nla_len) : alen - off;
	}
}

int sockdiag_cgroup_id(int nl, const struct sockaddr_storage *src,
		       const struct sockaddr_storage *dst, uint64_t *id)
{
	struct cgroup_query q = { .answered = false };
	struct inet_diag_req_v2 r;
	const void *sa, *da;
	size_t sl, dl;
	uint16_t sp, dp;
	uint32_t seq;

	if (!addr_parts(src, &sa, &sl, &sp) || !addr_parts(dst, &da, &dl, &dp) || sl != dl) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	memset(&r, 0, sizeof(r));
	r.sdiag_family = (uint8_t)src->ss_family;
	r.sdiag_protocol = IPPROTO_TCP;
	r.idiag_states = ~0u;
	r.id.idiag_sport = sp;
	r.id.idiag_dport = dp;
	memcpy(r.id.idiag_src, sa, sl);
	memcpy(r.id.idiag_dst, da, dl);
	r.id.idiag_cookie[0] = r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	if (ask(nl, &r, false, &seq) == -1 || read_replies(nl, seq, false, read_cgroup, &q) == -1)
		return -1;
	if (!q.answered) {
		errno = ENOENT;
		return -1;
	}
	if (!q.have_id) {
		errno = ENODATA;
		return -1;
	}
	*id = q.id;
	return 0;
}
