# Weir - one non-recursive Makefile. Output under build/.
#   make            build everything (daemons, CLI, libweir, tests)
#   make test       deps check, build, unit + integration + POSIX conformance tests
#   make demo       deps check, build, local cluster, copy + verify real data
#   make faults     the fault test, long form: servers killed, restarted, paused under load (ROUNDS=3)
#   make SAN=1 ...  ASan + UBSan build (in build-san/)
#   make fuzz       clang libFuzzer harnesses (build-fuzz/), each run FUZZ_S seconds (docs/fuzzing.md)
#   make V=1        show commands
# See README.md.

CC      ?= cc
SAN     ?= 0
FUZZ    ?= 0
V       ?= 0
QUICK   ?= 0
BUILD   ?= $(if $(filter 1,$(FUZZ)),build-fuzz,$(if $(filter 1,$(SAN)),build-san,build))

Q := $(if $(filter 1,$(V)),,@)
E := $(if $(filter 1,$(V)),@true,@echo)

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wformat=2 -Wvla -Wno-format-nonliteral
CSTD    := -std=c11
OPT     := -O2 -g
ifeq ($(SAN),1)
OPT     := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
LDSAN   := -fsanitize=address,undefined
endif
# FUZZ=1 (set by `make fuzz`, tests/fuzz/fuzz.mk): every object built by clang with
# libFuzzer's coverage instrumentation and ASan + UBSan, into build-fuzz/
ifeq ($(FUZZ),1)
CC      := clang
OPT     := -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined \
           -fno-sanitize-recover=all
LDSAN   := -fsanitize=address,undefined
endif
INC     := -I. -I$(BUILD)/gen -Iclient/include
CFLAGS_ALL := $(CSTD) $(OPT) $(WARN) $(INC) -fPIC -MMD -MP $(CFLAGS)
LDFLAGS_ALL := $(LDSAN) $(LDFLAGS)

# the S3 client (common/s3*.c, in core.a): libcurl, libxml2, OpenSSL libcrypto
S3_PKGS   := libcurl libxml-2.0 libcrypto
S3_CFLAGS := $(patsubst -I%,-isystem %,$(shell pkg-config --cflags $(S3_PKGS) 2>/dev/null))
S3_LIBS   := $(or $(shell pkg-config --libs $(S3_PKGS) 2>/dev/null),-lcurl -lxml2 -lcrypto)
LIBS_BASE := -linih -lprotobuf-c -lz -lpthread $(S3_LIBS)
LIBS_MDS  := -lrocksdb
LIBS_OSS  := -luring
LIBS_TEST := -lcunit

# ---- sources
COMMON_SRC := common/util.c common/log.c common/fid.c common/layout.c common/config.c common/key.c common/capa.c \
              common/s3.c common/s3_xml.c
NET_SRC    := net/frame.c net/status.c net/rpc.c net/server.c net/tcp.c net/auth.c
GEN_SRC    := $(BUILD)/gen/weir.pb-c.c
MDS_SRC    := $(filter-out mds/main.c,$(wildcard mds/*.c))
OSS_SRC    := $(filter-out oss/main.c,$(wildcard oss/*.c))
CLIENT_SRC := $(wildcard client/*.c)
TOOLS_SRC  := $(wildcard tools/weir*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(patsubst $(BUILD)/%,%,$(1)))

CORE_OBJ   := $(call obj,$(COMMON_SRC) $(NET_SRC)) $(BUILD)/obj/gen/weir.pb-c.o
MDS_OBJ    := $(call obj,$(MDS_SRC))
OSS_OBJ    := $(call obj,$(OSS_SRC))
# mds/lock.c is pure (no network, no namespace): libweir keeps its own lock record with it
CLIENT_OBJ := $(call obj,$(CLIENT_SRC) mds/lock.c)

BIN := $(BUILD)/bin
LIB := $(BUILD)/lib

PROGS := $(BIN)/weir-mds $(BIN)/weir-oss $(BIN)/weir
LIBWEIR := $(LIB)/libweir.so $(LIB)/libweir.a $(LIB)/pkgconfig/weir.pc

# ---- tests: every tests/unit/*/test_*.c and tests/integration/test_*.c is one binary
UNIT_SRC  := $(wildcard tests/unit/*/test_*.c)
INTEG_SRC := $(wildcard tests/integration/test_*.c)
TEST_HELPER_SRC := $(wildcard tests/lib/*.c)
TEST_BINS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(UNIT_SRC) $(INTEG_SRC))
# ---- POSIX conformance suite: every tests/posix/test_*.c is one binary, linked with the other
# tests/posix/*.c (case runner, libweir and local backends); see tests/posix/README.md
POSIX_SRC := $(wildcard tests/posix/test_*.c)
POSIX_HELPER_SRC := $(filter-out $(POSIX_SRC),$(wildcard tests/posix/*.c))
POSIX_BINS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(POSIX_SRC))

.PHONY: all clean test unit integration posix demo deps format bench faults help
# objects made through pattern rules are not intermediates to delete (a
# second `make` would relink every test binary)
.SECONDARY:
all: $(PROGS) $(LIBWEIR) $(TEST_BINS) $(POSIX_BINS) $(BIN)/weir-bench $(BIN)/weir-mdt-bench

help:
	@sed -n '2,8p' Makefile | sed 's/^# \{0,1\}//'

# flags change -> rebuild
$(BUILD)/.flags: FORCE
	@mkdir -p $(BUILD)
	@echo '$(CFLAGS_ALL) $(LDFLAGS_ALL)' | cmp -s - $@ || echo '$(CFLAGS_ALL) $(LDFLAGS_ALL)' > $@
FORCE:

$(BUILD)/gen/weir.pb-c.c $(BUILD)/gen/weir.pb-c.h &: net/proto/weir.proto
	$(E) "  PROTOC  $<"
	$(Q)mkdir -p $(BUILD)/gen
	$(Q)protoc-c --c_out=$(BUILD)/gen -Inet/proto $<

$(BUILD)/obj/gen/weir.pb-c.o: $(BUILD)/gen/weir.pb-c.c $(BUILD)/.flags
	$(E) "  CC      $<"
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CSTD) $(OPT) $(INC) -fPIC -MMD -MP -w -c $< -o $@

$(BUILD)/obj/%.o: %.c $(BUILD)/.flags | $(BUILD)/gen/weir.pb-c.h
	$(E) "  CC      $<"
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS_ALL) -c $< -o $@

$(call obj,common/s3.c common/s3_xml.c): CFLAGS_ALL += $(S3_CFLAGS)
$(BUILD)/core.a: $(CORE_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/mds.a: $(MDS_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^
$(BUILD)/oss.a: $(OSS_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BIN)/weir-mds: $(BUILD)/obj/mds/main.o $(BUILD)/mds.a $(BUILD)/core.a
	$(E) "  LD      $@"
	$(Q)mkdir -p $(BIN)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_MDS) $(LIBS_BASE)

$(BIN)/weir-oss: $(BUILD)/obj/oss/main.o $(BUILD)/oss.a $(BUILD)/core.a
	$(E) "  LD      $@"
	$(Q)mkdir -p $(BIN)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_OSS) $(LIBS_BASE)

# libweir: static archive of client + core; shared object exports weir_* only
$(LIB)/libweir.a: $(CLIENT_OBJ) $(CORE_OBJ)
	$(E) "  AR      $@"
	$(Q)mkdir -p $(LIB)
	$(Q)rm -f $@ && ar rcs $@ $^

# the real file is libweir.so.0 (its soname); libweir.so is the link-time symlink
$(LIB)/libweir.so: $(CLIENT_OBJ) $(CORE_OBJ) client/libweir.map client/include/weir/weir.h
	$(E) "  LD      $@"
	$(Q)mkdir -p $(LIB)
	$(Q)$(CC) -shared $(LDFLAGS_ALL) -Wl,--version-script=client/libweir.map -Wl,-soname,libweir.so.0 \
		-o $(LIB)/libweir.so.0 $(CLIENT_OBJ) $(CORE_OBJ) $(LIBS_BASE)
	$(Q)tools/check-exports.sh $(LIB)/libweir.so.0 client/include/weir/weir.h
	$(Q)ln -sf libweir.so.0 $@

$(LIB)/pkgconfig/weir.pc: client/weir.pc.in
	$(Q)mkdir -p $(dir $@)
	$(Q)sed -e 's|@PREFIX@|$(CURDIR)|g' -e 's|@LIBDIR@|$(CURDIR)/$(LIB)|g' $< > $@

$(BIN)/weir: $(call obj,$(TOOLS_SRC)) $(LIB)/libweir.a
	$(E) "  LD      $@"
	$(Q)mkdir -p $(BIN)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $(call obj,$(TOOLS_SRC)) $(LIB)/libweir.a $(LIBS_BASE) -lm

# weir-fuse: the FUSE mount (client/fuse/*.c) over libweir.a and libfuse3
FUSE_SRC    := $(wildcard client/fuse/*.c)
FUSE_OBJ    := $(call obj,$(FUSE_SRC))
FUSE_CFLAGS := $(patsubst -I%,-isystem %,$(shell pkg-config --cflags fuse3 2>/dev/null))
FUSE_LIBS   := $(or $(shell pkg-config --libs fuse3 2>/dev/null),-lfuse3 -lpthread)
all: $(BIN)/weir-fuse
$(FUSE_OBJ): CFLAGS_ALL += $(FUSE_CFLAGS)
$(BIN)/weir-fuse: $(FUSE_OBJ) $(LIB)/libweir.a
	$(E) "  LD      $@"
	$(Q)mkdir -p $(BIN)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $(FUSE_OBJ) $(LIB)/libweir.a $(FUSE_LIBS) $(LIBS_BASE)
# its test is a shell script, installed as a test binary that knows the source tree
# (so is every tests/integration/test_*.sh: deploy/weir-local's test_weir_local,
# test_enospc_dd's dd onto a full OST through the mount and the shim, ...)
INTEG_SH := $(patsubst tests/integration/%.sh,$(BUILD)/tests/integration/%,\
	      $(wildcard tests/integration/test_*.sh))
all: $(INTEG_SH)
# test_dne_crash.sh's offline checker of several MDTs' namespace
all: $(BUILD)/tests/integration/mdt_check
# test_dne.sh's client that keeps a file of MDT k open across time
all: $(BUILD)/tests/integration/dne_hold
$(BUILD)/tests/integration/test_%: tests/integration/test_%.sh
	$(Q)mkdir -p $(dir $@)
	$(Q)sed 's|@SRCDIR@|$(CURDIR)|g' $< > $@.tmp && chmod +x $@.tmp && mv $@.tmp $@

# weir-hsmd: the HSM copytool agent (tools/hsmd/*.c) over libweir.a and the S3 client
HSMD_SRC := $(wildcard tools/hsmd/*.c)
HSMD_OBJ := $(call obj,$(HSMD_SRC))
all: $(BIN)/weir-hsmd
$(BIN)/weir-hsmd: $(HSMD_OBJ) $(LIB)/libweir.a
	$(E) "  LD      $@"
	$(Q)mkdir -p $(BIN)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $(HSMD_OBJ) $(LIB)/libweir.a $(LIBS_BASE)

# libweir-preload.so: the LD_PRELOAD shim (client/preload/*.c) with libweir linked in; it
# exports exactly the libc names of client/preload/symbols.txt (checked), all else is hidden
PRELOAD_SRC := $(wildcard client/preload/*.c)
PRELOAD_OBJ := $(call obj,$(PRELOAD_SRC))
all: $(LIB)/libweir-preload.so
$(PRELOAD_OBJ): CFLAGS_ALL += -fvisibility=hidden
$(BUILD)/preload.map: client/preload/symbols.txt
	$(Q)mkdir -p $(BUILD)
	$(Q){ echo '{ global:'; sed -e 's/#.*//' -e '/^[[:space:]]*$$/d' -e 's/$$/;/' $<; \
		echo 'local: *; };'; } > $@
$(LIB)/libweir-preload.so: $(PRELOAD_OBJ) $(CLIENT_OBJ) $(CORE_OBJ) $(BUILD)/preload.map
	$(E) "  LD      $@"
	$(Q)mkdir -p $(LIB)
	$(Q)$(CC) -shared $(LDFLAGS_ALL) -Wl,--version-script=$(BUILD)/preload.map -Wl,-z,now \
		-o $@.tmp $(PRELOAD_OBJ) $(CLIENT_OBJ) $(CORE_OBJ) $(LIBS_BASE) -ldl
	$(Q)sed -e 's/#.*//' -e '/^[[:space:]]*$$/d' client/preload/symbols.txt | sort > $@.want
	$(Q)nm -D --defined-only $@.tmp | awk '$$2 ~ /^[TWi]$$/ { print $$3 }' | sort > $@.have
	$(Q)if ! cmp -s $@.want $@.have; then echo "libweir-preload.so: exports (>) differ from" \
		"client/preload/symbols.txt (<):"; diff $@.want $@.have; exit 1; fi
	$(Q)rm -f $@.want $@.have && mv $@.tmp $@

# tests link everything they might touch
TEST_LINK := $(call obj,$(TEST_HELPER_SRC)) $(BUILD)/mds.a $(BUILD)/oss.a $(LIB)/libweir.a
$(BUILD)/tests/%: tests/%.c $(call obj,$(TEST_HELPER_SRC)) $(BUILD)/mds.a $(BUILD)/oss.a $(LIB)/libweir.a $(BUILD)/.flags
	$(E) "  CCLD    $@"
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS_ALL) -MF $@.d -Itests/lib -o $@ $< $(TEST_LINK) $(LDFLAGS_ALL) \
		$(LIBS_TEST) $(LIBS_MDS) $(LIBS_OSS) $(LIBS_BASE) -lm

# the one unit test of tools/: the import's shadow rule, which depends on libc only
$(BUILD)/tests/unit/tools/test_dra_shadow: $(BUILD)/obj/tools/weir_dra_shadow.o
$(BUILD)/tests/unit/tools/test_dra_shadow: TEST_LINK += $(BUILD)/obj/tools/weir_dra_shadow.o

# POSIX suite: px_have.h tells px_ops_libweir.c which calls weir.h declares
$(BUILD)/gen/px_have.h: client/include/weir/weir.h tests/posix/px_have.sh
	$(Q)mkdir -p $(dir $@)
	$(Q)sh tests/posix/px_have.sh $< $@
$(call obj,$(POSIX_HELPER_SRC)): $(BUILD)/gen/px_have.h
POSIX_LINK := $(call obj,$(POSIX_HELPER_SRC)) $(TEST_LINK)
$(BUILD)/tests/posix/%: tests/posix/%.c $(call obj,$(POSIX_HELPER_SRC)) $(call obj,$(TEST_HELPER_SRC)) $(BUILD)/mds.a $(BUILD)/oss.a $(LIB)/libweir.a $(BUILD)/.flags
	$(E) "  CCLD    $@"
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS_ALL) -MF $@.d -Itests/lib -Itests/posix -o $@ $< $(POSIX_LINK) \
		$(LDFLAGS_ALL) $(LIBS_TEST) $(LIBS_MDS) $(LIBS_OSS) $(LIBS_BASE) -lm

$(BIN)/weir-bench: tests/bench/weir_bench.c $(LIB)/libweir.a $(BUILD)/.flags
	$(E) "  CCLD    $@"
	$(Q)mkdir -p $(BIN)
	$(Q)$(CC) $(CFLAGS_ALL) -MF $(BUILD)/obj/weir-bench.d -o $@ $< $(LIB)/libweir.a \
		$(LDFLAGS_ALL) $(LIBS_BASE)

# the fault test's application process (tests/fault/faults.sh): libweir, or libc
# calls into a FUSE mount or through the shim
FAULTLOAD := $(BUILD)/tests/fault/weir-faultload
all: $(FAULTLOAD)
$(FAULTLOAD): tests/fault/weir_faultload.c $(LIB)/libweir.a $(BUILD)/.flags
	$(E) "  CCLD    $@"
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS_ALL) -MF $@.d -o $@ $< $(LIB)/libweir.a $(LDFLAGS_ALL) $(LIBS_BASE)

# one MDT's namespace calls from threads in process: pdirops against the exclusive lock
$(BIN)/weir-mdt-bench: $(BUILD)/obj/tests/bench/mdt_bench.o $(BUILD)/mds.a $(BUILD)/core.a
	$(E) "  LD      $@"
	$(Q)mkdir -p $(BIN)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_MDS) $(LIBS_BASE)

bench: $(PROGS) $(BIN)/weir-bench $(BIN)/weir-mdt-bench $(BIN)/weir-hsmd $(FAULTLOAD)
	$(Q)BUILD=$(BUILD) QUICK=$(QUICK) tests/bench/run.sh

# the fault test, long form (make test runs the short one: test_faults)
faults: all
	$(Q)BUILD=$(BUILD) tests/fault/faults.sh --rounds $(or $(ROUNDS),3)

deps:
	@deploy/deps.sh

test: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)BUILD=$(BUILD) tests/run.sh $(TESTS)

unit: all
	$(Q)BUILD=$(BUILD) tests/run.sh unit

integration: all
	$(Q)BUILD=$(BUILD) tests/run.sh integration

posix: all
	$(Q)BUILD=$(BUILD) tests/run.sh posix

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)BUILD=$(BUILD) deploy/demo.sh

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build build-san build-fuzz

include tests/fuzz/fuzz.mk

-include $(shell find $(BUILD)/obj $(BUILD)/tests -name '*.d' 2>/dev/null)
