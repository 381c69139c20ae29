/* SPDX-License-Identifier: Apache-2.0 */
/* fedrun: the umbrella header of libfedrun. */
#ifndef FEDRUN_FEDRUN_H
#define FEDRUN_FEDRUN_H

#include "fedrun/error.h"
#include "fedrun/params.h"
#include "fedrun/rng.h"
#include "fedrun/opts.h"
#include "fedrun/host.h"
#include "fedrun/plugin.h"
#include "fedrun/vec.h"
#include "fedrun/optim.h"
#include "fedrun/io.h"
#include "fedrun/registry.h"
#include "fedrun/records.h"
#include "fedrun/text.h"
#include "fedrun/bleu.h"
#include "fedrun/backend.h"
#include "fedrun/transport.h"

#endif
