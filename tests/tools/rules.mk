# Test-only helpers (built by `make check`, not installed).
TEST_TOOLS := $(BUILD)/tests/recfs-testwrite
EXTRA_CHECK_DEPS += $(TEST_TOOLS)

$(BUILD)/tests/recfs-testwrite: $(BUILD)/obj/tests/tools/recfs-testwrite.o $(LIBRECFS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS)
