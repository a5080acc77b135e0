/*
 * load.h: the load generator's table of contents (bench/load.c and its
 * parts): the run's state, one client slot's connection machine, the
 * response being read, and the functions one part calls in another.
 *
 * Private to the load program; not for the other benches (bench.h holds
 * what they share). Functions are named for the part they live in:
 * load_* in load.c, slot_* in load_slot.c, resp_* in load_resp.c; what each
 * accepts and returns is said where it is defined.
 */
#ifndef SLUICE_BENCH_LOAD_H
#define SLUICE_BENCH_LOAD_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <openssl/ssl.h>

#define LOAD_HEAD_MAX 8192              /* response head ceiling */
#define LOAD_REQ_MAX 1024               /* a request head we send */

enum mode {
	MODE_CONNECT,
	MODE_KEEPALIVE,
	MODE_THROUGHPUT,
};

enum slot_state {
	SLOT_IDLE,         /* no connection */
	SLOT_CONNECTING,   /* TCP handshake in flight */
	SLOT_SEND_CONNECT, /* writing the CONNECT head */
	SLOT_READ_CONNECT, /* reading the proxy's reply to CONNECT */
	SLOT_TLS_HANDSHAKE, /* TLS modes: the client handshake in flight */
	SLOT_SEND_REQUEST, /* writing the GET head */
	SLOT_READ_HEAD,    /* reading the response head */
	SLOT_READ_BODY,    /* reading the response body */
};

enum body_kind {
	BODY_NONE,
	BODY_LENGTH,      /* resp.left bytes to go */
	BODY_CHUNKED,     /* resp.chunk tracks the framing */
	BODY_UNTIL_CLOSE, /* no framing: the body ends at EOF */
};

enum chunk_state {
	CHUNK_SIZE,         /* hex digits of a chunk size */
	CHUNK_EXT,          /* chunk extension, skipped up to CR */
	CHUNK_SIZE_LF,      /* LF ending the size line */
	CHUNK_DATA,         /* resp.left data bytes to go */
	CHUNK_DATA_CR,      /* CRLF after the data */
	CHUNK_DATA_LF,
	CHUNK_TRAILER,      /* start of a trailer line or of the final CRLF */
	CHUNK_TRAILER_LINE, /* inside a trailer line, skipped up to LF */
	CHUNK_END_LF,       /* LF of the final CRLF */
	CHUNK_DONE,
};

/* What is known of the response being read; reset per response. */
struct resp {
	char head[LOAD_HEAD_MAX];
	size_t headlen;          /* bytes in head; the exact head once complete */
	int status;              /* 100..999 once the head is parsed */
	bool http10;
	bool close;              /* the connection ends after this response */
	bool has_length;
	bool chunked;
	enum body_kind body;
	uint64_t left;           /* BODY_LENGTH and CHUNK_DATA: bytes to go */
	enum chunk_state chunk;
	bool chunk_digits;       /* CHUNK_SIZE: at least one hex digit seen */
};

struct slot {
	int fd;                  /* -1 when SLOT_IDLE */
	SSL *ssl;                /* TLS modes, once the handshake began; owned */
	enum slot_state state;
	const char *out;         /* head being written: not owned */
	size_t outlen;
	size_t outoff;           /* bytes of out already written */
	uint64_t op_start;       /* ns, monotonic */
	uint64_t deadline;       /* ns; pushed back by every byte received */
	bool reused;             /* the connection already carried a response */
	struct resp resp;
};

struct load {
	enum mode mode;
	bool via_proxy;
	SSL_CTX *tls;                /* TLS modes only; owned */
	const char *sni;             /* TLS: the name verified (and sent if not an IP) */
	bool sni_is_ip;
	struct sockaddr_in dial;     /* the proxy with --proxy, else the target */
	char connect_req[LOAD_REQ_MAX];
	size_t connect_len;
	char get_req[LOAD_REQ_MAX];
	size_t get_len;
	int ep;
	struct slot *slots;          /* nslots of them; owned */
	int nslots;
	uint64_t max_ops;
	uint64_t started;            /* operations begun */
	uint64_t done;               /* operations completed without error */
	uint64_t errors;
	uint64_t retries;            /* requests resent on a fresh connection */
	uint64_t bytes;              /* response body bytes received */
	uint64_t end;                /* ns: no operation starts after this */
	uint64_t op_timeout;         /* ns without progress before an error */
	uint32_t *lat;               /* µs per completed operation; owned */
	size_t nlat;
	size_t latcap;
};

/* load.c: the run */
bool load_may_start(const struct load *l, uint64_t now);

/* load_slot.c: one client connection, event-driven, and its TLS step */
void slot_start(struct load *l, struct slot *s, uint64_t now);
void slot_drive(struct load *l, struct slot *s, uint32_t events);
int slot_fail(struct load *l, struct slot *s, const char *what, int err);
void slot_close(struct slot *s);

/* load_resp.c: response framing, no I/O */
void resp_reset(struct resp *r);
ssize_t resp_head_feed(struct resp *r, const char *p, size_t n);
void resp_frame_body(struct resp *r);
ssize_t resp_chunk_feed(struct resp *r, const char *p, size_t n, uint64_t *data);

#endif
