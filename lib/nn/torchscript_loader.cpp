#include "nn/torchscript_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <vector>

#include "core/errors.h"

namespace gradshare::nn {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& path, const std::string& reason) {
  throw core::UserError("model.torchscript: " + path + ": " + reason);
}

#ifdef GRADSHARE_WITH_TORCH
using LoadFunction = ModuleNetwork* (*)(const char*, const std::int64_t*, std::size_t,
                                        std::int64_t, int, char*, std::size_t);

constexpr const char* kPlugin = "libgradshare_torch.so";

fs::path executable_dir() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  return error ? fs::path() : self.parent_path();
}

// Where the plugin may be: $GRADSHARE_TORCH_PLUGIN, beside the binary (the build tree),
// <prefix>/<libdir>/gradshare (an install), the build tree this binary came from (tests).
std::vector<fs::path> plugin_candidates() {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("GRADSHARE_TORCH_PLUGIN"); env != nullptr && *env != '\0')
    return {env};
  const fs::path dir = executable_dir();
  if (!dir.empty()) {
    candidates.push_back(dir / kPlugin);
    candidates.push_back(dir.parent_path() / GRADSHARE_INSTALL_LIBDIR / "gradshare" / kPlugin);
  }
  candidates.push_back(fs::path(GRADSHARE_BUILD_DIR) / kPlugin);
  return candidates;
}

LoadFunction plugin_loader() {
  // Never closed: the module's code serves the process until it ends.
  static LoadFunction function = []() -> LoadFunction {
    std::string tried;
    for (const fs::path& candidate : plugin_candidates()) {
      if (!fs::exists(candidate)) {
        tried += (tried.empty() ? "" : ", ") + candidate.string();
        continue;
      }
      void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) {
        const char* reason = dlerror();
        throw core::UserError("model.torchscript: cannot load " + candidate.string() + " (" +
                              (reason ? reason : "unknown") +
                              "): install libtorch (apt-get install libtorch-dev) or put its "
                              "library folder on LD_LIBRARY_PATH");
      }
      auto* load = reinterpret_cast<LoadFunction>(dlsym(handle, "gradshare_torch_load"));
      if (load == nullptr)
        throw core::UserError("model.torchscript: " + candidate.string() +
                              " has no gradshare_torch_load: rebuild gradshare");
      return load;
    }
    throw core::UserError(std::string("model.torchscript: ") + kPlugin + " not found (looked at " +
                          tried + "): reinstall gradshare, or set GRADSHARE_TORCH_PLUGIN");
  }();
  return function;
}
#endif

}  // namespace

std::unique_ptr<ModuleNetwork> load_torchscript(const std::string& path, const Shape& input_shape,
                                                std::size_t classes, int threads) {
  std::error_code error;
  if (!fs::is_regular_file(path, error)) fail(path, "no such file");
  if (access(path.c_str(), R_OK) != 0) fail(path, "not readable");
#ifdef GRADSHARE_WITH_TORCH
  std::array<char, 2048> message{};
  ModuleNetwork* network =
      plugin_loader()(path.c_str(), input_shape.data(), input_shape.size(),
                      static_cast<std::int64_t>(classes), threads, message.data(), message.size());
  if (network == nullptr) fail(path, message.data());
  return std::unique_ptr<ModuleNetwork>(network);
#else
  (void)input_shape, (void)classes, (void)threads;
  fail(path, "this gradshare was built without libtorch: apt-get install libtorch-dev, then "
             "rebuild (scripts/setup, or cmake -DGRADSHARE_TORCH=ON)");
#endif
}

std::string torchscript_support() {
#ifdef GRADSHARE_WITH_TORCH
  return "libtorch " GRADSHARE_TORCH_VERSION " (loaded on first use)";
#else
  return "not built (GRADSHARE_TORCH=OFF or no libtorch found)";
#endif
}

}  // namespace gradshare::nn
