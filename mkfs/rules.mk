PROGS += $(BUILD)/bin/mkfs.recfs
$(BUILD)/bin/mkfs.recfs: $(BUILD)/obj/mkfs/main.o $(LIBRECFS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS)
