// report_command.cpp: report_command (see report_command.h).
#include "report/report_command.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/errors.h"
#include "report/html_report.h"
#include "report/png_chart.h"
#include "report/png_writer.h"
#include "report/report_charts.h"
#include "report/run_data.h"

namespace gradshare::report {

namespace fs = std::filesystem;

namespace {

struct OutputFile {
  fs::path path;
  std::string bytes;
};

// Every file to a temporary name first, then all renamed: a failure leaves no partial report.
void write_all(const std::vector<OutputFile>& files) {
  std::vector<fs::path> temporaries;
  const auto clean_up = [&] {
    for (const auto& t : temporaries) {
      std::error_code ignored;
      fs::remove(t, ignored);
    }
  };
  for (const auto& file : files) {
    fs::path temporary = file.path;
    temporary.replace_filename("." + file.path.filename().string() + ".tmp-" + std::to_string(getpid()));
    temporaries.push_back(temporary);
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(file.bytes.data(), static_cast<std::streamsize>(file.bytes.size()));
    out.close();
    if (!out) {
      clean_up();
      throw core::RuntimeError(temporary.string() + ": cannot write the report");
    }
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::error_code error;
    fs::rename(temporaries[i], files[i].path, error);
    if (error) {
      clean_up();
      throw core::RuntimeError(files[i].path.string() + ": cannot write the report: " + error.message());
    }
  }
}

}  // namespace

int report_command(const std::vector<std::string>& args) {
  std::vector<std::string> directories;
  std::string output;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-o" || args[i] == "--output") {
      if (i + 1 >= args.size()) throw core::UserError("report: " + args[i] + " needs a file name");
      output = args[++i];
    } else if (!args[i].empty() && args[i][0] == '-') {
      throw core::UserError("report: unknown option '" + args[i] + "'");
    } else {
      directories.push_back(args[i]);
    }
  }
  if (directories.empty())
    throw core::UserError("report: missing run directory (see gradshare report --help)");
  const fs::path page = output.empty() ? fs::path(directories.front()) / "report.html" : fs::path(output);
  const fs::path folder = page.has_parent_path() ? page.parent_path() : fs::path(".");
  std::error_code error;
  if (!fs::is_directory(folder, error))
    throw core::UserError("report: " + page.string() + ": the folder " + folder.string() + " does not exist");
  if (page.filename().empty() || fs::is_directory(page, error))
    throw core::UserError("report: " + page.string() + " is a folder, not a file name");

  std::vector<RunData> runs;
  for (const auto& directory : directories) runs.push_back(RunData::load(directory));

  const std::string stem = page.extension() == ".html" || page.extension() == ".htm" ? page.stem().string()
                                                                                   : page.filename().string();
  const ReportCharts charts = build_charts(runs);
  std::vector<OutputFile> files = {{page, render_html(runs, charts, stem)}};
  const auto add_pngs = [&](const ChartGroup& group) {
    for (const auto& spec : group.charts) {
      const auto png = encode_png(render_bitmap(lay_out(spec)));
      files.push_back({folder / png_name(stem, spec.id), std::string(png.begin(), png.end())});
    }
  };
  for (const auto& group : charts.overlay) add_pngs(group);
  for (const auto& group : charts.per_run) add_pngs(group);
  write_all(files);
  std::printf("report: %s (%.0f KB) and %zu PNG charts beside it\n", page.string().c_str(),
              static_cast<double>(files.front().bytes.size()) / 1024.0, files.size() - 1);
  return core::kExitOk;
}

}  // namespace gradshare::report
