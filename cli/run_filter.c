/*
 * run_filter.c: CMD's seccomp filter (run.h's run_filter_build and
 * run_filter_install), for the sandbox's init and all it starts. A pure
 * function writes the program (so a unit test can run it on made-up
 * calls); installing it is one prctl. It does not decide who gets it
 * (run_init.c does, after the drop to the sandbox user).
 *
 * It refuses:
 *
 * - TIOCSTI and TIOCLINUX (EPERM). CMD shares the operator's terminal (so
 *   that ^C reaches it); TIOCSTI on it pushes input that the operator's
 *   shell, root's, reads once the run ends, and TIOCLINUX on a console
 *   pastes a selection there. The request is the kernel's unsigned int, so
 *   only the argument's low 32 bits are looked at (high bits set would not
 *   get past).
 * - The key calls (add_key, request_key, keyctl; EPERM). Keyrings are no
 *   namespace's: CMD possesses the operator's session keyring, and the
 *   sandbox user's own is the same for every project's runs.
 * - socket and socketpair of a family other than AF_UNIX, AF_INET,
 *   AF_INET6 (EAFNOSUPPORT, as from a kernel without it: AF_VSOCK is a
 *   VM's channel to its host, AF_PACKET, AF_ALG, AF_XDP and the rest are
 *   reach or kernel surface CMD has no use for), and of AF_NETLINK with a
 *   protocol other than NETLINK_ROUTE (EPROTONOSUPPORT; NETLINK_ROUTE is
 *   how ip, getifaddrs and getaddrinfo read the run's addresses). Family
 *   and protocol are ints: their low 32 bits are looked at.
 * - The 32-bit socketcall (ENOSYS, as from a kernel without it): its
 *   arguments are in memory, where a filter cannot read the family. The
 *   32-bit socket and socketpair calls are filtered like the native ones.
 * - io_uring_setup, io_uring_enter and io_uring_register (ENOSYS, as from a
 *   kernel without io_uring, which programs fall back from): a ring's
 *   IORING_OP_SOCKET makes a socket of any family without socket(2), its
 *   arguments in shared memory a filter cannot read (and the ring's other
 *   operations are calls this filter would never see).
 *
 * Other ways to a socket were looked at and need nothing here: accept and
 * accept4 give one of the listener's family; a socket received over
 * SCM_RIGHTS or taken by pidfd_getfd was made by a process of the run
 * (under this filter) or handed in by one outside that CMD reaches only
 * through what the run allows; /proc/PID/fd/N of a socket does not open
 * (ENXIO); open_by_handle_at and setns into another network namespace need
 * capabilities in the machine's user namespace; the filter is inherited
 * by every child and survives exec and unshare; socketcall does not exist
 * natively on x86_64 or aarch64. Stdio is the operator's: a socket there
 * is the operator's choice.
 *
 * 32-bit calls are filtered the same otherwise (their own numbers); x32's
 * and other architectures' are refused (EPERM).
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "run.h"

#if defined(__x86_64__)
#define RUN_ARCH AUDIT_ARCH_X86_64
#define RUN_ARCH32 AUDIT_ARCH_I386
#define RUN_IOCTL32 54
#define RUN_KEYS32 286       /* add_key; request_key and keyctl follow */
#define RUN_SOCKETCALL32 102
#define RUN_SOCKET32 359
#define RUN_SOCKETPAIR32 360
#define RUN_URING32 425      /* io_uring_setup; io_uring_enter and io_uring_register follow */
#elif defined(__aarch64__)
#define RUN_ARCH AUDIT_ARCH_AARCH64
#define RUN_ARCH32 AUDIT_ARCH_ARM
#define RUN_IOCTL32 54
#define RUN_KEYS32 309
#define RUN_SOCKETCALL32 102 /* OABI's only: an EABI kernel has none, refusing it costs nothing */
#define RUN_SOCKET32 281
#define RUN_SOCKETPAIR32 288
#define RUN_URING32 425
#endif
#define RUN_X32_BIT 0x40000000
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define RUN_LOW 4
#else
#define RUN_LOW 0
#endif
#define ARG_LOW(n) (offsetof(struct seccomp_data, args[n]) + RUN_LOW)
#define LD(what) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (what))
#define RET(what) BPF_STMT(BPF_RET | BPF_K, (what))
/* at instruction at, go to instruction to when equal to k (when ge: at least k), else on */
#define IF_EQ(at, k, to) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (to) - (at) - 1, 0)
#define IF_GE(at, k, to) BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (k), (to) - (at) - 1, 0)

size_t run_filter_build(struct sock_filter *out)
{
#ifdef RUN_ARCH
	enum {
		ARCH, IS64, IS32, OTHER,
		NR, X32, IOCTL, SOCK, PAIR, ADD, REQ, CTL, URING, URING_ENTER, URING_REG, ALLOW,
		NR32, IOCTL32, SOCK32, PAIR32, CALL32, ADD32, REQ32, CTL32, URING32, URING_ENTER32, URING_REG32,
		ALLOW32,
		ARG, STI, LINUX, ALLOW_IOCTL,
		FAMILY, UNIX, INET, INET6, NETLINK, NO_FAMILY,
		PROTO, ROUTE, NO_PROTO, ALLOW_SOCKET,
		NOSYS, DENY, LEN
	};
	const struct sock_filter f[LEN] = {
		[ARCH] = LD(offsetof(struct seccomp_data, arch)),
		[IS64] = IF_EQ(IS64, RUN_ARCH, NR),
		[IS32] = IF_EQ(IS32, RUN_ARCH32, NR32),
		[OTHER] = RET(SECCOMP_RET_ERRNO | EPERM),

		[NR] = LD(offsetof(struct seccomp_data, nr)),
		[X32] = IF_GE(X32, RUN_X32_BIT, DENY),
		[IOCTL] = IF_EQ(IOCTL, __NR_ioctl, ARG),
		[SOCK] = IF_EQ(SOCK, __NR_socket, FAMILY),
		[PAIR] = IF_EQ(PAIR, __NR_socketpair, FAMILY),
		[ADD] = IF_EQ(ADD, __NR_add_key, DENY),
		[REQ] = IF_EQ(REQ, __NR_request_key, DENY),
		[CTL] = IF_EQ(CTL, __NR_keyctl, DENY),
		[URING] = IF_EQ(URING, __NR_io_uring_setup, NOSYS),
		[URING_ENTER] = IF_EQ(URING_ENTER, __NR_io_uring_enter, NOSYS),
		[URING_REG] = IF_EQ(URING_REG, __NR_io_uring_register, NOSYS),
		[ALLOW] = RET(SECCOMP_RET_ALLOW),

		[NR32] = LD(offsetof(struct seccomp_data, nr)),
		[IOCTL32] = IF_EQ(IOCTL32, RUN_IOCTL32, ARG),
		[SOCK32] = IF_EQ(SOCK32, RUN_SOCKET32, FAMILY),
		[PAIR32] = IF_EQ(PAIR32, RUN_SOCKETPAIR32, FAMILY),
		[CALL32] = IF_EQ(CALL32, RUN_SOCKETCALL32, NOSYS),
		[ADD32] = IF_EQ(ADD32, RUN_KEYS32, DENY),
		[REQ32] = IF_EQ(REQ32, RUN_KEYS32 + 1, DENY),
		[CTL32] = IF_EQ(CTL32, RUN_KEYS32 + 2, DENY),
		[URING32] = IF_EQ(URING32, RUN_URING32, NOSYS),
		[URING_ENTER32] = IF_EQ(URING_ENTER32, RUN_URING32 + 1, NOSYS),
		[URING_REG32] = IF_EQ(URING_REG32, RUN_URING32 + 2, NOSYS),
		[ALLOW32] = RET(SECCOMP_RET_ALLOW),

		[ARG] = LD(ARG_LOW(1)),
		[STI] = IF_EQ(STI, TIOCSTI, DENY),
		[LINUX] = IF_EQ(LINUX, TIOCLINUX, DENY),
		[ALLOW_IOCTL] = RET(SECCOMP_RET_ALLOW),

		[FAMILY] = LD(ARG_LOW(0)),
		[UNIX] = IF_EQ(UNIX, AF_UNIX, ALLOW_SOCKET),
		[INET] = IF_EQ(INET, AF_INET, ALLOW_SOCKET),
		[INET6] = IF_EQ(INET6, AF_INET6, ALLOW_SOCKET),
		[NETLINK] = IF_EQ(NETLINK, AF_NETLINK, PROTO),
		[NO_FAMILY] = RET(SECCOMP_RET_ERRNO | EAFNOSUPPORT),

		[PROTO] = LD(ARG_LOW(2)),
		[ROUTE] = IF_EQ(ROUTE, NETLINK_ROUTE, ALLOW_SOCKET),
		[NO_PROTO] = RET(SECCOMP_RET_ERRNO | EPROTONOSUPPORT),
		[ALLOW_SOCKET] = RET(SECCOMP_RET_ALLOW),

		[NOSYS] = RET(SECCOMP_RET_ERRNO | ENOSYS),
		[DENY] = RET(SECCOMP_RET_ERRNO | EPERM),
	};

	_Static_assert(LEN <= RUN_FILTER_MAX, "RUN_FILTER_MAX too small");
	memcpy(out, f, sizeof(f));
	return LEN;
#else
	(void)out;
	return 0;
#endif
}

int run_filter_install(void)
{
	struct sock_filter f[RUN_FILTER_MAX];
	struct sock_fprog prog = { .len = (unsigned short)run_filter_build(f), .filter = f };

	if (prog.len == 0) {
		fprintf(stderr, "run: no seccomp filter for this architecture; CMD not started\n");
		return -1;
	}
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == 0)
		return 0;
	fprintf(stderr, "run: the seccomp filter: %s\n", strerror(errno));
	return -1;
}
