#include "runtime/checkpointer.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/errors.h"
#include "core/log.h"
#include "core/stop_signal.h"

namespace gradshare::runtime {

namespace fs = std::filesystem;

namespace {
constexpr const char* kPrefix = "ckpt-";

// Checkpoint files of a directory, newest (highest iteration) first.
std::vector<fs::path> list_checkpoints(const std::string& directory) {
  std::vector<fs::path> files;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(directory, error)) {
    const auto name = entry.path().filename().string();
    if (name.rfind(kPrefix, 0) == 0 && entry.path().extension() == ".h5")
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
    return a.filename().string() > b.filename().string();
  });
  return files;
}
}  // namespace

void log_stop_request(const std::string& plan, bool other_ranks, const comm::Job& job) {
  std::string line = std::string(core::stop_signal_name()) + " received: " + plan;
  if (other_ranks && !job.fault_tolerant())
    line += " (if mpirun sent it because a rank was lost, `mpirun --with-ft ulfm` with "
            "fault_tolerance.spares would have kept the job alive)";
  core::log_warn(line);
}

std::string checkpoint_file_name(std::int64_t iteration) {
  char name[64];
  std::snprintf(name, sizeof name, "%s%012lld.h5", kPrefix, static_cast<long long>(iteration));
  return name;
}

std::string worker_part_name(std::int64_t iteration, int rank) {
  char name[96];
  std::snprintf(name, sizeof name, "%s%012lld.parts/worker-%d.h5", kPrefix,
                static_cast<long long>(iteration), rank);
  return name;
}

std::optional<std::string> newest_checkpoint(const report::RunDirectory& directory) {
  const auto files = list_checkpoints(directory.checkpoint_dir());
  if (files.empty()) return std::nullopt;
  return files.front().string();
}

std::string resume_point(const report::RunDirectory& directory) {
  const auto checkpoint = newest_checkpoint(directory);
  return checkpoint ? *checkpoint : "the start (no checkpoint written yet)";
}

Checkpointer::Checkpointer(RunContext& context)
    : directory_(context.run_directory.checkpoint_dir()),
      metrics_(context.metrics),
      every_steps_(context.config.checkpoint.every_steps),
      every_seconds_(context.config.checkpoint.every_seconds),
      every_epoch_(context.config.checkpoint.every_epoch),
      keep_(context.config.checkpoint.keep) {}

bool Checkpointer::due(std::int64_t step) const {
  // At the multiples of every_steps: a checkpoint that lands a few steps after it was due (an
  // asynchronous strategy's master collects state from the workers first) does not push the
  // next one back, so the newest is never more than every_steps behind for long.
  if (every_steps_ > 0 && step / every_steps_ > last_step_ / every_steps_) return true;
  return every_seconds_ > 0 && since_last_.seconds() >= every_seconds_;
}

void Checkpointer::mark_written(std::int64_t step) {
  last_step_ = step;
  since_last_.restart();
}

std::string checkpoint_path(const std::string& directory, const std::string& name) {
  return directory + "/" + name;
}

std::string Checkpointer::write(const ckpt::Checkpoint& checkpoint) {
  const std::string name = checkpoint_file_name(checkpoint.iteration);
  const std::string path = checkpoint_path(directory_, name);
  core::Stopwatch clock;
  ckpt::write_checkpoint(path, checkpoint);
  const double seconds = clock.seconds();
  const auto bytes = static_cast<std::int64_t>(fs::file_size(path));
  std::int64_t part_bytes = 0;
  for (const auto& part : checkpoint.worker_parts)
    part_bytes += static_cast<std::int64_t>(fs::file_size(checkpoint_path(directory_, part)));
  char line[512];
  if (checkpoint.worker_parts.empty())
    std::snprintf(line, sizeof line, "checkpoint %s (%.1f MB, %.3f s)", path.c_str(),
                  static_cast<double>(bytes) / 1e6, seconds);
  else
    std::snprintf(line, sizeof line, "checkpoint %s (%.1f MB, %.3f s; %zu workers' parts %.1f MB)",
                  path.c_str(), static_cast<double>(bytes) / 1e6, seconds,
                  checkpoint.worker_parts.size(), static_cast<double>(part_bytes) / 1e6);
  core::log_info(line);
  metrics_.write(report::JsonLine()
                     .add("kind", "checkpoint")
                     .add("step", checkpoint.iteration)
                     .add("epochs_done", checkpoint.epoch)
                     .add("file", name)
                     .add("bytes", bytes + part_bytes)
                     .add("part_bytes", part_bytes)
                     .add("seconds", seconds));
  mark_written(checkpoint.iteration);
  prune(checkpoint.iteration);
  return path;
}

void Checkpointer::prune(std::int64_t iteration) const {
  const auto files = list_checkpoints(directory_);
  std::error_code error;
  for (std::size_t i = static_cast<std::size_t>(keep_); i < files.size(); ++i) {
    fs::remove(files[i], error);
    fs::remove_all(fs::path(files[i]).replace_extension(".parts"), error);
  }
  // Parts no checkpoint links: left by a checkpoint whose master did not get to write it.
  for (const auto& entry : fs::directory_iterator(directory_, error)) {
    const auto& parts = entry.path();
    if (parts.extension() != ".parts" || parts.filename().string().rfind(kPrefix, 0) != 0) continue;
    const auto of = fs::path(parts).replace_extension(".h5");
    if (!fs::exists(of) && of.filename().string() < checkpoint_file_name(iteration))
      fs::remove_all(parts, error);
  }
}

namespace {
ckpt::Checkpoint announce_resume(RunContext& context, ckpt::Checkpoint checkpoint,
                                 const std::string& path) {
  core::log_info("resuming from " + path + " (iteration " + std::to_string(checkpoint.iteration) +
                 ", epoch " + std::to_string(checkpoint.epoch + 1) + ")");
  context.metrics.write(report::JsonLine()
                            .add("kind", "resume")
                            .add("checkpoint", path)
                            .add("iteration", checkpoint.iteration)
                            .add("epoch", checkpoint.epoch + 1));
  return checkpoint;
}
}  // namespace

std::optional<ckpt::Checkpoint> Checkpointer::find_resume(RunContext& context) {
  const auto& resume = context.config.checkpoint.resume;
  if (resume == "never") return std::nullopt;
  if (resume != "auto") {
    return announce_resume(context, ckpt::read_checkpoint(resume), resume);
  }
  for (const auto& file : list_checkpoints(context.run_directory.checkpoint_dir())) {
    try {
      return announce_resume(context, ckpt::read_checkpoint(file.string()), file.string());
    } catch (const core::UserError& error) {
      core::log_warn(std::string("skipping unusable checkpoint: ") + error.what());
    }
  }
  return std::nullopt;
}

}  // namespace gradshare::runtime
