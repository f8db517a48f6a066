// checkpoint.h: the HDF5 checkpoint (and final model) file of a run.
//
// Layout (format version 1), readable with h5dump and h5py:
//   /                       attributes: format_version, gradshare_version, config (resolved YAML),
//                           strategy, iteration, epoch, partitions_done (int64 list), rng_state
//                           (4 x uint64), world_size, created (ISO time), complete (written last)
//   /parameters             float32 [n]: the flat parameter vector
//   /model/<layer>/<role>   float32 with the layer's shape (kernel | bias), a copy in Keras'
//                           spirit; attribute `offset` into /parameters. A TorchScript module's
//                           tensors go under their module path and name (/model/stage1.bn1/weight),
//                           its buffers too, with attribute `buffer_offset` into /buffers instead
//   /buffers                optional float32 [m]: a TorchScript module's buffers (batch norm's
//                           running statistics, num_batches_tracked as float), in module order
//   /optimizer/<name>       float32 [n]: updater state (root attribute `optimizer_step`); for
//                           Downpour the server optimizer's, its shards concatenated
//   /workers/<w>/optimizer  optional: worker w's own updater state (w = 0, 1, ... in rank
//                           order), where workers keep different ones: attribute `step`,
//                           datasets <name> float32 [n]
//   /workers/<w>            or, with worker parts (gradient sharing), an external link to the
//                           root of worker w's part file, which the worker wrote itself beside
//                           this one (checkpoints/ckpt-<iteration>.parts/worker-<rank>.h5, the
//                           link relative to this file's directory): /optimizer as above and
//                           /residual float32 [n]; /encoding/residuals is then absent
//   /encoding/thresholds    float32 [workers]: per-worker tau (gradient sharing)
//   /encoding/residuals     float32 [workers, n]: every worker's residual (gradient sharing:
//                           the quanta not sent yet; most of an element's updates wait there)
//   /version_vector         uint64 [ranks]: highest update seq applied per origin
// Every dataset is chunked with a Fletcher32 checksum. Files are written to a temporary name in
// the same directory, fsynced, renamed, and the directory fsynced, so a crash never leaves a
// half-written checkpoint under the final name. Worker parts are written so too, each before
// the master's file that links them: a checkpoint file exists only once its parts do.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace gradshare::ckpt {

inline constexpr std::int64_t kFormatVersion = 1;

struct TensorView {
  std::string layer;
  std::string role;
  std::vector<std::int64_t> shape;
  std::size_t offset = 0;
  std::size_t size = 0;
};

struct NamedBuffer {
  std::string name;
  std::vector<float> values;
};

// One optimizer's state: its step count and its buffers (each in the parameter layout).
struct OptimizerState {
  std::int64_t step = 0;
  std::vector<NamedBuffer> buffers;
};

struct Checkpoint {
  std::string gradshare_version;
  std::string config_yaml;
  std::string strategy;
  std::int64_t iteration = 0;
  std::int64_t epoch = 0;
  std::vector<std::int64_t> partitions_done;
  std::array<std::uint64_t, 4> rng_state{};
  std::int64_t world_size = 1;
  std::string created;
  std::vector<float> parameters;
  std::vector<TensorView> views;
  std::vector<float> buffers;
  std::vector<TensorView> buffer_views;  // offsets into buffers
  std::vector<NamedBuffer> optimizer_state;
  std::int64_t optimizer_step = 0;
  // Each worker's own optimizer state, in worker order; empty where the single state above
  // serves every worker (files written before the list existed, identical states).
  std::vector<OptimizerState> worker_optimizers;
  std::vector<float> thresholds;
  std::vector<float> residuals;  // worker-major [workers][n], flattened
  std::vector<std::uint64_t> version_vector;
  // Written only: worker w's part file (relative to the checkpoint's directory), where its
  // optimizer state and residual are (worker_optimizers and residuals are then empty). Reading
  // brings the parts' contents into worker_optimizers and residuals and leaves this empty.
  std::vector<std::string> worker_parts;
};

// One worker's part of a checkpoint: what it alone holds. A gradient-sharing worker writes it
// itself, so that three parameter vectors per worker (Adam's two moments and the residual) do
// not cross the network to the master at every checkpoint.
struct WorkerPart {
  OptimizerState optimizer;
  std::vector<float> residual;
};

// Writes atomically, as write_checkpoint (creating the parent directory). Throws
// core::RuntimeError naming the file.
void write_worker_part(const std::string& path, const WorkerPart& part);

// Writes atomically (see above). Throws core::RuntimeError naming the file on failure; the
// temporary file is removed then.
void write_checkpoint(const std::string& path, const Checkpoint& checkpoint);

// Reads and verifies (checksums, required attributes, format version, sizes). Throws
// core::UserError naming the file and the fault.
Checkpoint read_checkpoint(const std::string& path);

// Call first thing in main, before any HDF5 call: HDF5's exit-time cleanup closes files left
// open, and a file whose close failed (a full disk) crashes it with SIGSEGV, turning a clean
// "checkpoint not written" exit 1 into 139. Every file here is closed by its owner anyway.
void skip_hdf5_exit_cleanup();

// The optimizer state worker `worker` (0-based, rank order) of a resumed run starts from: its
// own from worker_optimizers (worker % saved workers when the run has more workers than the
// checkpoint), else the single state.
OptimizerState optimizer_for_worker(const Checkpoint& checkpoint, std::size_t worker);

}  // namespace gradshare::ckpt
