#include "concord/core/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace concord::core {

namespace {

std::atomic<unsigned long> g_temp_counter{0};

[[noreturn]] void throw_errno(const std::string& what, const std::filesystem::path& path, int error) {
  throw std::runtime_error(what + " '" + path.string() + "': " + std::strerror(error));
}

// Owns an open descriptor and the temporary's name until the rename commits it.
class TempFile {
 public:
  explicit TempFile(std::filesystem::path temp_path) : path_(std::move(temp_path)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      throw_errno("cannot create temporary file", path_, errno);
    }
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    if (!committed_) {
      ::unlink(path_.c_str());
    }
  }

  void write_all(std::string_view bytes) {
    const char* data = bytes.data();
    std::size_t left = bytes.size();
    while (left > 0) {
      const ssize_t written = ::write(fd_, data, left);
      if (written < 0) {
        if (errno == EINTR) {
          continue;
        }
        throw_errno("cannot write temporary file", path_, errno);
      }
      data += written;
      left -= static_cast<std::size_t>(written);
    }
  }

  void sync_and_close() {
    if (::fsync(fd_) != 0) {
      throw_errno("cannot fsync temporary file", path_, errno);
    }
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {
      throw_errno("cannot close temporary file", path_, errno);
    }
  }

  void rename_to(const std::filesystem::path& target) {
    if (::rename(path_.c_str(), target.c_str()) != 0) {
      throw_errno("cannot rename temporary file onto", target, errno);
    }
    committed_ = true;
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  bool committed_ = false;
};

void sync_directory(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    throw_errno("cannot open directory to fsync", dir, errno);
  }
  const int result = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  // Some filesystems cannot fsync a directory; the rename is then as durable as they allow.
  if (result != 0 && error != EINVAL && error != ENOTSUP) {
    throw_errno("cannot fsync directory", dir, error);
  }
}

}  // namespace

int remove_stale_temporaries(const std::filesystem::path& dir) {
  int removed = 0;
  std::error_code error;
  for (std::filesystem::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    const std::string suffix = ".tmp";
    if (name.size() < 2 || name[0] != '.' || name.size() <= suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    // ".<name>.<pid>.<counter>.tmp": the two dot-separated numbers before ".tmp".
    const std::string stem = name.substr(0, name.size() - suffix.size());
    const std::size_t counter_dot = stem.rfind('.');
    const std::size_t pid_dot = counter_dot == 0 ? std::string::npos : stem.rfind('.', counter_dot - 1);
    if (pid_dot == std::string::npos || pid_dot == 0) continue;
    const std::string pid_text = stem.substr(pid_dot + 1, counter_dot - pid_dot - 1);
    const std::string counter_text = stem.substr(counter_dot + 1);
    auto is_number = [](const std::string& text, std::size_t max_digits) {
      return !text.empty() && text.size() <= max_digits && text.find_first_not_of("0123456789") == std::string::npos;
    };
    if (!is_number(pid_text, 9) || !is_number(counter_text, 20)) continue;
    const auto pid = static_cast<pid_t>(std::stol(pid_text));
    // kill(pid, 0) fails with ESRCH only when no such process exists; EPERM means it is alive.
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code ignored;
    if (std::filesystem::remove(it->path(), ignored)) ++removed;
  }
  return removed;
}

std::filesystem::path temporary_path(const std::filesystem::path& path) {
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  return dir / ("." + path.filename().string() + "." + std::to_string(::getpid()) + "." +
                std::to_string(g_temp_counter.fetch_add(1)) + ".tmp");
}

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  write_file_atomically(path, std::vector<std::string_view>{bytes});
}

void write_file_atomically(const std::filesystem::path& path, const std::vector<std::string_view>& pieces) {
  if (path.filename().empty()) {
    throw std::runtime_error("cannot write file '" + path.string() + "': path names no file");
  }
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  TempFile temp(temporary_path(path));
  for (const std::string_view piece : pieces) {
    temp.write_all(piece);
  }
  temp.sync_and_close();
  temp.rename_to(path);
  sync_directory(dir);
}

}  // namespace concord::core
