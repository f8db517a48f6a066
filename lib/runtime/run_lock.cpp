#include "runtime/run_lock.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/errors.h"

namespace gradshare::runtime {

namespace fs = std::filesystem;

namespace {

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

// Fields 3 (state) and 22 (start time, in clock ticks since boot) of /proc/<pid>/stat; empty
// when there is no such process.
struct ProcessStat {
  std::string state;
  std::string start;
};

ProcessStat process_stat(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return {};
  const auto end_of_name = stat.rfind(')');  // the command name may hold spaces
  if (end_of_name == std::string::npos) return {};
  std::istringstream fields(stat.substr(end_of_name + 2));
  ProcessStat result;
  std::string field;
  for (int index = 3; index <= 22 && fields >> field; ++index) {
    if (index == 3) result.state = field;
    if (index == 22) result.start = field;
  }
  return result;
}

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

constexpr const char* kStartedFormat = "%Y-%m-%dT%H:%M:%SZ";  // UTC

std::string lock_text() {
  const long pid = static_cast<long>(getpid());
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char started[32];
  std::strftime(started, sizeof started, kStartedFormat, &utc);
  std::string text = "pid " + std::to_string(pid) + "\nhost " + host_name() + "\nprocess_start " +
                     process_stat(pid).start + "\nstarted " + started + "\n";
  const auto job = env_or_empty("SLURM_JOB_ID");
  if (!job.empty())
    text += "slurm_job " + job + "\nslurm_restart " +
            (env_or_empty("SLURM_RESTART_COUNT").empty() ? "0" : env_or_empty("SLURM_RESTART_COUNT")) +
            "\n";
  return text;
}

std::map<std::string, std::string> read_lock(const std::string& path) {
  std::map<std::string, std::string> fields;
  std::ifstream in(path);
  std::string key;
  std::string value;
  while (in >> key && std::getline(in >> std::ws, value)) fields[key] = value;
  return fields;
}

// Why the lock at `path` is stale, or "" while its owner may be running.
std::string stale_reason(const std::string& path, const std::map<std::string, std::string>& owner) {
  const auto field = [&](const char* key) {
    const auto found = owner.find(key);
    return found == owner.end() ? std::string() : found->second;
  };
  if (field("host") == host_name()) {
    const long pid = std::atol(field("pid").c_str());
    if (pid <= 0) return "it names no process";
    // A job that has just failed may still be ending (mpirun returns while its processes are
    // being killed): its owner is given two seconds to go.
    for (int look = 0; look < 20; ++look) {
      if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return "its process is gone";
      const auto stat = process_stat(pid);
      if (stat.state == "Z" || stat.state == "X") return "its process has ended";
      if (!stat.start.empty() && !field("process_start").empty() && stat.start != field("process_start"))
        return "its process is gone (the pid now belongs to another process)";
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return "";
  }
  const auto job = env_or_empty("SLURM_JOB_ID");
  if (!job.empty() && field("slurm_job") == job &&
      std::atol(field("slurm_restart").c_str()) < std::atol(env_or_empty("SLURM_RESTART_COUNT").c_str()))
    return "it is an earlier run of this requeued Slurm job";
  std::error_code error;
  const auto written = fs::last_write_time(path, error);
  if (error) return "";
  const auto age = fs::file_time_type::clock::now() - written;
  if (age > std::chrono::seconds(RunLock::kStaleSeconds))
    return "it was not refreshed for " +
           std::to_string(std::chrono::duration_cast<std::chrono::seconds>(age).count()) + " s";
  return "";
}

}  // namespace

std::unique_ptr<RunLock> RunLock::take_from_lost_master(const std::string& directory) {
  ::unlink((directory + "/run.lock").c_str());
  return acquire(directory, nullptr);
}

std::unique_ptr<RunLock> RunLock::acquire(const std::string& directory, std::string* took_over) {
  std::error_code error;
  fs::create_directories(directory, error);
  if (error)
    throw core::UserError(directory + ": cannot create run directory (" + error.message() + ")");
  const std::string path = directory + "/run.lock";
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) {
      const auto text = lock_text();
      const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
      ::close(fd);
      if (!written) {
        ::unlink(path.c_str());
        throw core::UserError(path + ": cannot write the run lock");
      }
      return std::make_unique<RunLock>(path);
    }
    if (errno != EEXIST)
      throw core::UserError(path + ": cannot create the run lock (" + std::strerror(errno) + ")");
    const auto owner = read_lock(path);
    const auto reason = stale_reason(path, owner);
    const auto field = [&](const char* key) {
      const auto found = owner.find(key);
      return found == owner.end() ? std::string("?") : found->second;
    };
    const std::string who = "pid " + field("pid") + " on " + field("host") + " (started " +
                            field("started") + ")";
    if (reason.empty())
      throw core::UserError("run.dir " + directory + " is in use by another job: " + who +
                            " holds " + path + "; wait for it to end or choose another run.dir");
    if (took_over) *took_over = "took over the stale run lock of " + who + ": " + reason;
    // Moved aside rather than removed, and checked: of two jobs taking over at once, the one
    // that moved the other's fresh lock puts it back and tries again.
    const std::string aside = path + ".stale";
    fs::rename(path, aside, error);
    if (!error && read_lock(aside) != owner) fs::rename(aside, path, error);
  }
  throw core::UserError("run.dir " + directory + ": another job took the run lock at the same time");
}

RunLock::RunLock(std::string path) : path_(std::move(path)) {
  refresher_ = std::thread([this] { refresh_until_released(); });
}

void RunLock::refresh_until_released() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!released_.wait_for(lock, std::chrono::seconds(kRefreshSeconds), [this] { return release_; })) {
    std::error_code error;
    fs::last_write_time(path_, fs::file_time_type::clock::now(), error);
  }
}

RunLock::~RunLock() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    release_ = true;
  }
  released_.notify_all();
  refresher_.join();
  std::error_code error;
  fs::remove(path_, error);
}

std::time_t RunLock::started_at(const std::string& lock_path) {
  const auto started = read_lock(lock_path)["started"];
  std::tm utc{};
  if (started.empty() || !strptime(started.c_str(), kStartedFormat, &utc)) return -1;
  return timegm(&utc);
}

}  // namespace gradshare::runtime
