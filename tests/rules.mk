# cmocka unit tests: every tests/unit/test_*.c is one binary.
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_TESTS += $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))

$(BUILD)/obj/tests/unit/%.o: EXTRA_CFLAGS += $(CMOCKA_CFLAGS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(LIBRECFS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS) $(UNIT_EXTRA_LIBS) $(CMOCKA_LIBS) $(THREAD_LIBS)

# unit tests of recorder/ pieces link their objects
$(BUILD)/tests/test_metrics: $(MX_OBJS)
# (not LIB_LIBS +=: a target-specific append to a variable the Makefile's
# pkgconf memo sets on first use made make refuse it as self-referencing
# when this was the first link to expand it)
$(BUILD)/tests/test_metrics: UNIT_EXTRA_LIBS = $(MHD_LIBS)
$(BUILD)/tests/test_sdnotify: $(SDNOTIFY_OBJS)
$(BUILD)/tests/test_vsis: $(VSIS_OBJS)
