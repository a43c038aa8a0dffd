#include "concord/core/atomic_file.h"

#include <fcntl.h>
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

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  write_file_atomically(path, std::vector<std::string_view>{bytes});
}

void write_file_atomically(const std::filesystem::path& path, const std::vector<std::string_view>& pieces) {
  if (path.filename().empty()) {
    throw std::runtime_error("cannot write file '" + path.string() + "': path names no file");
  }
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  const std::string temp_name = "." + path.filename().string() + "." + std::to_string(::getpid()) + "." +
                                std::to_string(g_temp_counter.fetch_add(1)) + ".tmp";
  TempFile temp(dir / temp_name);
  for (const std::string_view piece : pieces) {
    temp.write_all(piece);
  }
  temp.sync_and_close();
  temp.rename_to(path);
  sync_directory(dir);
}

}  // namespace concord::core
