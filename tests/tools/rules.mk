# Test-only helpers (built by `make check`, not installed).
TEST_TOOLS := $(BUILD)/tests/recfs-testwrite
EXTRA_CHECK_DEPS += $(TEST_TOOLS)

$(BUILD)/tests/recfs-testwrite: $(BUILD)/obj/tests/tools/recfs-testwrite.o $(LIBRECFS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS)

# LD_PRELOAD shim emulating disks for pread (bench/read.sh)
TEST_TOOLS += $(BUILD)/tests/slowpread.so
EXTRA_CHECK_DEPS += $(BUILD)/tests/slowpread.so
$(BUILD)/tests/slowpread.so: tests/tools/slowpread.c | build-deps
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror -fPIC -shared -o $@ $< -ldl -lpthread

# LD_PRELOAD shim for io_submit: partial submits, EAGAIN, short writes
# (tests/integration/3a-record-aio.sh)
TEST_TOOLS += $(BUILD)/tests/aioshim.so
EXTRA_CHECK_DEPS += $(BUILD)/tests/aioshim.so
$(BUILD)/tests/aioshim.so: tests/tools/aioshim.c | build-deps
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror -fPIC -shared -o $@ $< -lpthread

# LD_PRELOAD shim: an input read or a flush failing on demand
# (tests/integration/3b-record-failures.sh)
TEST_TOOLS += $(BUILD)/tests/failshim.so
EXTRA_CHECK_DEPS += $(BUILD)/tests/failshim.so
$(BUILD)/tests/failshim.so: tests/tools/failshim.c | build-deps
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror -fPIC -shared -o $@ $<
