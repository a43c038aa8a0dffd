#include "concord/envs/mujoco/offscreen_context.h"

#include <EGL/egl.h>
#include <EGL/eglext.h>

#include <cstdio>
#include <mutex>
#include <stdexcept>

namespace concord::envs::mujoco {
namespace {

[[noreturn]] void fail(const std::string& what, EGLint error = eglGetError()) {
  char code[16];
  std::snprintf(code, sizeof code, "0x%04x", static_cast<unsigned>(error));
  throw std::runtime_error("MuJoCo rendering needs an off-screen OpenGL context through EGL, and " + what +
                           " failed (EGL error " + code +
                           "); Debian's Mesa provides one without a display or GPU: apt-get install libegl1 "
                           "libegl-mesa0 libgl1-mesa-dri");
}

EGLDisplay platform_display(EGLenum platform, void* native) {
  static const auto get =
      reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(eglGetProcAddress("eglGetPlatformDisplayEXT"));
  if (get == nullptr) return EGL_NO_DISPLAY;
  EGLDisplay display = get(platform, native, nullptr);
  if (display == EGL_NO_DISPLAY) return display;
  EGLint major = 0;
  EGLint minor = 0;
  return eglInitialize(display, &major, &minor) ? display : EGL_NO_DISPLAY;
}

// The first EGL device's display: a GPU driver's where Mesa's surfaceless platform is missing.
EGLDisplay device_display() {
  const auto query = reinterpret_cast<PFNEGLQUERYDEVICESEXTPROC>(eglGetProcAddress("eglQueryDevicesEXT"));
  if (query == nullptr) return EGL_NO_DISPLAY;
  EGLDeviceEXT devices[8];
  EGLint count = 0;
  if (!query(8, devices, &count)) return EGL_NO_DISPLAY;
  for (EGLint i = 0; i < count; ++i) {
    EGLDisplay display = platform_display(EGL_PLATFORM_DEVICE_EXT, devices[i]);
    if (display != EGL_NO_DISPLAY) return display;
  }
  return EGL_NO_DISPLAY;
}

// One initialised display for the process, never terminated: eglTerminate would end every other
// renderer's context on it too.
EGLDisplay shared_display() {
  static std::mutex mutex;
  static EGLDisplay display = EGL_NO_DISPLAY;
  std::lock_guard<std::mutex> lock(mutex);
  if (display == EGL_NO_DISPLAY) display = platform_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY);
  if (display == EGL_NO_DISPLAY) display = device_display();
  if (display == EGL_NO_DISPLAY) fail("eglInitialize (surfaceless Mesa or an EGL device)");
  return display;
}

}  // namespace

OffscreenContext::OffscreenContext() {
  EGLDisplay display = shared_display();
  display_ = display;
  // MuJoCo's renderer uses OpenGL's compatibility profile (fixed-function lighting): desktop GL,
  // not GLES. The colour, depth and stencil sizes are those of its own framebuffer's defaults; a
  // config for pbuffers, which the surfaceless platform offers, where windows it has none.
  const EGLint attributes[] = {EGL_RED_SIZE,
                               8,
                               EGL_GREEN_SIZE,
                               8,
                               EGL_BLUE_SIZE,
                               8,
                               EGL_ALPHA_SIZE,
                               8,
                               EGL_DEPTH_SIZE,
                               24,
                               EGL_STENCIL_SIZE,
                               8,
                               EGL_RENDERABLE_TYPE,
                               EGL_OPENGL_BIT,
                               EGL_SURFACE_TYPE,
                               EGL_PBUFFER_BIT,
                               EGL_NONE};
  EGLConfig config = nullptr;
  EGLint found = 0;
  if (!eglChooseConfig(display, attributes, &config, 1, &found) || found < 1) fail("eglChooseConfig (desktop OpenGL)");
  if (!eglBindAPI(EGL_OPENGL_API)) fail("eglBindAPI(EGL_OPENGL_API)");
  context_ = eglCreateContext(display, config, EGL_NO_CONTEXT, nullptr);
  if (context_ == EGL_NO_CONTEXT) fail("eglCreateContext");
  if (!eglMakeCurrent(display, EGL_NO_SURFACE, EGL_NO_SURFACE, static_cast<EGLContext>(context_))) {
    const EGLint error = eglGetError();
    eglDestroyContext(display, static_cast<EGLContext>(context_));
    fail("eglMakeCurrent (a context without a surface)", error);
  }
  using GetString = const unsigned char* (*)(unsigned);
  const auto get_string = reinterpret_cast<GetString>(eglGetProcAddress("glGetString"));
  const unsigned char* name = get_string != nullptr ? get_string(0x1F01 /* GL_RENDERER */) : nullptr;
  renderer_ = name != nullptr ? reinterpret_cast<const char*>(name) : "unknown";
  release();
}

OffscreenContext::~OffscreenContext() {
  if (context_ != EGL_NO_CONTEXT)
    eglDestroyContext(static_cast<EGLDisplay>(display_), static_cast<EGLContext>(context_));
}

void OffscreenContext::make_current() {
  if (!eglMakeCurrent(static_cast<EGLDisplay>(display_), EGL_NO_SURFACE, EGL_NO_SURFACE,
                      static_cast<EGLContext>(context_))) {
    fail("eglMakeCurrent (a context without a surface)");
  }
}

void OffscreenContext::release() {
  eglMakeCurrent(static_cast<EGLDisplay>(display_), EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
}

}  // namespace concord::envs::mujoco
