/*
 * test_run_filter.c: CMD's seccomp program (run_filter_build) run on
 * made-up calls by a classic-BPF interpreter of the instructions it uses
 * (anything else fails the test): every path of its jump table, the
 * 32-bit one included, which a machine without 32-bit emulation cannot
 * try for real (tests/integ/test_run_doors.sh and test_run_fs.sh do where
 * it can).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "../../cli/run.h"

#if defined(__x86_64__)

#define ALLOW SECCOMP_RET_ALLOW
#define ERR(e) (SECCOMP_RET_ERRNO | (e))

/* The program's verdict on one call; fails the test on an instruction it does not know. */
static uint32_t run(uint32_t arch, int nr, uint64_t a0, uint64_t a1, uint64_t a2)
{
	struct sock_filter f[RUN_FILTER_MAX];
	struct seccomp_data d = { .nr = nr, .arch = arch, .args = { a0, a1, a2 } };
	size_t len = run_filter_build(f), pc = 0;
	uint32_t acc = 0;

	assert_true(len > 0 && len <= RUN_FILTER_MAX);
	for (size_t steps = 0; steps < len; steps++) {
		const struct sock_filter *i;

		assert_true(pc < len);
		i = &f[pc];
		switch (i->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			assert_true(i->k % 4 == 0 && i->k + 4 <= sizeof(d));
			memcpy(&acc, (const char *)&d + i->k, 4);
			pc++;
			break;
		case BPF_JMP | BPF_JEQ | BPF_K:
			pc += 1 + (acc == i->k ? i->jt : i->jf);
			break;
		case BPF_JMP | BPF_JGE | BPF_K:
			pc += 1 + (acc >= i->k ? i->jt : i->jf);
			break;
		case BPF_RET | BPF_K:
			return i->k;
		default:
			fail_msg("instruction %zu: code %#x not interpreted", pc, i->code);
		}
	}
	fail_msg("the program runs past its end");
	return 0;
}

static uint32_t native(int nr, uint64_t a0, uint64_t a1, uint64_t a2)
{
	return run(AUDIT_ARCH_X86_64, nr, a0, a1, a2);
}

static uint32_t i386(int nr, uint64_t a0, uint64_t a1, uint64_t a2)
{
	return run(AUDIT_ARCH_I386, nr, a0, a1, a2);
}

static void test_families(void **state)
{
	static const int allowed[] = { AF_UNIX, AF_INET, AF_INET6 };
	static const int refused[] = { AF_VSOCK, AF_PACKET, AF_ALG, AF_BLUETOOTH, AF_XDP, AF_KEY, AF_CAN,
				       AF_TIPC, AF_RDS, AF_SMC, AF_UNSPEC, 255, -1 };

	(void)state;
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
		assert_int_equal(native(SYS_socket, allowed[i], SOCK_STREAM, 0), ALLOW);
		assert_int_equal(native(SYS_socketpair, allowed[i], SOCK_STREAM, 0), ALLOW);
		assert_int_equal(i386(359, allowed[i], SOCK_STREAM, 0), ALLOW);
		assert_int_equal(i386(360, allowed[i], SOCK_STREAM, 0), ALLOW);
		/* the kernel reads an int: high bits do not change the family, nor the verdict */
		assert_int_equal(native(SYS_socket, 0xffffffff00000000ULL | (unsigned)allowed[i], 1, 0), ALLOW);
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		uint64_t fam = (uint32_t)refused[i];

		assert_int_equal(native(SYS_socket, fam, SOCK_STREAM, 0), ERR(EAFNOSUPPORT));
		assert_int_equal(native(SYS_socketpair, fam, SOCK_STREAM, 0), ERR(EAFNOSUPPORT));
		assert_int_equal(i386(359, fam, SOCK_STREAM, 0), ERR(EAFNOSUPPORT));
		assert_int_equal(i386(360, fam, SOCK_STREAM, 0), ERR(EAFNOSUPPORT));
		assert_int_equal(native(SYS_socket, fam | 0x100000000ULL, SOCK_STREAM, 0), ERR(EAFNOSUPPORT));
	}
	/* a family in the high half only: the kernel sees AF_VSOCK's low bits */
	assert_int_equal(native(SYS_socket, ((uint64_t)AF_UNIX << 32) | AF_VSOCK, 1, 0), ERR(EAFNOSUPPORT));
}

static void test_netlink(void **state)
{
	static const int refused[] = { NETLINK_GENERIC, NETLINK_KOBJECT_UEVENT, NETLINK_AUDIT, NETLINK_NETFILTER,
				       NETLINK_XFRM, NETLINK_SOCK_DIAG, NETLINK_CONNECTOR, NETLINK_SELINUX, 31 };

	(void)state;
	assert_int_equal(native(SYS_socket, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE), ALLOW);
	assert_int_equal(i386(359, AF_NETLINK, SOCK_DGRAM, NETLINK_ROUTE), ALLOW);
	assert_int_equal(native(SYS_socket, AF_NETLINK, SOCK_RAW, 0xffffffff00000000ULL | NETLINK_ROUTE), ALLOW);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		assert_int_equal(native(SYS_socket, AF_NETLINK, SOCK_RAW, refused[i]), ERR(EPROTONOSUPPORT));
		assert_int_equal(i386(359, AF_NETLINK, SOCK_RAW, refused[i]), ERR(EPROTONOSUPPORT));
	}
}

static void test_socketcall32(void **state)
{
	(void)state;
	/* whatever it is asked (SYS_SOCKET 1, SYS_CONNECT 3...): the arguments are in memory */
	for (int call = 0; call <= 20; call++)
		assert_int_equal(i386(102, call, 0x10000, 0), ERR(ENOSYS));
	/* native 102 is getuid: untouched */
	assert_int_equal(native(102, 0, 0, 0), ALLOW);
}

/*
 * io_uring makes sockets without socket(2) (IORING_OP_SOCKET, any family):
 * its three calls are refused as from a kernel without it, on both paths
 * (the same numbers on x86_64 and i386).
 */
static void test_io_uring(void **state)
{
	(void)state;
	for (int nr = 425; nr <= 427; nr++) {
		assert_int_equal(native(nr, 0, 0, 0), ERR(ENOSYS));
		assert_int_equal(i386(nr, 0, 0, 0), ERR(ENOSYS));
	}
	assert_int_equal(native(SYS_io_uring_setup, 4, 0, 0), ERR(ENOSYS));
	assert_int_equal(native(SYS_io_uring_enter, 3, 1, 1), ERR(ENOSYS));
	assert_int_equal(native(SYS_io_uring_register, 3, 0, 0), ERR(ENOSYS));
	/* the neighbours are untouched: pidfd_send_signal (424), open_tree (428) */
	assert_int_equal(native(424, 0, 0, 0), ALLOW);
	assert_int_equal(native(428, 0, 0, 0), ALLOW);
	assert_int_equal(i386(424, 0, 0, 0), ALLOW);
	assert_int_equal(i386(428, 0, 0, 0), ALLOW);
}

static void test_rest_unchanged(void **state)
{
	(void)state;
	assert_int_equal(native(SYS_getpid, 0, 0, 0), ALLOW);
	assert_int_equal(native(SYS_connect, 3, 0, 0), ALLOW);
	assert_int_equal(native(SYS_ioctl, 0, FIONREAD, 0), ALLOW);
	assert_int_equal(native(SYS_ioctl, 0, TIOCSTI, 0), ERR(EPERM));
	assert_int_equal(native(SYS_ioctl, 0, 0x100000000ULL | TIOCSTI, 0), ERR(EPERM));
	assert_int_equal(native(SYS_ioctl, 0, TIOCLINUX, 0), ERR(EPERM));
	assert_int_equal(native(SYS_add_key, 0, 0, 0), ERR(EPERM));
	assert_int_equal(native(SYS_request_key, 0, 0, 0), ERR(EPERM));
	assert_int_equal(native(SYS_keyctl, 0, 0, 0), ERR(EPERM));
	assert_int_equal(native(0x40000000 | SYS_getpid, 0, 0, 0), ERR(EPERM));
	assert_int_equal(native(0x40000000 | SYS_socket, AF_UNIX, 1, 0), ERR(EPERM));
	assert_int_equal(i386(20, 0, 0, 0), ALLOW);
	assert_int_equal(i386(54, 0, TIOCSTI, 0), ERR(EPERM));
	assert_int_equal(i386(54, 0, FIONREAD, 0), ALLOW);
	assert_int_equal(i386(286, 0, 0, 0), ERR(EPERM));
	assert_int_equal(i386(288, 0, 0, 0), ERR(EPERM));
	assert_int_equal(run(AUDIT_ARCH_AARCH64, SYS_getpid, 0, 0, 0), ERR(EPERM));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_families),
		cmocka_unit_test(test_netlink),
		cmocka_unit_test(test_socketcall32),
		cmocka_unit_test(test_io_uring),
		cmocka_unit_test(test_rest_unchanged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

#else

int main(void)
{
	return 0; /* the made-up calls are x86_64's and i386's */
}

#endif
