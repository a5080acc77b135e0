# sluice: hand-written GNU Makefile.
#
#   make            build build/sluice-proxy, build/sluice-forward, build/sluice-dns,
#                   build/sluice
#   make check      unit + integration tests and a short fuzz run, all built
#                   with AddressSanitizer and UndefinedBehaviorSanitizer
#   make unit       unit tests only (sanitized)
#   make integ      integration tests only (sanitized; root, network namespaces)
#   make fuzz       every fuzz target for FUZZ_SECONDS each (clang libFuzzer)
#   make bench      the benchmark, side by side with tinyproxy, squid and mitmdump,
#                   and sluice-dns with unbound and dnsmasq
#   make deps       install the Debian packages in deps/debian-packages if missing
#   make run        deps, build, start sluice-dns and sluice-proxy on etc/sluice.conf
#                   (foreground; Ctrl-C stops both)
#   make test       deps, tools/test-deps (every module and program the tests use
#                   comes from deps/debian-packages), then check (the README's test command)
#
# V=1 shows commands. Warnings are errors.

BUILD    ?= build
CC       ?= cc
V        ?= 0
SAN      ?= 0
FUZZ_SECONDS ?= 60
CHECK_FUZZ_SECONDS ?= 15

Q := $(if $(filter 1,$(V)),,@)
say = $(if $(filter 1,$(V)),,@printf '  %-6s %s\n' $(1) $(2);)

PKG_LIB   := libidn2 libcap-ng
PKG_PROXY := libcares libidn2 libssl libcrypto libpsl zlib libcap-ng libnghttp2 libsystemd
PKG_CLI   := libidn2 jansson libcrypto libnftables libnetfilter_log libpsl libcap-ng
PKG_FWD   := libidn2 libcrypto libcap-ng
PKG_DNS   := libidn2 libssl libcrypto libpsl libcap-ng libsystemd
PKG_TEST  := cmocka

pkgcflags = $(shell pkg-config --cflags $(1) 2>/dev/null)
pkglibs   = $(shell pkg-config --libs $(1) 2>/dev/null)

WARN := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wstrict-prototypes \
	-Wmissing-prototypes -Wpointer-arith -Wvla -Wno-unused-parameter -Wno-format-truncation
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O2 -fno-strict-aliasing \
	-fstack-protector-strong -fPIE $(WARN) -Ilib
ifeq ($(SAN),1)
BASE_CFLAGS += -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer
SAN_LDFLAGS := -fsanitize=address,undefined
else
BASE_CFLAGS += -D_FORTIFY_SOURCE=2
endif
CFLAGS  ?=
LDFLAGS ?=
ALL_CFLAGS  = $(BASE_CFLAGS) $(call pkgcflags,$(PKG_PROXY) $(PKG_CLI) $(PKG_FWD)) $(CFLAGS)
ALL_LDFLAGS = -pie -Wl,-z,relro,-z,now $(SAN_LDFLAGS) $(LDFLAGS)

LIB_SRCS   := $(sort $(wildcard lib/*.c))
PROXY_SRCS := $(sort $(wildcard proxy/*.c))
CLI_SRCS   := $(sort $(wildcard cli/*.c))
FWD_SRCS   := $(sort $(wildcard forward/*.c))
DNS_SRCS   := $(sort $(wildcard dns/*.c))
UNIT_SRCS  := $(sort $(wildcard tests/unit/test_*.c))
FUZZ_SRCS  := $(sort $(wildcard tests/fuzz/fuzz_*.c))
# bench/load_*.c are parts of the load program, not programs of their own
LOAD_PARTS := $(sort $(wildcard bench/load_*.c))
BENCH_SRCS := $(filter-out $(LOAD_PARTS),$(sort $(wildcard bench/*.c)))

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
LIB_OBJS := $(call obj,$(LIB_SRCS))
LIB      := $(BUILD)/libsluice.a
PROXY    := $(BUILD)/sluice-proxy
CLI      := $(BUILD)/sluice
FWD      := $(BUILD)/sluice-forward
DNSD     := $(BUILD)/sluice-dns
UNITS    := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
BENCHES  := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))

.PHONY: all check unit integ fuzz fuzz-build bench bench-build deps run test clean
.DEFAULT_GOAL := all
.SECONDARY:

all: $(PROXY) $(FWD) $(DNSD) $(CLI)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(call say,CC,$<)
	$(Q)$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJS)
	$(call say,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(PROXY): $(call obj,$(PROXY_SRCS)) $(LIB)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkglibs,$(PKG_PROXY))

$(FWD): $(call obj,$(FWD_SRCS)) $(LIB)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkglibs,$(PKG_FWD))

$(DNSD): $(call obj,$(DNS_SRCS)) $(LIB)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkglibs,$(PKG_DNS))

$(CLI): $(call obj,$(CLI_SRCS)) $(LIB)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkglibs,$(PKG_CLI))

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB) $(call pkglibs,$(PKG_TEST) $(PKG_PROXY) $(PKG_CLI))

# unit tests of the proxy (tests/unit/test_proxy_*.c) link its objects but main.c, as
# build/<...>/libproxy.a, and the test-side fakes (tests/unit/proxy_*.c: a clock the test
# sets, a state directory of its own, ...), and see proxy/'s headers. The pattern beats
# $(BUILD)/tests/% (the shorter stem).
PROXY_LIB       := $(BUILD)/libproxy.a
PROXY_LIB_OBJS  := $(call obj,$(filter-out proxy/main.c,$(PROXY_SRCS)))
PROXY_FAKE_SRCS := $(filter-out tests/unit/test_%,$(sort $(wildcard tests/unit/proxy_*.c)))
PROXY_FAKE_OBJS := $(call obj,$(PROXY_FAKE_SRCS))

$(PROXY_LIB): $(PROXY_LIB_OBJS)
	$(call say,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/obj/tests/unit/test_proxy_%.o: ALL_CFLAGS += -Iproxy
$(PROXY_FAKE_OBJS): ALL_CFLAGS += -Iproxy

$(BUILD)/tests/test_proxy_%: $(BUILD)/obj/tests/unit/test_proxy_%.o $(PROXY_FAKE_OBJS) \
		$(PROXY_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkglibs,$(PKG_TEST) $(PKG_PROXY))

# these dial through the fakes' dialer (proxy_fakes.h): dial_start records, dials nothing
PROXY_FAKE_DIAL := test_proxy_exchange test_proxy_h1 test_proxy_who
$(patsubst %,$(BUILD)/tests/%,$(PROXY_FAKE_DIAL)): ALL_LDFLAGS += -Wl,--wrap=dial_start

# unit tests of CLI modules also link those modules (listed after $(LIB) in $^: the
# library again after them)
$(BUILD)/tests/test_principal: $(call obj,cli/principal.c cli/snapshot.c)
$(BUILD)/tests/test_allow_grant: $(call obj,cli/allow_grant.c cli/allow_store.c cli/usage.c cli/say.c \
		cli/state.c)
$(BUILD)/tests/test_run_filter: $(call obj,cli/run_filter.c)
$(BUILD)/tests/test_run_socks: $(call obj,cli/run_socks.c)
$(BUILD)/tests/test_run_trust: $(call obj,cli/run_trust.c)

# the load generator also links its parts; make lists them after $(LIB) in $^,
# so the link below puts the library last
$(BUILD)/bench/load: $(call obj,$(LOAD_PARTS))

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(filter-out $(LIB),$^) $(LIB) \
		$(call pkglibs,libidn2 libssl libcrypto libnghttp2) -lm -pthread

# --- tests -----------------------------------------------------------------

SAN_BUILD := build/san

check: unit integ
	$(Q)$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(CHECK_FUZZ_SECONDS)
	@echo "check: all passed"

unit:
	$(Q)$(MAKE) --no-print-directory BUILD=$(SAN_BUILD) SAN=1 unit-run

.PHONY: unit-run
unit-run: $(UNITS)
	$(Q)set -e; for t in $(UNITS); do echo "  UNIT   $$t"; $$t; done

integ:
	$(Q)$(MAKE) --no-print-directory BUILD=$(SAN_BUILD) SAN=1 all
	$(Q)SLUICE_BUILD=$(SAN_BUILD) tests/integ/run

# libFuzzer targets: the library rebuilt with clang and the fuzzer's coverage.
FUZZ_BUILD := build/fuzz
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O1 -Ilib $(WARN) -Wno-unknown-warning-option \
	-fsanitize=fuzzer-no-link,address,undefined $(call pkgcflags,$(PKG_PROXY))
FUZZ_LIB_OBJS := $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,$(LIB_SRCS))
FUZZERS := $(patsubst tests/fuzz/%.c,$(FUZZ_BUILD)/%,$(FUZZ_SRCS))

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(call say,CLANG,$<)
	$(Q)clang $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB_OBJS)
	$(call say,FUZZ,$@)
	$(Q)clang $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ $(call pkglibs,$(PKG_PROXY))

# the engine snapshot parser lives in the CLI and reads JSON with jansson
$(FUZZ_BUILD)/fuzz_snapshot: tests/fuzz/fuzz_snapshot.c $(FUZZ_LIB_OBJS) \
		$(FUZZ_BUILD)/obj/cli/snapshot.o $(FUZZ_BUILD)/obj/cli/principal.o
	$(call say,FUZZ,$@)
	$(Q)clang $(FUZZ_CFLAGS) -Icli -fsanitize=fuzzer -o $@ $^ $(call pkglibs,$(PKG_PROXY) $(PKG_CLI))

# the /proc/net/unix line reader lives in the CLI
$(FUZZ_BUILD)/fuzz_socks_line: tests/fuzz/fuzz_socks_line.c $(FUZZ_LIB_OBJS) $(FUZZ_BUILD)/obj/cli/run_socks.o
	$(call say,FUZZ,$@)
	$(Q)clang $(FUZZ_CFLAGS) -Icli -fsanitize=fuzzer -o $@ $^ $(call pkglibs,$(PKG_PROXY) $(PKG_CLI))

# the run's trust (an image's bundle, read whole) lives in the CLI
$(FUZZ_BUILD)/fuzz_trust_bundle: tests/fuzz/fuzz_trust_bundle.c $(FUZZ_LIB_OBJS) $(FUZZ_BUILD)/obj/cli/run_trust.o
	$(call say,FUZZ,$@)
	$(Q)clang $(FUZZ_CFLAGS) -Icli -fsanitize=fuzzer -o $@ $^ $(call pkglibs,$(PKG_PROXY) $(PKG_CLI))

fuzz-build: $(FUZZERS)

fuzz: fuzz-build
	$(Q)set -e; for f in $(FUZZERS); do \
		n=$$(basename $$f); c=tests/fuzz/corpus/$${n#fuzz_}; \
		mkdir -p $(FUZZ_BUILD)/work/$$n; \
		echo "  FUZZ   $$n ($(FUZZ_SECONDS)s)"; \
		$$f -max_total_time=$(FUZZ_SECONDS) -timeout=5 -rss_limit_mb=1024 \
			-print_final_stats=0 $(FUZZ_BUILD)/work/$$n $$c >$(FUZZ_BUILD)/$$n.log 2>&1 \
			|| { tail -40 $(FUZZ_BUILD)/$$n.log; exit 1; }; \
	done

# --- benchmark, running, setup ---------------------------------------------

bench: bench-build
	$(Q)SLUICE_BUILD=$(BUILD) bench/run

bench-build: all $(BENCHES)

deps:
	$(Q)tools/deps

run: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)test -e state/ca.crt || $(BUILD)/sluice -c etc/sluice.conf ca init
	$(Q)$(DNSD) -c etc/sluice.conf & dns=$$!; \
		trap 'kill $$dns 2>/dev/null' EXIT INT TERM; $(PROXY) -c etc/sluice.conf

test: deps
	$(Q)tools/test-deps
	$(Q)$(MAKE) --no-print-directory check

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)
