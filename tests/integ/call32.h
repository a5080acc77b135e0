/*
 * call32.h: a 32-bit system call by int $0x80, made in a child, for the C
 * programs the run tests compile (test_run_fs, test_run_doors): a kernel
 * without IA32 emulation kills the caller, so each call's own child reports
 * "NAME ok", "NAME ERRNO" or "NAME signal N" on stdout.
 */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static long i386_call(long nr, long a, long b, long c)
{
	long r;
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(nr), "b"(a), "c"(b), "d"(c) : "memory");
	return r;
}

static void call32(const char *name, long nr, long a, long b, long c)
{
	int st;
	pid_t p;

	fflush(stdout);
	p = fork();
	if (p == 0) {
		long r = i386_call(nr, a, b, c);
		_exit(r < 0 && r > -4096 ? (int)-r : 0);
	}
	waitpid(p, &st, 0);
	if (WIFSIGNALED(st))
		printf("%s signal %d\n", name, WTERMSIG(st));
	else if (WEXITSTATUS(st) == 0)
		printf("%s ok\n", name);
	else
		printf("%s %d\n", name, WEXITSTATUS(st));
}
