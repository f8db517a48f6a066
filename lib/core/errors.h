// errors.h: the error vocabulary of gradshare.
//   UserError    - a mistake of the user (config, path, data, arguments): one line, exit code 2
//   RuntimeError - something failed while running (I/O, MPI, a peer): exit code 1
//   GS_CHECK     - a broken internal invariant: names the file and line
#pragma once

#include <stdexcept>
#include <string>

namespace gradshare::core {

// Process exit codes, documented in the README.
enum ExitCode : int {
  kExitOk = 0,
  kExitRuntimeFailure = 1,
  kExitUserError = 2,
  // The divergence guard stopped a run whose loss exploded (training.on_divergence).
  kExitDiverged = 3,
  // Stopped on SIGTERM/SIGUSR1 after writing a checkpoint: the batch script requeues the job.
  kExitRequeue = 75,
};

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message) : std::runtime_error(message) {}
};

class RuntimeError : public std::runtime_error {
 public:
  explicit RuntimeError(const std::string& message) : std::runtime_error(message) {}
};

// A failure nothing in the job can repair (the master lost, a Downpour parameter server lost):
// every rank ends the job with a non-zero exit, none leaves as a replaceable worker would.
class JobCannotGoOn : public RuntimeError {
 public:
  explicit JobCannotGoOn(const std::string& message) : RuntimeError(message) {}
};

[[noreturn]] void check_failed(const char* expression, const char* file, int line,
                               const std::string& detail);

}  // namespace gradshare::core

// GS_CHECK(cond) or GS_CHECK(cond, "detail " + x): throws RuntimeError naming file and line.
#define GS_CHECK(cond, ...)                                                                 \
  do {                                                                                      \
    if (!(cond))                                                                            \
      ::gradshare::core::check_failed(#cond, __FILE__, __LINE__, std::string{__VA_ARGS__}); \
  } while (0)
