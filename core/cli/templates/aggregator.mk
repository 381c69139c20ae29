# SPDX-License-Identifier: Apache-2.0
# Builds @NAME@.so from @NAME@.c (written by `fedrun new aggregator`).
# Against an installed fedrun, pkg-config finds the SDK:
#     make
# Against a fedrun build tree that is not installed, name its headers and
# library instead (and run its ./fedrun with FEDRUN_PLUGIN_PATH set):
#     make FEDRUN_CFLAGS=-I/path/to/fedrun/core/include \
#          FEDRUN_LIBS='-L/path/to/fedrun-build/core/.libs -lfedrun'
CC = cc
CFLAGS = -O2 -g -Wall -Wextra
PKG_CONFIG = pkg-config
FEDRUN_CFLAGS = `$(PKG_CONFIG) --cflags fedrun`
FEDRUN_LIBS = `$(PKG_CONFIG) --libs fedrun`
FEDRUN = fedrun

all: @NAME@.so

@NAME@.so: @NAME@.c
	$(CC) -shared -fPIC $(CFLAGS) $(FEDRUN_CFLAGS) -o $@ @NAME@.c $(FEDRUN_LIBS) -lm $(LDFLAGS)

# The ABI and behaviour checks, then the test pipeline.
check: @NAME@.so
	$(FEDRUN) check-aggregator --allow-plugin-paths ./@NAME@.so
	$(FEDRUN) --allow-plugin-paths @NAME@-test.json

clean:
	rm -f @NAME@.so

.PHONY: all check clean
