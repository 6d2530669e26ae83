# tests/fuzz/fuzz.mk - the libFuzzer harnesses (docs/fuzzing.md); included by the Makefile.
#
#   make fuzz [FUZZ_S=N] [FUZZ_TARGETS="mds oss"] [FUZZ_JOBS=2]
#       build every harness in build-fuzz/ (clang, -fsanitize=fuzzer,address,undefined;
#       the normal build/ and build-san/ are not touched) and run each for FUZZ_S
#       seconds (default 10) from its seed corpus (tests/fuzz/run.sh)
#   make fuzz-build     build only
#   make fuzz-corpus    regenerate the generated seeds in tests/fuzz/corpus/
#
# The harnesses are linked with --wrap for net_req_reply and net_loop_add_fd:
# requests made by a harness are answered into it (tests/fuzz/fuzz.h).
FUZZ_S       ?= 10
FUZZ_JOBS    ?= 1
FUZZ_TARGETS ?=
FUZZ_HARNESSES := frame net_server net_client auth mds oss s3_xml config
FUZZ_DIR  := build-fuzz
FUZZ_WRAP := -Wl,--wrap=net_req_reply,--wrap=net_loop_add_fd
FUZZ_LIB  := $(BUILD)/obj/tests/fuzz/fuzz_lib.o
FUZZ_BINS := $(patsubst %,$(BUILD)/fuzz/fuzz_%,$(FUZZ_HARNESSES))

.PHONY: fuzz fuzz-build fuzz-bins fuzz-corpus

fuzz-build:
	$(Q)$(MAKE) --no-print-directory FUZZ=1 BUILD=$(FUZZ_DIR) fuzz-bins

fuzz: fuzz-build
	$(Q)BUILD=$(FUZZ_DIR) FUZZ_S=$(FUZZ_S) FUZZ_JOBS=$(FUZZ_JOBS) tests/fuzz/run.sh $(FUZZ_TARGETS)

fuzz-corpus: fuzz-build
	$(Q)$(FUZZ_DIR)/fuzz/gen_corpus tests/fuzz/corpus

ifeq ($(FUZZ),1)
fuzz-bins: $(FUZZ_BINS) $(BUILD)/fuzz/gen_corpus

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB) $(BUILD)/mds.a $(BUILD)/oss.a $(BUILD)/core.a $(BUILD)/.flags
	$(E) "  FUZZLD  $@"
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS_ALL) -fsanitize=fuzzer -MF $@.d -o $@ $< $(FUZZ_LIB) $(BUILD)/mds.a \
		$(BUILD)/oss.a $(BUILD)/core.a $(FUZZ_WRAP) $(LDFLAGS_ALL) -fsanitize=fuzzer \
		$(LIBS_MDS) $(LIBS_OSS) $(LIBS_BASE)
$(BUILD)/obj/tests/fuzz/fuzz_s3_xml.o $(BUILD)/fuzz/fuzz_s3_xml: CFLAGS_ALL += $(S3_CFLAGS)

# the seed generator: a plain program (no fuzzer main) over the same objects
$(BUILD)/fuzz/gen_corpus: tests/fuzz/gen_corpus.c $(FUZZ_LIB) $(BUILD)/core.a $(BUILD)/.flags
	$(E) "  CCLD    $@"
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS_ALL) -MF $@.d -o $@ $< $(FUZZ_LIB) $(BUILD)/core.a $(FUZZ_WRAP) \
		$(LDFLAGS_ALL) $(LIBS_BASE)
endif

-include $(wildcard $(BUILD)/fuzz/*.d)
