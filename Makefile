# recfs: one block of variables, the library built once, every tool linking it.
PREFIX ?= /usr/local
# systemd units (recfsd@.service); /lib/systemd/system for a distribution package
SYSTEMD_UNIT_DIR ?= $(PREFIX)/lib/systemd/system
DESTDIR ?=
BUILD ?= build
CC ?= cc
PKG_CONFIG ?= pkg-config

WARN := -Wall -Wextra -Werror -Wmissing-prototypes -Wshadow -Wno-unused-parameter
CFLAGS ?= -O2 -g
SAN_CFLAGS ?=
# -MMD -MP: each object's header dependencies in a .d beside it
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 $(WARN) $(CFLAGS) $(SAN_CFLAGS) \
	-MMD -MP -Ifs/include
LDFLAGS ?=
ALL_LDFLAGS = $(LDFLAGS) $(SAN_CFLAGS)

# Flags from pkg-config are asked for when a recipe first needs them, not
# when make reads this file: on a fresh machine `make deps` (every build's
# first step) has not installed the packages yet when the file is read.  The
# first answer is kept.  $(call pkgconf,VAR,ARGS,FALLBACK)
define pkgconf
$(1) = $$(eval $(1) := $$(shell $$(PKG_CONFIG) $(2) 2>/dev/null || echo $(3)))$$($(1))
endef
# libaio ships no .pc file on Debian 12; fall back to -laio.
PC_LIBS := libxxhash blkid uuid
$(eval $(call pkgconf,LIB_CFLAGS,--cflags $(PC_LIBS),))
$(eval $(call pkgconf,LIB_LIBS,--libs $(PC_LIBS),-lxxhash -lblkid -luuid))
$(eval $(call pkgconf,AIO_LIBS,--libs libaio,-laio))
$(eval $(call pkgconf,FUSE_CFLAGS,--cflags fuse3,))
$(eval $(call pkgconf,FUSE_LIBS,--libs fuse3,-lfuse3))
$(eval $(call pkgconf,MHD_CFLAGS,--cflags libmicrohttpd,))
$(eval $(call pkgconf,MHD_LIBS,--libs libmicrohttpd,-lmicrohttpd))
$(eval $(call pkgconf,CMOCKA_CFLAGS,--cflags cmocka,))
$(eval $(call pkgconf,CMOCKA_LIBS,--libs cmocka,-lcmocka))
THREAD_LIBS := -lpthread

LIBRECFS := $(BUILD)/lib/librecfs.a
LIB_SRCS := $(wildcard fs/lib/*.c fs/lib/check/*.c)
LIB_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRCS))
LIB_HDRS := $(wildcard fs/include/recfs/*.h fs/lib/*.h fs/lib/check/*.h)

# Each component adds to these in its rules.mk.
PROGS :=
MAN_PAGES := $(wildcard man/*.[1-8])
UNIT_TESTS :=
EXTRA_CHECK_DEPS :=

.PHONY: all clean install check deps build-deps demo asan check-asan check-build check-tsan fuzz bench help
all: programs

include $(wildcard */rules.mk) $(wildcard */*/rules.mk)

programs: $(PROGS)

$(BUILD)/obj/%.o: %.c | build-deps
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LIB_CFLAGS) $(EXTRA_CFLAGS) -c -o $@ $<

# Private headers are reachable from their own folder only: the library's
# (fs/lib/*.h) from the library and the white-box tests, the recorder's
# folders from each other by "engine/engine.h", "common/util.h".
$(BUILD)/obj/fs/lib/%.o $(BUILD)/obj/tests/%.o: EXTRA_CFLAGS += -Ifs/lib
$(BUILD)/obj/recorder/%.o $(BUILD)/obj/bench/%.o: EXTRA_CFLAGS += -Irecorder
-include $(wildcard $(BUILD)/obj/*/*.d $(BUILD)/obj/*/*/*.d $(BUILD)/obj/*/*/*/*.d)

$(LIBRECFS): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

# ---------------------------------------------------------------- packages
# build-deps: what compiling and linking need; every object waits for it, so
# `make`, `make install` and `make demo` work on a machine without them.
# deps: that and what the tests and benchmarks run.
BUILD_PKGS := libfuse3-dev libaio-dev libxxhash-dev libblkid-dev uuid-dev libmicrohttpd-dev pkg-config
TEST_PKGS := fuse3 libcmocka-dev fio attr python3 python3-venv python3-prometheus-client curl util-linux \
	fdisk e2fsprogs xxd clang strace
DEB_PKGS := $(BUILD_PKGS) $(TEST_PKGS)
# $(call install_pkgs,PACKAGES): apt-get install those not installed (root only)
define install_pkgs
@missing=""; for p in $(1); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "make: installing$$missing"; \
		if [ "$$(id -u)" != 0 ]; then echo "make: need root to install:$$missing" >&2; exit 1; fi; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	fi
endef
build-deps:
	$(call install_pkgs,$(BUILD_PKGS))
deps: build-deps
	$(call install_pkgs,$(TEST_PKGS))

# ------------------------------------------------------------------ tests
# everything the tests run, in $(BUILD)
check-build: all $(UNIT_TESTS) $(EXTRA_CHECK_DEPS)

check: deps
	$(MAKE) check-build
	BUILD=$(BUILD) tests/run.sh

asan: deps
	$(MAKE) BUILD=build-asan CFLAGS="-O1 -g -fno-omit-frame-pointer" \
		SAN_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all" all

# Not 70: it tests the Python reader, whose C side (recfs ls, cat, info)
# the rest of the suite runs under the sanitizers; it would build a second
# venv from PyPI.
check-asan: deps
	RECFS_SKIP="70-python" $(MAKE) BUILD=build-asan CFLAGS="-O1 -g -fno-omit-frame-pointer" \
		SAN_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all" check

# ThreadSanitizer over the multithreaded parts: the recorder, recfsd, the
# mount, and the unit tests of their pieces.  Not 44 and 48: they bound the
# driver's resident memory, which TSan's shadow multiplies.
TSAN_TESTS := test_metrics test_vsis test_sdnotify integration/20-admin integration/3 integration/6 \
	$(patsubst %,integration/%-,40 41 42 43 45 46 47 49 4a 4b)
check-tsan: deps
	$(MAKE) BUILD=build-tsan CFLAGS="-O1 -g -fno-omit-frame-pointer" \
		SAN_CFLAGS="-fsanitize=thread" check-build
	TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1" \
		BUILD=build-tsan tests/run.sh $(TSAN_TESTS)

# the demo mounts: fuse3 beside what the build needs
demo: build-deps all
	$(call install_pkgs,fuse3)
	BUILD=$(BUILD) tools/demo.sh

# ---------------------------------------------------------------- install
install: all
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig \
		$(DESTDIR)$(PREFIX)/include/recfs $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/man/man8
	for p in $(PROGS); do \
		case $$(basename $$p) in mkfs.*|fsck.*|mount.*|recfs-mount) d=sbin;; *) d=bin;; esac; \
		install -m 0755 $$p $(DESTDIR)$(PREFIX)/$$d/; \
	done
	install -m 0644 $(LIBRECFS) $(DESTDIR)$(PREFIX)/lib/
	install -m 0644 fs/include/recfs/*.h $(DESTDIR)$(PREFIX)/include/recfs/
	for m in $(MAN_PAGES); do \
		s=$${m##*.}; install -m 0644 $$m $(DESTDIR)$(PREFIX)/share/man/man$$s/; \
	done
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(shell sed -n 's/.*RECFS_VERSION_STRING "\(.*\)"/\1/p' fs/include/recfs/recfs.h)|' \
		fs/librecfs.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/librecfs.pc
	install -d $(DESTDIR)$(SYSTEMD_UNIT_DIR)
	for u in $(SYSTEMD_UNITS); do \
		sed -e 's|@BINDIR@|$(PREFIX)/bin|g' -e 's|@SBINDIR@|$(PREFIX)/sbin|g' $$u \
			> $(DESTDIR)$(SYSTEMD_UNIT_DIR)/$$(basename $$u .in); \
	done

clean:
	rm -rf $(BUILD) build build-asan build-tsan build-fuzz

help:
	@echo "make            build every program into $(BUILD)/bin"
	@echo "make check      install missing packages, build, run every test"
	@echo "make demo       record-free demo on a 4-member file-backed pack"
	@echo "make check-asan the suite under ASan+UBSan"
	@echo "make check-tsan the recorder, recfsd and mount tests under ThreadSanitizer"
	@echo "make install    PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)"
