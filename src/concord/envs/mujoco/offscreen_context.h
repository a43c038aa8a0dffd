#pragma once

#include <string>

namespace concord::envs::mujoco {

// An OpenGL context with no window and no display, for MuJoCo's renderer (mjr_*): made through
// EGL on Mesa's surfaceless platform, which needs neither X nor a GPU (Mesa's llvmpipe draws on the
// CPU), or else on the first EGL device (a GPU's driver). MuJoCo draws into a framebuffer of its
// own, so the context has no surface. MuJoCo finds OpenGL's functions through the EGL library this
// process has loaded (its own loader asks eglGetProcAddress). One context per renderer; it is
// current on the calling thread only between make_current() and release().
class OffscreenContext {
 public:
  // Throws std::runtime_error naming the EGL call that failed and its error code.
  OffscreenContext();
  ~OffscreenContext();
  OffscreenContext(const OffscreenContext&) = delete;
  OffscreenContext& operator=(const OffscreenContext&) = delete;

  void make_current();
  void release();
  // OpenGL's renderer string (e.g. "llvmpipe (LLVM 15.0.6, 256 bits)"), for messages.
  const std::string& renderer() const { return renderer_; }

 private:
  void* display_ = nullptr;
  void* context_ = nullptr;
  std::string renderer_;
};

}  // namespace concord::envs::mujoco
