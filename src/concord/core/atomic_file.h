#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

namespace concord::core {

// Replaces the file at `path` with `bytes` so that a reader (or a crash) sees either the old
// contents or the new ones, never a mix: the bytes go to a uniquely named temporary file in the
// same directory (name carries the pid and a per-process counter), which is fsynced, renamed over
// `path`, and the directory is fsynced so the rename itself is durable. On any failure the
// temporary is removed and std::runtime_error is thrown naming the path and strerror(errno).
// Safe to call from several threads; concurrent writers of the same path each land atomically
// and the last rename wins.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

// As above, with the file contents given as consecutive pieces (saves joining large buffers).
void write_file_atomically(const std::filesystem::path& path, const std::vector<std::string_view>& pieces);

// A fresh temporary name beside `path` in the form write_file_atomically uses and
// remove_stale_temporaries recognises, for a file made some other way (a hard link, a copy) and
// then renamed over its final name.
std::filesystem::path temporary_path(const std::filesystem::path& path);

// Removes from `dir` the temporaries that write_file_atomically left behind in a process that died
// mid-write (SIGKILL, SIGXFSZ, a power cut): ".<name>.<pid>.<counter>.tmp" files whose pid is no
// longer a running process. A live writer's temporary, of this process or another, is left
// alone. Returns how many were removed; never throws (a leftover only wastes space).
int remove_stale_temporaries(const std::filesystem::path& dir);

}  // namespace concord::core
