/*
 * wait.c: `sluice-forward --wait NETNS_PATH ADDR:PORT [--timeout SECONDS]`,
 * waiting until something listens on ADDR:PORT inside a network namespace.
 *
 * Meant as an OCI prestart hook (a container starts only once the
 * forwarder listens at its gateway) or a script's readiness check. Every
 * 20 ms it asks the kernel's socket table (sockdiag.c) of the namespace at
 * NETNS_PATH for a TCP listener on ADDR:PORT, or on the wildcard address
 * of ADDR's family and PORT. It never connects, so it is invisible to the
 * listener. NETNS_PATH may not exist yet, or be deleted and re-created
 * while it waits: the namespace is re-entered whenever the file there
 * changes. The hook's state JSON on stdin is read away when it is a pipe,
 * never waited for. Needs CAP_SYS_ADMIN (setns).
 */
#include "forward.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sockaddr.h"
#include "sockdiag.h"

#define WAIT_POLL_MS 20
#define WAIT_DEFAULT_S 10
#define WAIT_MAX_S 120
#define STDIN_MAX (1024 * 1024) /* read away at most this much of the hook's state */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Read whatever a pipe on stdin holds without ever blocking (the OCI state). */
static void drain_stdin(size_t *taken)
{
	static bool is_pipe = true;
	struct stat st;
	char buf[4096];

	if (!is_pipe || *taken >= STDIN_MAX)
		return;
	if (fstat(0, &st) == -1 || !S_ISFIFO(st.st_mode)) {
		is_pipe = false;
		return;
	}
	for (;;) {
		struct pollfd p = { .fd = 0, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 0) != 1 || !(p.revents & POLLIN))
			return;
		n = read(0, buf, sizeof(buf));
		if (n <= 0) {
			is_pipe = false; /* EOF: nothing more will come */
			return;
		}
		*taken += (size_t)n;
		if (*taken >= STDIN_MAX)
			return;
	}
}

/*
 * Enter the namespace at path when the file there is not the one entered
 * last (*dev, *ino), and open a sock_diag socket in it (*nl). A missing
 * path closes *nl: nothing listens in a namespace that is gone.
 */
static void follow_path(const char *path, int *nl, dev_t *dev, ino_t *ino)
{
	struct stat st;
	int fd;

	if (stat(path, &st) == -1) {
		if (*nl != -1)
			close(*nl);
		*nl = -1;
		return;
	}
	if (*nl != -1 && st.st_dev == *dev && st.st_ino == *ino)
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return;
	/* a file `ip netns add` has created but not yet mounted a namespace on */
	if (ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWNET || fstat(fd, &st) == -1 ||
	    setns(fd, CLONE_NEWNET) == -1) {
		close(fd);
		return;
	}
	close(fd);
	if (*nl != -1)
		close(*nl);
	*nl = sockdiag_open();
	*dev = st.st_dev;
	*ino = st.st_ino;
}

static int wait_usage(void)
{
	fprintf(stderr, "usage: sluice-forward --wait NETNS_PATH ADDR:PORT [--timeout SECONDS]\n");
	return 2;
}

int wait_main(int argc, char **argv)
{
	const char *path = NULL, *addr_s = NULL, *err_text = "no listener";
	struct sockaddr_storage addr;
	double timeout = WAIT_DEFAULT_S, deadline;
	size_t taken = 0;
	dev_t dev = 0;
	ino_t ino = 0;
	int nl = -1, ret = 1;

	for (int i = 1; i < argc; i++) {
		const char *t = NULL;
		char *end;

		if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc)
			t = argv[++i];
		else if (strncmp(argv[i], "--timeout=", 10) == 0)
			t = argv[i] + 10;
		else if (argv[i][0] == '-')
			return wait_usage();
		else if (path == NULL)
			path = argv[i];
		else if (addr_s == NULL)
			addr_s = argv[i];
		else
			return wait_usage();
		if (t != NULL) {
			errno = 0;
			timeout = strtod(t, &end);
			if (errno != 0 || end == t || *end != '\0' || !isfinite(timeout) ||
			    timeout <= 0 || timeout > WAIT_MAX_S)
				return wait_usage();
		}
	}
	if (path == NULL || addr_s == NULL || sockaddr_parse(addr_s, 0, 0, &addr) == -1)
		return wait_usage();

	deadline = now_s() + timeout;
	for (;;) {
		bool found = false;

		drain_stdin(&taken);
		follow_path(path, &nl, &dev, &ino);
		if (nl == -1) {
			err_text = "no network namespace there";
		} else if (sockdiag_find_listener(nl, &addr, &found) == -1) {
			err_text = strerror(errno);
		} else if (found) {
			ret = 0;
			break;
		} else {
			err_text = "nothing listens there";
		}
		if (now_s() >= deadline)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = WAIT_POLL_MS * 1000000L }, NULL);
	}
	if (ret != 0)
		fprintf(stderr, "sluice-forward: wait %s in %s: %s after %g s\n", addr_s, path,
			err_text, timeout);
	if (nl != -1)
		close(nl);
	return ret;
}
