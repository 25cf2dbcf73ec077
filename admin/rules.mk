PROGS += $(BUILD)/bin/recfs
$(BUILD)/bin/recfs: $(BUILD)/obj/admin/recfs.o $(LIBRECFS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS)
