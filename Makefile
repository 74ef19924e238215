# SPDX-License-Identifier: GPL-2.0
#
# Out-of-tree build of rsiw.ko:
#   make KDIR=<kernel build tree>          build rust/../rsiw.ko
#   make KDIR=<kernel build tree> clean
# The kernel must have CONFIG_RUST=y and CONFIG_INFINIBAND. A module must be
# built with the same compiler as its kernel: for a clang-built tree LLVM is
# derived from the tree's .config unless given on the command line.

KDIR ?= /lib/modules/$(shell uname -r)/build

ifeq ($(wildcard $(KDIR)/.config),)
$(error KDIR=$(KDIR) is not a configured kernel build tree (no .config); pass KDIR=<kernel build tree>)
endif

ifeq ($(origin LLVM),undefined)
ifneq ($(shell grep -x 'CONFIG_CC_IS_CLANG=y' $(KDIR)/.config),)
clang_major := $(shell sed -n 's/^CONFIG_CLANG_VERSION=\([0-9]*\)[0-9][0-9][0-9][0-9]$$/\1/p' $(KDIR)/.config)
ifneq ($(shell command -v ld.lld-$(clang_major)),)
LLVM := -$(clang_major)
else ifneq ($(shell ld.lld --version 2>/dev/null | grep -E 'LLD $(clang_major)\.'),)
LLVM := 1
else
$(error $(KDIR) was built with clang $(clang_major) but ld.lld-$(clang_major) is missing: install lld-$(clang_major) (e.g. apt-get install lld-$(clang_major)) or pass LLVM=-NN)
endif
endif
endif

ifdef LLVM
kbuild_args := LLVM=$(LLVM)
endif

# A gcc-built tree names its compiler in CONFIG_CC_VERSION_TEXT (Debian's 7.3:
# x86_64-linux-gnu-gcc-14); the module is built with that one unless CC is given.
ifeq ($(origin CC),default)
ifneq ($(shell grep -x 'CONFIG_CC_IS_GCC=y' $(KDIR)/.config),)
kernel_cc := $(shell sed -n 's/^CONFIG_CC_VERSION_TEXT="\([^ ]*\) .*/\1/p' $(KDIR)/.config)
ifneq ($(shell command -v $(kernel_cc)),)
kbuild_args += CC=$(kernel_cc)
else
$(error $(KDIR) was built with $(kernel_cc), which is not installed: install it (Debian: the gcc-NN package) or pass CC=...)
endif
endif
endif

# Kbuild rebuilds an object when its command line or a dependency changes, but a
# module's command lines name the kernel tree by relative paths, and a tree built
# earlier than the module's objects looks older: after `make KDIR=<another tree>`
# (or a tree rebuilt with another .config) the objects of the last tree would be
# linked again, and the kernel refuses the result. The tree and its .config are
# recorded in .rsiw-kdir; when they change, the module's outputs go first.
kdir_id := $(abspath $(KDIR)) $(shell cksum < $(KDIR)/.config)

all modules:
	@if [ "$$(cat .rsiw-kdir 2>/dev/null)" != "$(kdir_id)" ]; then \
	    $(MAKE) --no-print-directory clean && echo "$(kdir_id)" > .rsiw-kdir; fi
	$(MAKE) -C $(KDIR) M=$(CURDIR) $(kbuild_args) modules

# Not Kbuild's M= clean: that deletes every *.o/*.a below the module directory,
# cargo's target/ included. Remove exactly what the module build writes.
clean:
	rm -f rsiw.ko rsiw.o rsiw.mod rsiw.mod.c rsiw.mod.o .module-common.o \
	      Module.symvers modules.order rust/kapi/bindings_generated.rs .rsiw-kdir
	find . rust -maxdepth 1 -name '.*.cmd' -type f -delete
	find rust -path rust/proto -prune -o -path rust/abi -prune -o \
	     \( -name '*.o' -o -name '*.d' -o -name '.*.cmd' \) -type f -print | xargs rm -f

.PHONY: all modules clean
