// banner.h: the one-line job banner rank 0 prints, and the build facts `--version` reports.
#pragma once

#include <string>

#include "runtime/run_context.h"

namespace gradshare::cli {

bool built_with_cuda();
// gradshare 0.1.0 | MPI: Open MPI v5.0.7 | ranks 5 (1 master + 4 workers) | strategy ...
std::string banner(const runtime::RunContext& context);
// The text of `gradshare --version`.
std::string version_text();

}  // namespace gradshare::cli
