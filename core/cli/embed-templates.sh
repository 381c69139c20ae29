#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# embed-templates.sh SRCDIR FILE...: writes, on standard output, the C source
# of cli_templates[] (cmd_new.h): each FILE (relative to SRCDIR) as a string
# named by its base name, so that `fedrun new` needs no data files at run
# time. A first line holding an SPDX tag is the template file's own and is
# left out of the text.
set -e
srcdir=$1
shift
echo '/* SPDX-License-Identifier: Apache-2.0 */'
echo '/* Generated from core/cli/templates/ by core/cli/embed-templates.sh: do not edit. */'
# (cli/: the generated file is in the build tree, cmd_new.h in the source
# tree's core/cli, which AM_CPPFLAGS reaches as -I$(top_srcdir)/core)
echo '#include "cli/cmd_new.h"'
i=0
for f in "$@"; do
	echo "static const char tpl$i[] ="
	sed -e '1{' -e '/SPDX-License-Identifier/d' -e '}' \
	    -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/	/\\t/g' -e 's/?/\\?/g' \
	    -e 's/^/	"/' -e 's/$/\\n"/' "$srcdir/$f"
	echo '	;'
	i=$((i + 1))
done
echo 'const struct cli_template cli_templates[] = {'
i=0
for f in "$@"; do
	echo "	{\"${f##*/}\", tpl$i},"
	i=$((i + 1))
done
echo '	{0, 0},'
echo '};'
