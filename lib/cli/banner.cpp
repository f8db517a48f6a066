#include "cli/banner.h"

#include "comm/mpi/library_info.h"
#include "nn/torchscript_loader.h"
#include "train/strategy_registry.h"
#include "runtime/training_compute.h"

namespace gradshare::cli {

using comm::built_with_ulfm;
using comm::mpi_library_version;
using runtime::RunContext;

bool built_with_cuda() {
#ifdef GRADSHARE_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::string banner(const RunContext& context) {
  const auto& cfg = context.config;
  std::string text = "gradshare " GRADSHARE_VERSION " | MPI: " + mpi_library_version() +
                     " | ranks " + std::to_string(context.size);
  if (context.size > 1)
    text += " (1 master + " + std::to_string(context.worker_count()) + " workers)";
  text += " | strategy " + cfg.training.strategy;
  const auto& strategy = train::strategy_named(cfg.training.strategy);
  if (strategy.banner) text += strategy.banner(cfg, context.worker_count());
  const std::string device = runtime::resolve_compute_device(cfg);
  if (device != "cpu") text += " | compute " + device;
  if (!cfg.model.torchscript.empty())
    text += " | model TorchScript (" + nn::torchscript_support() + ")";
  return text;
}

std::string version_text() {
  return std::string("gradshare ") + GRADSHARE_VERSION + "\nMPI: " + mpi_library_version() +
         "\nULFM: " + (built_with_ulfm() ? "yes" : "no") +
         "\nCUDA: " +
         (built_with_cuda() ? "yes (compute.device: cuda runs the workers' forward and backward "
                              "passes on the GPU)"
                            : "no") +
         "\nTorchScript models: " + nn::torchscript_support() + "\n";
}

}  // namespace gradshare::cli
