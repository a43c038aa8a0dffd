#include "concord/core/run_dir_lock.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>

namespace concord::core {
namespace {

constexpr const char* kLockFile = ".lock";

// The directories this process holds: fcntl would grant a second lock to the same process.
std::mutex& held_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::set<std::filesystem::path>& held_dirs() {
  static std::set<std::filesystem::path> dirs;
  return dirs;
}

std::string in_use(const std::filesystem::path& run_dir, const std::string& holder) {
  return "run directory '" + run_dir.string() + "' is in use by " + holder +
         "; one process writes a run at a time: wait for it to end or stop it";
}

}  // namespace

RunDirLock::RunDirLock(const std::filesystem::path& run_dir) {
  std::error_code error;
  std::filesystem::path key = std::filesystem::weakly_canonical(run_dir, error);
  if (error) key = std::filesystem::absolute(run_dir);
  {
    std::lock_guard<std::mutex> guard(held_mutex());
    if (!held_dirs().insert(key).second) {
      throw std::runtime_error(in_use(run_dir, "this process (pid " + std::to_string(::getpid()) + ")"));
    }
  }
  key_ = key;
  const std::filesystem::path file = run_dir / kLockFile;
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int code = errno;
    release();
    throw std::runtime_error("cannot open the run directory's lock file '" + file.string() +
                             "': " + std::strerror(code));
  }
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  if (::fcntl(fd_, F_SETLK, &lock) == 0) {
    // The pid in the file is for a person looking; the lock itself is what counts.
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
      // Best effort: the lock holds without the text.
    }
    return;
  }
  const int code = errno;
  struct flock holder {};
  holder.l_type = F_WRLCK;
  holder.l_whence = SEEK_SET;
  std::string who = "another process";
  if ((code == EACCES || code == EAGAIN) && ::fcntl(fd_, F_GETLK, &holder) == 0 && holder.l_type != F_UNLCK) {
    who = "another concord process (pid " + std::to_string(holder.l_pid) + ")";
  }
  release();
  if (code != EACCES && code != EAGAIN) {
    throw std::runtime_error("cannot lock the run directory's lock file '" + file.string() +
                             "': " + std::strerror(code));
  }
  throw std::runtime_error(in_use(run_dir, who));
}

RunDirLock::~RunDirLock() { release(); }

RunDirLock::RunDirLock(RunDirLock&& other) noexcept : fd_(other.fd_), key_(std::move(other.key_)) {
  other.fd_ = -1;
  other.key_.clear();
}

RunDirLock& RunDirLock::operator=(RunDirLock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = other.fd_;
    key_ = std::move(other.key_);
    other.fd_ = -1;
    other.key_.clear();
  }
  return *this;
}

void RunDirLock::release() noexcept {
  if (fd_ >= 0) {
    ::close(fd_);  // closing drops the fcntl lock
    fd_ = -1;
  }
  if (!key_.empty()) {
    std::lock_guard<std::mutex> guard(held_mutex());
    held_dirs().erase(key_);
    key_.clear();
  }
}

}  // namespace concord::core
