# softspin.mk - make fragment for building softspin handler images and
# bare-metal RV32 programs.  Include it from a project Makefile:
#
#   OBJS = my_handler.o
#   include path/to/sdk/mk/softspin.mk
#   all: my_handler.elf                 # handler image (SOFTSPIN_KIND=handler)
#
#   prog.elf: prog.o $(SOFTSPIN_RT_BARE_OBJS)
#   	$(softspin_link_bare)           # explicit bare-metal link
#
# Compiler/linker flags and runtime sources come from ../toolchain.txt, the
# same file the softspin CLI reads, so there is one source of truth.
# Extra flags: CFLAGS/CPPFLAGS/LDFLAGS (appended after the SDK's, so e.g.
# -O2 or -DNB_CLUSTERS=2 take effect).
# SOFTSPIN_PROFILE (pspin, fpspin) picks the memory map handler images are
# linked against: $(SOFTSPIN_SDK)/link/$(SOFTSPIN_PROFILE).ld, generated from
# the NIC configuration.  For a custom configuration use
# `softspin build --config nic.toml` instead, which passes its sizes.

# Immediate (:=) so MAKEFILE_LIST still ends with this file.
ifndef SOFTSPIN_SDK
SOFTSPIN_SDK := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))..)
endif
SOFTSPIN_TOOLCHAIN := $(SOFTSPIN_SDK)/toolchain.txt
# Restored at the end, so including this file does not change the default goal.
_softspin_saved_goal := $(.DEFAULT_GOAL)
SOFTSPIN_BUILD ?= build/softspin-rt
SOFTSPIN_KIND ?= handler
SOFTSPIN_PROFILE ?= pspin

# $(call softspin_tc,KEY): the value of KEY in toolchain.txt, {sdk} expanded.
softspin_tc = $(subst {sdk},$(SOFTSPIN_SDK),$(shell sed -n 's/^$(1):[[:space:]]*//p' '$(SOFTSPIN_TOOLCHAIN)'))

# SOFTSPIN_ISA (rv32imac, corev; default: toolchain.txt's `isa:`) picks the
# compiler, linker and -march from toolchain.txt's `isa-NAME:` line.
SOFTSPIN_ISA ?= $(call softspin_tc,isa)
_softspin_isa := $(call softspin_tc,isa-$(SOFTSPIN_ISA))
ifeq ($(words $(_softspin_isa)),0)
$(error SOFTSPIN_ISA=$(SOFTSPIN_ISA): no `isa-$(SOFTSPIN_ISA):` line in $(SOFTSPIN_TOOLCHAIN))
endif

# Only replace make's built-in defaults (cc/ld); explicit settings win.
ifeq ($(origin CC),default)
CC := $(word 1,$(_softspin_isa))
endif
ifeq ($(origin LD),default)
LD := $(word 2,$(_softspin_isa))
endif

SOFTSPIN_CFLAGS := $(call softspin_tc,cflags) $(word 3,$(_softspin_isa))
# The memory map before handler.ld: ld.lld-19 evaluates handler.ld's
# DEFINED() checks against the scripts read so far.
SOFTSPIN_LDFLAGS_HANDLER := $(SOFTSPIN_SDK)/link/$(SOFTSPIN_PROFILE).ld $(call softspin_tc,ldflags-handler)
SOFTSPIN_LDFLAGS_BARE := $(call softspin_tc,ldflags-bare)

softspin_rt_objs = $(addprefix $(SOFTSPIN_BUILD)/,$(addsuffix .o,$(basename $(notdir $(1)))))
SOFTSPIN_RT_HANDLER_OBJS := $(call softspin_rt_objs,$(call softspin_tc,runtime-handler))
SOFTSPIN_RT_BARE_OBJS := $(call softspin_rt_objs,$(call softspin_tc,runtime-bare))

ifeq ($(SOFTSPIN_KIND),bare)
SOFTSPIN_RT_OBJS = $(SOFTSPIN_RT_BARE_OBJS)
else
SOFTSPIN_RT_OBJS = $(SOFTSPIN_RT_HANDLER_OBJS)
endif

SOFTSPIN_COMPILE = $(CC) $(SOFTSPIN_CFLAGS) $(CPPFLAGS) $(CFLAGS)

# Canned link recipes: all prerequisites ($^) are linked into $@.
softspin_link_handler = $(LD) $(SOFTSPIN_LDFLAGS_HANDLER) $(LDFLAGS) -o $@ $^
softspin_link_bare = $(LD) $(SOFTSPIN_LDFLAGS_BARE) $(LDFLAGS) -o $@ $^

.PHONY: softspin-check-toolchain
softspin-check-toolchain:
	@command -v $(CC) >/dev/null 2>&1 || { echo "$(CC) not found: install it with apt-get install clang-19 lld-19" >&2; exit 1; }
	@command -v $(LD) >/dev/null 2>&1 || { echo "$(LD) not found: install it with apt-get install clang-19 lld-19" >&2; exit 1; }

%.o: %.c | softspin-check-toolchain
	$(SOFTSPIN_COMPILE) -c $< -o $@

%.o: %.S | softspin-check-toolchain
	$(SOFTSPIN_COMPILE) -c $< -o $@

$(SOFTSPIN_BUILD)/%.o: $(SOFTSPIN_SDK)/src/%.c | softspin-check-toolchain
	@mkdir -p $(@D)
	$(SOFTSPIN_COMPILE) -c $< -o $@

$(SOFTSPIN_BUILD)/%.o: $(SOFTSPIN_SDK)/src/%.S | softspin-check-toolchain
	@mkdir -p $(@D)
	$(SOFTSPIN_COMPILE) -c $< -o $@

# Keep objects that only pattern rules mention (define OBJS before the
# include for this to cover them).
.SECONDARY: $(OBJS) $(SOFTSPIN_RT_HANDLER_OBJS) $(SOFTSPIN_RT_BARE_OBJS)

# Default image rule: $(OBJS) plus the runtime for SOFTSPIN_KIND.
%.elf: $(OBJS) $(SOFTSPIN_RT_OBJS) | softspin-check-toolchain
ifeq ($(SOFTSPIN_KIND),bare)
	$(softspin_link_bare)
else
	$(softspin_link_handler)
endif

.DEFAULT_GOAL := $(_softspin_saved_goal)
