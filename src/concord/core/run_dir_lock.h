#pragma once

#include <filesystem>

namespace concord::core {

// One writer per run directory: an fcntl lock on <run_dir>/.lock, held while this object lives and
// released by the kernel when the process dies however it dies, so a killed run never leaves a
// stale lock behind. A second process (a second `train --resume` of the same directory, say) is
// refused in one line naming the pid that holds the lock; the same process locking a directory
// twice is refused too (fcntl locks belong to the process, so the kernel alone would allow it).
//
// POSIX record locks rather than flock(): F_GETLK reports the holder's pid, and child processes
// (forked env workers, `concord launch`'s ranks) do not inherit them.
class RunDirLock {
 public:
  RunDirLock() = default;
  // Throws std::runtime_error "run directory 'D' is in use by another concord process (pid P) ..."
  // when another process or another RunDirLock of this one holds it, or naming the file and the
  // system's error when the lock file cannot be opened.
  explicit RunDirLock(const std::filesystem::path& run_dir);
  ~RunDirLock();
  RunDirLock(RunDirLock&& other) noexcept;
  RunDirLock& operator=(RunDirLock&& other) noexcept;
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

  bool held() const { return fd_ >= 0; }

 private:
  void release() noexcept;

  int fd_ = -1;
  std::filesystem::path key_;  // the canonical directory, for the same-process check
};

}  // namespace concord::core
