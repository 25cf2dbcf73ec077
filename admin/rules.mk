PROGS += $(BUILD)/bin/recfs
$(BUILD)/bin/recfs: $(BUILD)/obj/admin/recfs.o $(BUILD)/obj/admin/cat.o $(BUILD)/obj/admin/ctl.o $(LIBRECFS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS) $(THREAD_LIBS)
