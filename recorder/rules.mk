# recorder/: recfs-record, recfs-play, and the bench-only UDP sink.
RECORDER_COMMON := $(BUILD)/obj/recorder/common.o $(BUILD)/obj/recorder/vdif.o
RECORDER_HDRS := recorder/rec.h recorder/engine.h
ENGINE_OBJS := $(patsubst %,$(BUILD)/obj/recorder/%.o,engine ring input writer commit report)

# every recorder object depends on the recorder's headers (a pattern rule
# without a recipe would add nothing)
$(patsubst recorder/%.c,$(BUILD)/obj/recorder/%.o,$(wildcard recorder/*.c)): $(RECORDER_HDRS)

PROGS += $(BUILD)/bin/recfs-record $(BUILD)/bin/recfs-play
$(BUILD)/obj/recorder/record.o: recorder/sdnotify.h
$(BUILD)/bin/recfs-record: $(BUILD)/obj/recorder/record.o $(BUILD)/obj/recorder/sdnotify.o $(ENGINE_OBJS) $(RECORDER_COMMON) $(LIBRECFS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS) $(AIO_LIBS) $(THREAD_LIBS)

$(BUILD)/bin/recfs-play: $(BUILD)/obj/recorder/play.o $(RECORDER_COMMON) $(LIBRECFS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS) $(THREAD_LIBS)

# bench/udp.sh's ceiling: recvmmsg and discard (not installed)
$(BUILD)/bench/recfs-udpsink: $(BUILD)/obj/recorder/udpsink.o $(RECORDER_COMMON) $(LIBRECFS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS) $(THREAD_LIBS)

# The /metrics endpoint and sd_notify, for recfsd (no engine dependency), and
# the systemd unit `make install` puts in $(SYSTEMD_UNIT_DIR).
MX_OBJS := $(BUILD)/obj/recorder/metrics.o
SDNOTIFY_OBJS := $(BUILD)/obj/recorder/sdnotify.o
$(BUILD)/obj/recorder/metrics.o: recorder/metrics.h
$(BUILD)/obj/recorder/sdnotify.o: recorder/sdnotify.h
SYSTEMD_UNITS += recorder/recfsd@.service.in

# recfsd: the station daemon on the engine, with its VSI-S control (vsis.c)
# and its metrics (metrics.c)
VSIS_OBJS := $(BUILD)/obj/recorder/vsis.o
RECFSD_OBJS := $(patsubst %,$(BUILD)/obj/recorder/%.o,recfsd ctl rdmetrics)
$(RECFSD_OBJS): recorder/recfsd.h recorder/vsis.h recorder/metrics.h recorder/sdnotify.h
$(VSIS_OBJS): recorder/vsis.h
PROGS += $(BUILD)/bin/recfsd
$(BUILD)/bin/recfsd: $(RECFSD_OBJS) $(VSIS_OBJS) $(MX_OBJS) $(SDNOTIFY_OBJS) $(ENGINE_OBJS) $(RECORDER_COMMON) $(LIBRECFS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS) $(AIO_LIBS) $(THREAD_LIBS)
