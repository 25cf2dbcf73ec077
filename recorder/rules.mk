# recorder/: the engine (engine/), what the programs share (common/), and one
# folder per program: recfs-record (record/), recfsd (recfsd/), recfs-play
# (play/).  Headers are found through -Irecorder as "engine/engine.h" etc.
RECORDER_COMMON := $(patsubst %,$(BUILD)/obj/recorder/common/%.o,util gen vdif opts)
ENGINE_OBJS := $(patsubst %,$(BUILD)/obj/recorder/engine/%.o,engine ring input rcv udp split writer commit report)
SDNOTIFY_OBJS := $(BUILD)/obj/recorder/common/sdnotify.o

PROGS += $(BUILD)/bin/recfs-record $(BUILD)/bin/recfs-play
$(BUILD)/bin/recfs-record: $(BUILD)/obj/recorder/record/main.o $(SDNOTIFY_OBJS) $(ENGINE_OBJS) $(RECORDER_COMMON) $(LIBRECFS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS) $(AIO_LIBS) $(THREAD_LIBS)

$(BUILD)/bin/recfs-play: $(BUILD)/obj/recorder/play/main.o $(RECORDER_COMMON) $(LIBRECFS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS) $(THREAD_LIBS)

# bench/udp.sh's ceiling: recvmmsg and discard (not installed)
$(BUILD)/bench/recfs-udpsink: $(BUILD)/obj/bench/udpsink.o $(RECORDER_COMMON) $(LIBRECFS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS) $(THREAD_LIBS)

# recfsd: the station daemon on the engine, with its VSI-S control (vsis.c;
# ctl.c the keyword table, ctl_*.c the keywords by area), its metrics (rdmetrics.c on the exposition writer and the
# libmicrohttpd server in prom.c), and the systemd unit `make install` puts in $(SYSTEMD_UNIT_DIR).
MX_OBJS := $(BUILD)/obj/recorder/recfsd/prom.o
$(MX_OBJS): EXTRA_CFLAGS += $(MHD_CFLAGS)
VSIS_OBJS := $(BUILD)/obj/recorder/recfsd/vsis.o
RECFSD_OBJS := $(patsubst %,$(BUILD)/obj/recorder/recfsd/%.o,main scan ds ctl ctl_record ctl_check ctl_state ctl_rates ctl_d2f ctl_stream ctl_mark6 rdmetrics)
SYSTEMD_UNITS += recorder/recfsd/recfsd@.service.in
PROGS += $(BUILD)/bin/recfsd
$(BUILD)/bin/recfsd: $(RECFSD_OBJS) $(VSIS_OBJS) $(MX_OBJS) $(SDNOTIFY_OBJS) $(ENGINE_OBJS) $(RECORDER_COMMON) $(LIBRECFS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS) $(AIO_LIBS) $(MHD_LIBS) $(THREAD_LIBS)
