# recfs-mount: the FUSE driver; mount.recfs is the same program (mount(8)
# helper calling convention, chosen by its name).
FUSE_OBJS := $(patsubst %,$(BUILD)/obj/fs/fuse/%.o,main ops cache node log)
PROGS += $(BUILD)/bin/recfs-mount $(BUILD)/bin/mount.recfs

$(BUILD)/obj/fs/fuse/%.o: EXTRA_CFLAGS += $(FUSE_CFLAGS)

$(BUILD)/bin/recfs-mount $(BUILD)/bin/mount.recfs: $(FUSE_OBJS) $(LIBRECFS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS) $(FUSE_LIBS) $(THREAD_LIBS)
