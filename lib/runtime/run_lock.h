// run_lock.h: one job per run directory. The master holds <run dir>/run.lock while the job
// runs, a text file made with O_CREAT|O_EXCL:
//   pid <pid>  host <hostname>  process_start <clock ticks since boot, /proc/<pid>/stat>
//   started <ISO time>  [slurm_job <SLURM_JOB_ID>  slurm_restart <SLURM_RESTART_COUNT>]
// (one "key value" per line), refreshed (its mtime) every kRefreshSeconds, removed when the job
// ends. A lock found in place is stale, and taken over with a warning, when
//   - it was made on this host and its process is gone (no such pid, or a pid reused by a
//     process that started at another time);
//   - it names this Slurm job at an earlier restart (Slurm ends a job before requeueing it);
//   - it was made on another host and not refreshed for kStaleSeconds (its owner cannot be
//     asked; a live owner refreshes it six times as often).
// Otherwise the run directory is in use: UserError naming the owner.
#pragma once

#include <condition_variable>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace gradshare::runtime {

class RunLock {
 public:
  static constexpr int kRefreshSeconds = 10;
  static constexpr int kStaleSeconds = 60;

  // Creates `directory` (and its parents) if needed and takes its lock; `took_over` receives
  // a line describing a stale lock that was replaced, if any. UserError when the directory
  // is in use or cannot be written.
  static std::unique_ptr<RunLock> acquire(const std::string& directory, std::string* took_over);
  // A new master inside the job (master_takeover.h): the lost master's lock, whose owner the
  // repair has proven dead wherever it ran, is replaced by this process's.
  static std::unique_ptr<RunLock> take_from_lost_master(const std::string& directory);

  // When the lock file at `lock_path` was made (its `started` line); -1 when unreadable.
  static std::time_t started_at(const std::string& lock_path);

  explicit RunLock(std::string path);  // of a lock file this process has just made
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  ~RunLock();  // stops refreshing and removes the lock file

 private:
  void refresh_until_released();

  std::string path_;
  std::mutex mutex_;
  std::condition_variable released_;
  bool release_ = false;
  std::thread refresher_;
};

}  // namespace gradshare::runtime
