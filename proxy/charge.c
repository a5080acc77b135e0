/*
 * charge.c: an exchange's charge against its grant's budget (budget.c
 * keeps the counts): a request counted and its head's bytes spent when it
 * is judged, its body's and a relay's bytes as they are taken from the
 * client, the 403 when they pass it (or, under a mode that refuses
 * nothing, the row saying they would have), and the count given back when
 * its row is written.
 */
#include "request.h"

#include <stdio.h>
#include <time.h>

/*
 * The grant g that allowed the request has a budget: the request counts
 * against the principal's, its head's bytes upstream (head_up, as
 * head_up_size has them) against max-up,
 * unless it is spent (or the head and its declared body would pass it): 403
 * budget, or in a mode that refuses nothing the row says it would have
 * been. Returns 0 go on, -1 refused.
 */
int budget_request(struct exchange *x, const struct http_request *req, uint64_t head_up,
		   const struct grant *g)
{
	struct session *s = x->conn;
	char who[SESSION_WHO_MAX], why[sizeof(((struct refusal *)0)->detail)];
	uint64_t body = req->body == HTTP_BODY_LENGTH ? req->content_length : 0;

	if (budget_take(s->px, g, session_spender(s, who, sizeof(who)),
			s->stamp != NULL ? s->stamp->net : NULL, head_up, body,
			&x->budget, why, sizeof(why)) == 0)
		return 0;
	if (policy_mode_at(s->px->policy, time(NULL)) != MODE_ENFORCE) {
		x->decision = "observe";
		x->reason = "budget";
		x->budget_observed = true;
		snprintf(x->detail, sizeof(x->detail), "would be refused: %s", why);
		return 0;
	}
	exchange_refusef(x, 403, "budget", "http_request_denied", "%s", why);
	return -1;
}

bool budget_over(struct exchange *x, uint64_t taken)
{
	struct session *s = x->conn;
	char why[sizeof(x->detail) - 32];
	uint64_t n;

	if (x->budget == NULL || taken <= x->budget_up)
		return false;
	n = taken - x->budget_up;
	x->budget_up = taken;
	if (budget_spend(x->budget, n))
		return false;
	if (policy_mode_at(s->px->policy, time(NULL)) == MODE_ENFORCE)
		return true;
	if (!x->budget_observed) {
		x->budget_observed = true;
		x->decision = "observe";
		x->reason = "budget";
		budget_line(x, why, sizeof(why));
		snprintf(x->detail, sizeof(x->detail), "would be refused: %s", why);
	}
	return false;
}

void budget_line(const struct exchange *x, char *out, size_t size)
{
	budget_words(x->budget, true, out, size);
}

void budget_refuse(struct exchange *x, const char *what)
{
	char why[sizeof(((struct refusal *)0)->detail)];

	budget_line(x, why, sizeof(why));
	exchange_refusef(x, 403, "budget", "http_request_denied", "%s: %s", why, what);
}

void budget_end(struct exchange *x)
{
	if (x == NULL)
		return;
	budget_put(x->budget);
	x->budget = NULL;
}

uint64_t budget_left(const struct exchange *x, uint64_t taken)
{
	uint64_t room, unspent;

	if (x->budget == NULL || x->budget_observed)
		return UINT64_MAX;
	room = budget_room(x->budget);
	if (room == UINT64_MAX)
		return UINT64_MAX;
	unspent = taken > x->budget_up ? taken - x->budget_up : 0;
	return room > unspent ? room - unspent : 0;
}

size_t budget_read_limit(const struct exchange *x, uint64_t taken, size_t limit)
{
	uint64_t left = budget_left(x, taken);

	if (left >= IOBUF_MAX)
		return limit;
	return limit == 0 || limit > left + 1 ? (size_t)left + 1 : limit;
}

/*
 * The budget is the principal's, shared with its other tunnels and
 * requests, and what a relay takes from the client is spent as it is taken
 * (bytes waiting in a pipe toward a stalled origin count): the cap is set
 * again before every pump, a byte past what is left. Past it under observe
 * or learn: the row says so, and nothing is held back. A CONNECT tunnel's
 * relay and a spliced WebSocket's alike.
 */
void budget_relay_cap(struct exchange *x, uint64_t taken)
{
	struct session *s = x->conn;
	uint64_t left;

	if (x->budget == NULL)
		return;
	left = budget_left(x, taken);
	s->tun->to_up.cap = left == UINT64_MAX ? UINT64_MAX : s->tun->to_up.taken + left + 1;
}

bool budget_relay_over(struct exchange *x, uint64_t taken)
{
	if (budget_over(x, taken))
		return true;
	budget_relay_cap(x, taken); /* observe lifts it now: a relay at its cap waits for nothing */
	return false;
}

bool budget_tunnel_over(struct exchange *x)
{
	char why[sizeof(x->detail)];

	if (!budget_relay_over(x, x->conn->tun->to_up.taken))
		return false;
	budget_line(x, why, sizeof(why));
	exchange_refusef(x, 0, "budget", NULL, "%s: the tunnel was closed", why); /* tunnel_codec */
	return true;
}
