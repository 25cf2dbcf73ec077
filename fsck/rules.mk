PROGS += $(BUILD)/bin/fsck.recfs
$(BUILD)/bin/fsck.recfs: $(BUILD)/obj/fsck/main.o $(LIBRECFS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS) $(THREAD_LIBS)

# The image regression suite's pack builder (tests/fsck/run.sh).
EXTRA_CHECK_DEPS += $(BUILD)/tests/fsck-helper
$(BUILD)/tests/fsck-helper: $(BUILD)/obj/tests/fsck/helper.o $(LIBRECFS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS) $(THREAD_LIBS)


# The fuzz harness replayed on its seeds with the normal compiler
# (tests/integration/52-fsck-fuzz.sh).
EXTRA_CHECK_DEPS += $(BUILD)/tests/fuzz-replay
$(BUILD)/tests/fuzz-replay: $(BUILD)/obj/tests/fuzz/replay.o $(BUILD)/obj/tests/fuzz/fuzz_fsck.o $(LIBRECFS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS) $(THREAD_LIBS)
