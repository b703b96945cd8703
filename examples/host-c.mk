# Shared by the C host-API examples (examples/NAME/Makefile sets NAME and
# includes this): `make` builds handler.elf with `softspin build` and the
# host program against libsoftspin (pkg-config, rpath to the library, so it
# runs without LD_LIBRARY_PATH) into build/examples/NAME; `make run` runs it.
ROOT     := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
OUT      := $(ROOT)/build/examples/$(NAME)
SOFTSPIN := $(ROOT)/target/release/softspin
LIB      := $(ROOT)/target/release/libsoftspin.so
HEADER   := $(ROOT)/crates/host-c/include/softspin.h
PC       := $(ROOT)/build/c/softspin.pc
PKG      := PKG_CONFIG_PATH=$(ROOT)/build/c pkg-config
CC       ?= cc
CFLAGS   ?= -std=c11 -O2 -Wall -Wextra -Werror
# Extra arguments for the host program (the tests pass --sabotage).
ARGS     ?=

all: $(OUT)/handler.elf $(OUT)/host

run: all
	cd $(OUT) && ./host handler.elf $(ARGS)

$(OUT)/handler.elf: handler.c $(SOFTSPIN) | $(OUT)
	$(SOFTSPIN) build handler.c -o $@

# pkg-config runs in the recipe: the .pc may only just have been written.
$(OUT)/host: host.c $(HEADER) $(LIB) $(PC) | $(OUT)
	$(CC) $(CFLAGS) $$($(PKG) --cflags softspin) host.c -o $@ \
	    $$($(PKG) --libs softspin) -Wl,-rpath,$$($(PKG) --variable=libdir softspin)

$(PC):
	$(ROOT)/scripts/c-env.sh >/dev/null

# Both come from the Rust workspace; built here only if missing.
$(SOFTSPIN) $(LIB):
	cd $(ROOT) && cargo build --release -p softspin-cli -p softspin-c

$(OUT):
	mkdir -p $@

clean:
	rm -rf $(OUT)

.PHONY: all run clean
