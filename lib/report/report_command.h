// report_command.h: `gradshare report RUN_DIR [RUN_DIR ...] [-o OUT.html]`: reads every run
// directory (core::UserError, nothing written, when one is missing or its metrics.jsonl is
// malformed), then writes OUT.html (default: report.html in the first run directory) and one
// PNG per chart beside it (OUT-<chart>.png), each to a temporary name renamed at the end.
#pragma once

#include <string>
#include <vector>

namespace gradshare::report {

// args: what follows `report` on the command line. Returns the exit code.
int report_command(const std::vector<std::string>& args);

}  // namespace gradshare::report
