#include "ckpt/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "ckpt/hdf5_file.h"
#include "core/errors.h"

namespace gradshare::ckpt {

namespace fs = std::filesystem;

namespace {

void fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) throw core::RuntimeError(path + ": cannot open for fsync");
  const int status = ::fsync(fd);
  ::close(fd);
  if (status != 0) throw core::RuntimeError(path + ": fsync failed");
}

// The bytes of the float arrays a checkpoint holds (what the file needs at least).
std::uintmax_t payload_bytes(const Checkpoint& c) {
  std::uintmax_t floats =
      c.parameters.size() + c.buffers.size() + c.residuals.size() + c.thresholds.size();
  for (const auto& buffer : c.optimizer_state) floats += buffer.values.size();
  for (const auto& worker : c.worker_optimizers)
    for (const auto& buffer : worker.buffers) floats += buffer.values.size();
  return 4 * floats;
}

// Why a write failed, where the file system says so: "no space left on device" (ENOSPC, or
// less free space than the checkpoint needs), else nothing.
std::string space_cause(const fs::path& directory, std::uintmax_t needed, int saved_errno) {
  std::error_code error;
  const auto space = fs::space(directory, error);
  if (saved_errno != ENOSPC && (error || space.available >= needed)) return "";
  char text[200];
  std::snprintf(text, sizeof text, "; No space left on device: %ju bytes free in %s, the checkpoint needs about %ju",
                error ? std::uintmax_t{0} : space.available, directory.c_str(), needed);
  return text;
}

// /model/<layer>/<role>: the view's values of `flat` in its shape, with its offset into `flat`
// as attribute `offset_name`.
void write_view(Hdf5File& file, const std::vector<float>& flat, const TensorView& view,
                const char* offset_name) {
  GS_CHECK(view.offset + view.size <= flat.size(),
           "view " + view.layer + "/" + view.role + " out of range");
  std::vector<hsize_t> shape(view.shape.begin(), view.shape.end());
  const std::string dataset = "/model/" + view.layer + "/" + view.role;
  file.write_floats(dataset, flat.data() + view.offset, shape);
  file.write_attribute(dataset, offset_name, static_cast<std::int64_t>(view.offset));
}

// `group` with attribute `step` and a dataset of n floats per buffer.
void write_optimizer(Hdf5File& file, const std::string& group, const OptimizerState& state,
                     std::size_t n, const std::string& whose) {
  file.create_group(group);
  file.write_attribute(group, "step", state.step);
  for (const auto& buffer : state.buffers) {
    GS_CHECK(buffer.values.size() == n,
             whose + "'s optimizer state '" + buffer.name + "' has the wrong size");
    file.write_floats(group + "/" + buffer.name, buffer.values.data(), {n});
  }
}

void write_contents(Hdf5File& file, const Checkpoint& c) {
  const std::size_t n = c.parameters.size();
  GS_CHECK(n > 0, "a checkpoint needs parameters");
  file.write_floats("/parameters", c.parameters.data(), {n});
  for (const auto& view : c.views) write_view(file, c.parameters, view, "offset");
  if (!c.buffers.empty()) file.write_floats("/buffers", c.buffers.data(), {c.buffers.size()});
  for (const auto& view : c.buffer_views) write_view(file, c.buffers, view, "buffer_offset");
  for (const auto& buffer : c.optimizer_state) {
    GS_CHECK(buffer.values.size() == n, "optimizer state '" + buffer.name + "' has the wrong size");
    file.write_floats("/optimizer/" + buffer.name, buffer.values.data(), {n});
  }
  for (std::size_t w = 0; w < c.worker_optimizers.size(); ++w)
    write_optimizer(file, "/workers/" + std::to_string(w) + "/optimizer", c.worker_optimizers[w], n,
                    "worker " + std::to_string(w));
  GS_CHECK(c.worker_parts.empty() || (c.worker_optimizers.empty() && c.residuals.empty()),
           "a checkpoint with worker parts holds no worker state itself");
  for (std::size_t w = 0; w < c.worker_parts.size(); ++w)
    file.link_external("/workers/" + std::to_string(w), c.worker_parts[w]);
  if (!c.thresholds.empty())
    file.write_floats("/encoding/thresholds", c.thresholds.data(), {c.thresholds.size()});
  if (!c.residuals.empty()) {
    GS_CHECK(c.residuals.size() % n == 0, "residuals are not a whole number of parameter vectors");
    file.write_floats("/encoding/residuals", c.residuals.data(), {c.residuals.size() / n, n});
  }
  if (!c.version_vector.empty()) file.write_uints("/version_vector", c.version_vector);

  file.write_attribute("/", "format_version", kFormatVersion);
  file.write_attribute("/", "gradshare_version", c.gradshare_version);
  file.write_attribute("/", "config", c.config_yaml);
  file.write_attribute("/", "strategy", c.strategy);
  file.write_attribute("/", "iteration", c.iteration);
  file.write_attribute("/", "epoch", c.epoch);
  file.write_attribute("/", "partitions_done", c.partitions_done);
  file.write_attribute("/", "rng_state",
                       std::vector<std::uint64_t>(c.rng_state.begin(), c.rng_state.end()));
  file.write_attribute("/", "world_size", c.world_size);
  file.write_attribute("/", "created", c.created);
  file.write_attribute("/", "optimizer_step", c.optimizer_step);
  // Written last: a file without it was interrupted.
  file.write_attribute("/", "complete", std::int64_t{1});
}

// The datasets of `group`, each of n floats.
std::vector<NamedBuffer> read_buffers(const Hdf5File& file, const std::string& group,
                                      std::size_t n) {
  std::vector<NamedBuffer> buffers;
  for (const auto& name : file.list_group(group)) {
    auto values = file.read_floats(group + "/" + name);
    if (values.size() != n)
      throw std::runtime_error(file.path() + ": optimizer state '" + group + "/" + name + "' has " +
                               std::to_string(values.size()) + " values, parameters " +
                               std::to_string(n));
    buffers.push_back({name, std::move(values)});
  }
  return buffers;
}

// /workers/0 .. /workers/W-1, every one present (HDF5 lists "10" before "2": sorted here).
std::vector<OptimizerState> read_worker_optimizers(const Hdf5File& file, std::size_t n) {
  const auto names = file.list_group("/workers");
  std::vector<OptimizerState> states(names.size());
  std::vector<bool> seen(names.size(), false);
  for (const auto& name : names) {
    const bool numeric =
        !name.empty() && name.size() <= 9 &&
        std::all_of(name.begin(), name.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    const std::size_t w = numeric ? std::stoul(name) : names.size();
    if (w >= names.size() || seen[w])
      throw std::runtime_error(file.path() + ": '/workers/" + name + "' is not one of workers 0.." +
                               std::to_string(names.size() - 1));
    seen[w] = true;
    const std::string group = "/workers/" + name + "/optimizer";
    states[w].step = file.read_int_attribute(group, "step");
    states[w].buffers = read_buffers(file, group, n);
  }
  return states;
}

// Every /workers/<w> that links to a part file finds it (HDF5 resolves a relative link from
// the checkpoint's directory): a missing part is named, not read as an absent residual.
void require_parts(const Hdf5File& file) {
  const auto directory = fs::path(file.path()).parent_path();
  for (const auto& name : file.list_group("/workers")) {
    const auto target = file.external_target("/workers/" + name);
    if (target &&
        !fs::exists(fs::path(*target).is_absolute() ? fs::path(*target) : directory / *target))
      throw std::runtime_error(file.path() + ": worker " + name + "'s part " + *target +
                               " is missing");
  }
}

Checkpoint read_contents(const Hdf5File& file) {
  Checkpoint c;
  if (!file.has_attribute("/", "complete"))
    throw std::runtime_error(file.path() + ": incomplete checkpoint (no 'complete' marker)");
  const auto version = file.read_int_attribute("/", "format_version");
  if (version != kFormatVersion)
    throw std::runtime_error(file.path() + ": checkpoint format version " +
                             std::to_string(version) + ", this gradshare reads version " +
                             std::to_string(kFormatVersion));
  c.gradshare_version = file.read_string_attribute("/", "gradshare_version");
  c.config_yaml = file.read_string_attribute("/", "config");
  c.strategy = file.read_string_attribute("/", "strategy");
  c.iteration = file.read_int_attribute("/", "iteration");
  c.epoch = file.read_int_attribute("/", "epoch");
  c.partitions_done = file.read_int_list_attribute("/", "partitions_done");
  const auto rng = file.read_uint_list_attribute("/", "rng_state");
  if (rng.size() != 4)
    throw std::runtime_error(file.path() + ": attribute 'rng_state' must hold 4 values");
  std::copy(rng.begin(), rng.end(), c.rng_state.begin());
  c.world_size = file.read_int_attribute("/", "world_size");
  c.created = file.read_string_attribute("/", "created");
  c.optimizer_step = file.read_int_attribute("/", "optimizer_step");

  std::vector<hsize_t> shape;
  c.parameters = file.read_floats("/parameters", &shape);
  const std::size_t n = c.parameters.size();
  if (shape.size() != 1 || n == 0)
    throw std::runtime_error(file.path() + ": '/parameters' must be a non-empty vector");
  if (file.has_object("/buffers")) c.buffers = file.read_floats("/buffers");
  if (file.has_object("/model")) {
    for (const auto& layer : file.list_group("/model")) {
      for (const auto& role : file.list_group("/model/" + layer)) {
        const std::string dataset = "/model/" + layer + "/" + role;
        std::vector<hsize_t> view_shape;
        const auto values = file.read_floats(dataset, &view_shape);
        const bool buffer = file.has_attribute(dataset, "buffer_offset");
        const auto offset = file.read_int_attribute(dataset, buffer ? "buffer_offset" : "offset");
        const std::size_t limit = buffer ? c.buffers.size() : n;
        if (offset < 0 || static_cast<std::size_t>(offset) + values.size() > limit)
          throw std::runtime_error(file.path() + ": '" + dataset + "' lies outside the " +
                                   (buffer ? "buffers" : "parameters"));
        (buffer ? c.buffer_views : c.views)
            .push_back({layer,
                        role,
                        {view_shape.begin(), view_shape.end()},
                        static_cast<std::size_t>(offset),
                        values.size()});
      }
    }
    const auto by_offset = [](const TensorView& a, const TensorView& b) {
      return a.offset < b.offset;
    };
    std::sort(c.views.begin(), c.views.end(), by_offset);
    std::sort(c.buffer_views.begin(), c.buffer_views.end(), by_offset);
  }
  if (file.has_object("/optimizer")) c.optimizer_state = read_buffers(file, "/optimizer", n);
  if (file.has_object("/workers")) {
    require_parts(file);
    c.worker_optimizers = read_worker_optimizers(file, n);
  }
  if (file.has_object("/encoding/thresholds"))
    c.thresholds = file.read_floats("/encoding/thresholds");
  if (!c.worker_optimizers.empty() && file.has_object("/workers/0/residual")) {
    // Parts: the single state is worker 0's, as a file without parts holds it.
    if (c.optimizer_state.empty()) c.optimizer_state = c.worker_optimizers.front().buffers;
    for (std::size_t w = 0; w < c.worker_optimizers.size(); ++w) {
      const std::string dataset = "/workers/" + std::to_string(w) + "/residual";
      const auto residual = file.read_floats(dataset);
      if (residual.size() != n)
        throw std::runtime_error(file.path() + ": '" + dataset + "' must hold " +
                                 std::to_string(n) + " values");
      c.residuals.insert(c.residuals.end(), residual.begin(), residual.end());
    }
  } else if (file.has_object("/encoding/residuals")) {
    std::vector<hsize_t> residual_shape;
    c.residuals = file.read_floats("/encoding/residuals", &residual_shape);
    if (residual_shape.size() != 2 || residual_shape[1] != n)
      throw std::runtime_error(file.path() + ": '/encoding/residuals' must be [workers, " +
                               std::to_string(n) + "]");
  }
  if (file.has_object("/version_vector")) c.version_vector = file.read_uints("/version_vector");
  return c;
}

// Writes `path` through `contents` under a temporary name, fsyncs, renames, fsyncs the
// directory; RuntimeError "<what> not written: ..." on failure, the temporary file removed.
template <typename Contents>
void write_atomically(const std::string& path, const char* what, std::uintmax_t bytes,
                      Contents&& contents) {
  const fs::path final_path(path);
  const fs::path directory =
      final_path.has_parent_path() ? final_path.parent_path() : fs::path(".");
  const std::string temporary =
      (directory / ("." + final_path.filename().string() + ".tmp")).string();
  errno = 0;
  try {
    {
      Hdf5File file = Hdf5File::create(temporary);
      contents(file);
      file.flush();
    }
    fsync_path(temporary, O_RDONLY);
    fs::rename(temporary, final_path);
    fsync_path(directory.string(), O_RDONLY | O_DIRECTORY);
  } catch (const std::exception& error) {
    const int saved_errno = errno;
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw core::RuntimeError(std::string(what) + " not written: " + error.what() +
                             space_cause(directory, bytes, saved_errno));
  }
}

}  // namespace

void write_checkpoint(const std::string& path, const Checkpoint& checkpoint) {
  write_atomically(path, "checkpoint", payload_bytes(checkpoint),
                   [&](Hdf5File& file) { write_contents(file, checkpoint); });
}

void write_worker_part(const std::string& path, const WorkerPart& part) {
  const std::size_t n = part.residual.size();
  std::uintmax_t floats = n;
  for (const auto& buffer : part.optimizer.buffers) floats += buffer.values.size();
  std::error_code error;
  fs::create_directories(fs::path(path).parent_path(), error);
  write_atomically(path, "checkpoint part", 4 * floats, [&](Hdf5File& file) {
    GS_CHECK(n > 0, "a worker part needs a residual");
    write_optimizer(file, "/optimizer", part.optimizer, n, "the worker");
    file.write_floats("/residual", part.residual.data(), {n});
    file.write_attribute("/", "complete", std::int64_t{1});
  });
}

void skip_hdf5_exit_cleanup() { H5dont_atexit(); }

OptimizerState optimizer_for_worker(const Checkpoint& checkpoint, std::size_t worker) {
  if (checkpoint.worker_optimizers.empty())
    return {checkpoint.optimizer_step, checkpoint.optimizer_state};
  return checkpoint.worker_optimizers[worker % checkpoint.worker_optimizers.size()];
}

Checkpoint read_checkpoint(const std::string& path) {
  if (!fs::exists(path)) throw core::UserError(path + ": no such checkpoint");
  try {
    Hdf5File file = Hdf5File::open_read(path);
    return read_contents(file);
  } catch (const core::UserError&) {
    throw;
  } catch (const std::exception& error) {
    throw core::UserError(error.what());
  }
}

}  // namespace gradshare::ckpt
