# libFuzzer harness over pack assembly and fsck (clang, ASan+UBSan).
#   make fuzz [FUZZ_TIME=60]     run it for FUZZ_TIME seconds from the seeds
#   FUZZ_STRICT=1 make fuzz      also fail when a repaired pack is not clean
# The library is compiled into the harness with the same instrumentation.
FUZZ_CC ?= clang
FUZZ_TIME ?= 60
FUZZ_BIN := build-fuzz/fuzz_fsck
FUZZ_SRCS := tests/fuzz/fuzz_fsck.c $(LIB_SRCS)

$(FUZZ_BIN): $(FUZZ_SRCS) $(LIB_HDRS) tests/fuzz/rules.mk | deps
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -g -O1 -fno-omit-frame-pointer \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-Ifs/include -Ifs/lib $(LIB_CFLAGS) -o $@ $(FUZZ_SRCS) $(LIB_LIBS) $(THREAD_LIBS)

fuzz: deps $(FUZZ_BIN)
	@mkdir -p build-fuzz/corpus
	$(FUZZ_BIN) -max_total_time=$(FUZZ_TIME) -max_len=2048 -timeout=20 \
		-artifact_prefix=build-fuzz/ build-fuzz/corpus tests/fuzz/seeds
