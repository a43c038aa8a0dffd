#include "concord/nn/fused_recurrence.h"

#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/mm.h>
#include <c10/core/GradMode.h>
#include <c10/core/ScalarType.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "concord/core/blas.h"
#include "concord/nn/fast_math.h"

namespace concord::nn {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// C = op(A) op(B) + beta C for row-major matrices, op(A) [m, k] and op(B) [k, n], op transposing
// where asked: one cblas_sgemm call for float32 where the process has CBLAS (sizes fit an int:
// fused_recurrence_applies checks), else LibTorch's product on the same memory.
template <typename T>
void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    if (const core::CblasSgemm sgemm = core::cblas_sgemm()) {
      const auto i = [](int64_t v) { return static_cast<int>(v); };
      sgemm(core::kCblasRowMajor, transpose_a ? core::kCblasTrans : core::kCblasNoTrans,
            transpose_b ? core::kCblasTrans : core::kCblasNoTrans, i(m), i(n), i(k), 1.0F, a, i(lda), b, i(ldb), beta,
            c, i(ldc));
      return;
    }
  }
  const auto options = at::TensorOptions().dtype(c10::CppTypeToScalarType<T>::value);
  // op(X) as a rows x cols tensor over X's memory.
  const auto matrix = [&](const T* data, bool transposed, int64_t rows, int64_t cols, int64_t ld) {
    if (transposed) return at::from_blob(const_cast<T*>(data), {cols, rows}, {ld, 1}, options).t();
    return at::from_blob(const_cast<T*>(data), {rows, cols}, {ld, 1}, options);
  };
  at::Tensor out = at::from_blob(c, {m, n}, {ldc, 1}, options);
  const at::Tensor product = at::mm(matrix(a, transpose_a, m, k, lda), matrix(b, transpose_b, k, n, ldb));
  if (beta == T(0)) {
    out.copy_(product);
  } else {
    out.mul_(beta).add_(product);
  }
}

#define CONCORD_ALWAYS_INLINE inline __attribute__((always_inline))

// The activations: fast_math.h's vectorisable ones in float32, the C library's in float64.
inline float sigmoid_of(float x) { return sigmoid_float(x); }
inline double sigmoid_of(double x) { return 1.0 / (1.0 + std::exp(-x)); }
inline float tanh_of(float x) { return tanh_float(x); }
inline double tanh_of(double x) { return std::tanh(x); }

// The pointwise parts of a step, for B rows. Each is a template, inlined for float32 into a
// function built for several vector widths (CONCORD_VECTOR_CLONES).

// LSTM: gates [B, 4 H] come in as the input side's pre-activations (x W_ih^T + b_ih) and leave
// as i f g o, the pre-activations being (h W_hh^T + b_hh) + those, as LibTorch adds them, with gh
// [B, 4 H] = h W_hh^T; c = f c_in + i g, then tanh(c) and h = o tanh(c).
template <typename T>
CONCORD_ALWAYS_INLINE void lstm_forward_rows(int64_t B, int64_t H, T* gates, const T* gh, const T* b_hh, const T* c_in,
                                             T* c_out, T* c_tanh, T* h_out) {
  for (int64_t b = 0; b < B; ++b) {
    T* row = gates + b * 4 * H;
    const T* hrow = gh + b * 4 * H;
    for (int64_t j = 0; j < 2 * H; ++j) row[j] = sigmoid_of((hrow[j] + b_hh[j]) + row[j]);
    for (int64_t j = 2 * H; j < 3 * H; ++j) row[j] = tanh_of((hrow[j] + b_hh[j]) + row[j]);
    for (int64_t j = 3 * H; j < 4 * H; ++j) row[j] = sigmoid_of((hrow[j] + b_hh[j]) + row[j]);
    const T* i = row;
    const T* f = row + H;
    const T* g = row + 2 * H;
    const T* o = row + 3 * H;
    const int64_t at = b * H;
    for (int64_t j = 0; j < H; ++j) {
      const T c = f[j] * c_in[at + j] + i[j] * g[j];
      const T tc = tanh_of(c);
      c_out[at + j] = c;
      c_tanh[at + j] = tc;
      h_out[at + j] = o[j] * tc;
    }
  }
}
CONCORD_VECTOR_CLONES void lstm_forward_rows_float(int64_t B, int64_t H, float* gates, const float* gh,
                                                   const float* b_hh, const float* c_in, float* c_out, float* c_tanh,
                                                   float* h_out) {
  lstm_forward_rows<float>(B, H, gates, gh, b_hh, c_in, c_out, c_tanh, h_out);
}

// GRU: gates [B, 3 H] come in as the input side's pre-activations gi (x W_ih^T + b_ih) and leave
// as r z n; gh [B, 3 H] is h W_hh^T, to which b_hh adds: r = sig((gh_r + b_hr) + gi_r), z likewise,
// n = tanh(gi_n + r (gh_n + b_hn)), h = (h_in - n) z + n; h_n keeps gh_n + b_hn.
template <typename T>
CONCORD_ALWAYS_INLINE void gru_forward_rows(int64_t B, int64_t H, T* gates, const T* gh, const T* b_hh, const T* h_in,
                                            T* h_n, T* h_out) {
  for (int64_t b = 0; b < B; ++b) {
    T* row = gates + b * 3 * H;
    const T* hrow = gh + b * 3 * H;
    for (int64_t j = 0; j < 2 * H; ++j) row[j] = sigmoid_of((hrow[j] + b_hh[j]) + row[j]);
    const T* r = row;
    const T* z = row + H;
    T* n = row + 2 * H;
    const int64_t at = b * H;
    for (int64_t j = 0; j < H; ++j) {
      const T hn = hrow[2 * H + j] + b_hh[2 * H + j];
      const T new_gate = tanh_of(n[j] + r[j] * hn);
      n[j] = new_gate;
      h_n[at + j] = hn;
      h_out[at + j] = (h_in[at + j] - new_gate) * z[j] + new_gate;
    }
  }
}
CONCORD_VECTOR_CLONES void gru_forward_rows_float(int64_t B, int64_t H, float* gates, const float* gh,
                                                  const float* b_hh, const float* h_in, float* h_n, float* h_out) {
  gru_forward_rows<float>(B, H, gates, gh, b_hh, h_in, h_n, h_out);
}

template <typename T>
void lstm_forward(int64_t B, int64_t H, T* gates, const T* gh, const T* b_hh, const T* c_in, T* c_out, T* c_tanh,
                  T* h_out) {
  if constexpr (std::is_same_v<T, float>) {
    lstm_forward_rows_float(B, H, gates, gh, b_hh, c_in, c_out, c_tanh, h_out);
  } else {
    lstm_forward_rows<T>(B, H, gates, gh, b_hh, c_in, c_out, c_tanh, h_out);
  }
}

template <typename T>
void gru_forward(int64_t B, int64_t H, T* gates, const T* gh, const T* b_hh, const T* h_in, T* h_n, T* h_out) {
  if constexpr (std::is_same_v<T, float>) {
    gru_forward_rows_float(B, H, gates, gh, b_hh, h_in, h_n, h_out);
  } else {
    gru_forward_rows<T>(B, H, gates, gh, b_hh, h_in, h_n, h_out);
  }
}

// rows[i, :] += v over rows [n, width].
template <typename T>
CONCORD_ALWAYS_INLINE void add_rows_of(T* rows, const T* v, int64_t n, int64_t width) {
  for (int64_t i = 0; i < n; ++i) {
    T* row = rows + i * width;
    for (int64_t j = 0; j < width; ++j) row[j] += v[j];
  }
}
CONCORD_VECTOR_CLONES void add_rows_float(float* rows, const float* v, int64_t n, int64_t width) {
  add_rows_of<float>(rows, v, n, width);
}
template <typename T>
void add_rows(T* rows, const T* v, int64_t n, int64_t width) {
  if constexpr (std::is_same_v<T, float>) {
    add_rows_float(rows, v, n, width);
  } else {
    add_rows_of<T>(rows, v, n, width);
  }
}

// The sizes of one run: T steps of B envs, I inputs, H cells, G gates (4 LSTM, 3 GRU).
struct Sizes {
  int64_t steps, batch, inputs, hidden, gates;
  int64_t rows() const { return steps * batch; }    // N = T B
  int64_t width() const { return gates * hidden; }  // G H
  int64_t step_cells() const { return batch * hidden; }
};

// What forward leaves for backward, in one buffer: offsets (in elements) of each part.
struct Work {
  int64_t gates;      // [N, G H]: the activated gates (LSTM i f g o, GRU r z n)
  int64_t hidden_in;  // [N, H]: h going into each step, after its resets
  int64_t cells_in;   // LSTM [N, H]: c going into each step, after its resets
  int64_t cell_tanh;  // LSTM [N, H]: tanh(c) after each step
  int64_t hidden_n;   // GRU [N, H]: W_hn h + b_hn
  int64_t scratch;    // [B, G H]: h W_hh^T of the current step
  int64_t w_hh_t;     // [H, G H]: W_hh^T
  int64_t total;
};

Work work_layout(bool lstm, const Sizes& s) {
  Work w{};
  const int64_t n = s.rows();
  w.gates = 0;
  w.hidden_in = w.gates + n * s.width();
  if (lstm) {
    w.cells_in = w.hidden_in + n * s.hidden;
    w.cell_tanh = w.cells_in + n * s.hidden;
    w.scratch = w.cell_tanh + n * s.hidden;
  } else {
    w.hidden_n = w.hidden_in + n * s.hidden;
    w.scratch = w.hidden_n + n * s.hidden;
  }
  w.w_hh_t = w.scratch + s.batch * s.width();
  w.total = w.w_hh_t + s.hidden * s.width();
  return w;
}

// Copies `from` [B, H] to `to`, with the rows where resets[b] is set zeroed (resets may be null).
template <typename T>
void reset_copy(const T* from, T* to, const uint8_t* resets, const Sizes& s) {
  for (int64_t b = 0; b < s.batch; ++b) {
    T* row = to + b * s.hidden;
    if (resets != nullptr && resets[b] != 0) {
      std::memset(row, 0, sizeof(T) * static_cast<size_t>(s.hidden));
    } else {
      std::memcpy(row, from + b * s.hidden, sizeof(T) * static_cast<size_t>(s.hidden));
    }
  }
}

// The forward pass: hidden (and, for an LSTM, cells) [N, H] after each step, and `work` filled.
template <typename T>
void run_forward(bool lstm, const Sizes& s, const T* x, const T* h0, const T* c0, const T* w_ih, const T* w_hh,
                 const T* b_ih, const T* b_hh, const uint8_t* resets, T* hidden, T* cells, T* work) {
  const Work layout = work_layout(lstm, s);
  const int64_t H = s.hidden, G = s.width(), B = s.batch;
  T* gates = work + layout.gates;
  // The input projection of all T steps: x W_ih^T + b_ih.
  gemm<T>(false, true, s.rows(), G, s.inputs, x, s.inputs, w_ih, s.inputs, T(0), gates, G);
  add_rows(gates, b_ih, s.rows(), G);
  // W_hh^T, so that each step's product h W_hh^T is a plain one (the BLAS's small-matrix kernels
  // take it without packing W_hh again each step); for one step (acting) the product takes W_hh
  // transposed as it is.
  const bool transposed = s.steps > 1;
  T* w_hh_t = work + layout.w_hh_t;
  if (transposed) {
    for (int64_t i = 0; i < G; ++i) {
      for (int64_t j = 0; j < H; ++j) w_hh_t[j * G + i] = w_hh[i * H + j];
    }
  }
  const auto recurrent_product = [&](const T* h_in, T* out) {
    if (transposed) {
      gemm<T>(false, false, B, G, H, h_in, H, w_hh_t, G, T(0), out, G);
    } else {
      gemm<T>(false, true, B, G, H, h_in, H, w_hh, H, T(0), out, G);
    }
  };
  T* gh = work + layout.scratch;
  for (int64_t t = 0; t < s.steps; ++t) {
    const int64_t at = t * B * H;  // this step's first element in [N, H] buffers
    const uint8_t* step_resets = resets != nullptr ? resets + t * B : nullptr;
    T* h_in = work + layout.hidden_in + at;
    reset_copy(t == 0 ? h0 : hidden + at - B * H, h_in, step_resets, s);
    T* g = gates + t * B * G;
    if (lstm) {
      T* c_in = work + layout.cells_in + at;
      reset_copy(t == 0 ? c0 : cells + at - B * H, c_in, step_resets, s);
      recurrent_product(h_in, gh);
      lstm_forward<T>(B, H, g, gh, b_hh, c_in, cells + at, work + layout.cell_tanh + at, hidden + at);
    } else {
      recurrent_product(h_in, gh);
      gru_forward<T>(B, H, g, gh, b_hh, h_in, work + layout.hidden_n + at, hidden + at);
    }
  }
}

// The pointwise parts of a step's backward pass, for B rows. dh_next (and dc_next) [B, H] come in
// as the gradient of the state after the step (from the step after it); grad_h and grad_c [B, H]
// are the outputs' own gradients (null: zero).

// LSTM: d_gates [B, 4 H] receives the pre-activations' gradients; dc_next leaves as the gradient
// of c_in (dh_next is left for the caller's product with W_hh).
template <typename T>
CONCORD_ALWAYS_INLINE void lstm_backward_rows(int64_t B, int64_t H, const T* gates, const T* c_in, const T* c_tanh,
                                              const T* grad_h, const T* grad_c, const T* dh_next, T* dc_next,
                                              T* d_gates) {
  for (int64_t b = 0; b < B; ++b) {
    const T* i = gates + b * 4 * H;
    const T* f = i + H;
    const T* g = i + 2 * H;
    const T* o = i + 3 * H;
    T* d = d_gates + b * 4 * H;
    const int64_t at = b * H;
    for (int64_t j = 0; j < H; ++j) {
      const T dh = (grad_h != nullptr ? grad_h[at + j] : T(0)) + dh_next[at + j];
      const T tc = c_tanh[at + j];
      const T dc = (grad_c != nullptr ? grad_c[at + j] : T(0)) + dc_next[at + j] + dh * o[j] * (T(1) - tc * tc);
      d[j] = dc * g[j] * i[j] * (T(1) - i[j]);
      d[H + j] = dc * c_in[at + j] * f[j] * (T(1) - f[j]);
      d[2 * H + j] = dc * i[j] * (T(1) - g[j] * g[j]);
      d[3 * H + j] = dh * tc * o[j] * (T(1) - o[j]);
      dc_next[at + j] = dc * f[j];
    }
  }
}
CONCORD_VECTOR_CLONES void lstm_backward_rows_float(int64_t B, int64_t H, const float* gates, const float* c_in,
                                                    const float* c_tanh, const float* grad_h, const float* grad_c,
                                                    const float* dh_next, float* dc_next, float* d_gates) {
  lstm_backward_rows<float>(B, H, gates, c_in, c_tanh, grad_h, grad_c, dh_next, dc_next, d_gates);
}

// GRU: d_gates [B, 3 H] receives the input side's pre-activations' gradients, d_hgates the hidden
// side's (n's scaled by r); skip the part of h_in's gradient that does not pass W_hh (dh z).
template <typename T>
CONCORD_ALWAYS_INLINE void gru_backward_rows(int64_t B, int64_t H, const T* gates, const T* h_n, const T* h_in,
                                             const T* grad_h, const T* dh_next, T* skip, T* d_gates, T* d_hgates) {
  for (int64_t b = 0; b < B; ++b) {
    const T* r = gates + b * 3 * H;
    const T* z = r + H;
    const T* n = r + 2 * H;
    T* d = d_gates + b * 3 * H;
    T* dhg = d_hgates + b * 3 * H;
    const int64_t at = b * H;
    for (int64_t j = 0; j < H; ++j) {
      const T dh = (grad_h != nullptr ? grad_h[at + j] : T(0)) + dh_next[at + j];
      const T dn = dh * (T(1) - z[j]) * (T(1) - n[j] * n[j]);
      const T dr = dn * h_n[at + j] * r[j] * (T(1) - r[j]);
      const T dz = dh * (h_in[at + j] - n[j]) * z[j] * (T(1) - z[j]);
      d[j] = dr;
      d[H + j] = dz;
      d[2 * H + j] = dn;
      dhg[j] = dr;
      dhg[H + j] = dz;
      dhg[2 * H + j] = dn * r[j];
      skip[at + j] = dh * z[j];
    }
  }
}
CONCORD_VECTOR_CLONES void gru_backward_rows_float(int64_t B, int64_t H, const float* gates, const float* h_n,
                                                   const float* h_in, const float* grad_h, const float* dh_next,
                                                   float* skip, float* d_gates, float* d_hgates) {
  gru_backward_rows<float>(B, H, gates, h_n, h_in, grad_h, dh_next, skip, d_gates, d_hgates);
}

template <typename T>
void lstm_backward(int64_t B, int64_t H, const T* gates, const T* c_in, const T* c_tanh, const T* grad_h,
                   const T* grad_c, const T* dh_next, T* dc_next, T* d_gates) {
  if constexpr (std::is_same_v<T, float>) {
    lstm_backward_rows_float(B, H, gates, c_in, c_tanh, grad_h, grad_c, dh_next, dc_next, d_gates);
  } else {
    lstm_backward_rows<T>(B, H, gates, c_in, c_tanh, grad_h, grad_c, dh_next, dc_next, d_gates);
  }
}

template <typename T>
void gru_backward(int64_t B, int64_t H, const T* gates, const T* h_n, const T* h_in, const T* grad_h, const T* dh_next,
                  T* skip, T* d_gates, T* d_hgates) {
  if constexpr (std::is_same_v<T, float>) {
    gru_backward_rows_float(B, H, gates, h_n, h_in, grad_h, dh_next, skip, d_gates, d_hgates);
  } else {
    gru_backward_rows<T>(B, H, gates, h_n, h_in, grad_h, dh_next, skip, d_gates, d_hgates);
  }
}

// Where each gradient goes (null: not wanted).
template <typename T>
struct Gradients {
  T* x;
  T* h0;
  T* c0;
  T* w_ih;
  T* w_hh;
  T* b_ih;
  T* b_hh;
};

// sum = sum_n rows[n, :] over rows [n, width].
template <typename T>
void column_sum(const T* rows, int64_t n, int64_t width, T* sum) {
  for (int64_t j = 0; j < width; ++j) sum[j] = T(0);
  for (int64_t i = 0; i < n; ++i) {
    const T* row = rows + i * width;
    for (int64_t j = 0; j < width; ++j) sum[j] += row[j];
  }
}

// Backpropagation through time. grad_hidden and grad_cells [N, H] are the gradients of the
// outputs (null: zero). d_gates [N, G H] receives the gradient of the input side's
// pre-activations, d_hgates that of the hidden side's (a GRU's differ in the n gate; an LSTM's
// are d_gates itself, pass null); carry [2, B, H] is scratch.
template <typename T>
void run_backward(bool lstm, const Sizes& s, const T* x, const T* w_ih, const T* w_hh, const uint8_t* resets,
                  const T* work, const T* grad_hidden, const T* grad_cells, T* d_gates, T* d_hgates, T* carry,
                  const Gradients<T>& out) {
  const Work layout = work_layout(lstm, s);
  const int64_t H = s.hidden, G = s.width(), B = s.batch, BH = B * H;
  const T* gates = work + layout.gates;
  T* dh_next = carry;       // d loss / d h going into step t + 1 (after its resets), then into t
  T* dc_next = carry + BH;  // the same for c (LSTM)
  std::memset(carry, 0, sizeof(T) * static_cast<size_t>(2 * BH));
  T* const d_hidden_side = lstm ? d_gates : d_hgates;
  for (int64_t t = s.steps - 1; t >= 0; --t) {
    const int64_t at = t * BH;
    const T* g = gates + t * B * G;
    T* dg = d_gates + t * B * G;
    T* dgh = d_hidden_side + t * B * G;
    const T* h_in = work + layout.hidden_in + at;
    const T* gh_t = grad_hidden != nullptr ? grad_hidden + at : nullptr;
    if (lstm) {
      const T* gc_t = grad_cells != nullptr ? grad_cells + at : nullptr;
      lstm_backward<T>(B, H, g, work + layout.cells_in + at, work + layout.cell_tanh + at, gh_t, gc_t, dh_next, dc_next,
                       dg);
      gemm<T>(false, false, B, H, G, dg, G, w_hh, H, T(0), dh_next, H);
    } else {
      T* skip = dc_next;  // a GRU has no c: its row is scratch
      gru_backward<T>(B, H, g, work + layout.hidden_n + at, h_in, gh_t, dh_next, skip, dg, dgh);
      gemm<T>(false, false, B, H, G, dgh, G, w_hh, H, T(0), dh_next, H);
      for (int64_t k = 0; k < BH; ++k) dh_next[k] += skip[k];
    }
    // The state going into step t was zeroed where an episode starts: no gradient flows past it.
    if (resets != nullptr) {
      for (int64_t b = 0; b < B; ++b) {
        if (resets[t * B + b] == 0) continue;
        std::memset(dh_next + b * H, 0, sizeof(T) * static_cast<size_t>(H));
        std::memset(dc_next + b * H, 0, sizeof(T) * static_cast<size_t>(H));
      }
    }
  }
  if (out.h0 != nullptr) std::memcpy(out.h0, dh_next, sizeof(T) * static_cast<size_t>(BH));
  if (out.c0 != nullptr) std::memcpy(out.c0, dc_next, sizeof(T) * static_cast<size_t>(BH));
  const int64_t N = s.rows();
  if (out.x != nullptr) gemm<T>(false, false, N, s.inputs, G, d_gates, G, w_ih, s.inputs, T(0), out.x, s.inputs);
  if (out.w_ih != nullptr) gemm<T>(true, false, G, s.inputs, N, d_gates, G, x, s.inputs, T(0), out.w_ih, s.inputs);
  if (out.w_hh != nullptr) {
    gemm<T>(true, false, G, H, N, d_hidden_side, G, work + layout.hidden_in, H, T(0), out.w_hh, H);
  }
  if (out.b_ih != nullptr) column_sum(d_gates, N, G, out.b_ih);
  if (out.b_hh != nullptr) column_sum(d_hidden_side, N, G, out.b_hh);
}

template <typename T>
const T* pointer(const at::Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

template <typename T>
T* pointer(at::Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

// Runs run_forward on tensors: returns {hidden [T, B, H], cells [T, B, H] or undefined, work}.
std::vector<at::Tensor> forward_tensors(bool lstm, const Sizes& s, const at::Tensor& x, const at::Tensor& h0,
                                        const at::Tensor& c0, const at::Tensor& w_ih, const at::Tensor& w_hh,
                                        const at::Tensor& b_ih, const at::Tensor& b_hh, const at::Tensor& resets) {
  const at::TensorOptions options = x.options();
  at::Tensor hidden = at::empty({s.steps, s.batch, s.hidden}, options);
  at::Tensor cells = lstm ? at::empty({s.steps, s.batch, s.hidden}, options) : at::Tensor();
  at::Tensor work = at::empty({work_layout(lstm, s).total}, options);
  const uint8_t* reset_flags = resets.defined() ? resets.data_ptr<uint8_t>() : nullptr;
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "fused_recurrence", [&] {
    run_forward<scalar_t>(lstm, s, x.data_ptr<scalar_t>(), h0.data_ptr<scalar_t>(), pointer<scalar_t>(c0),
                          w_ih.data_ptr<scalar_t>(), w_hh.data_ptr<scalar_t>(), b_ih.data_ptr<scalar_t>(),
                          b_hh.data_ptr<scalar_t>(), reset_flags, hidden.data_ptr<scalar_t>(), pointer<scalar_t>(cells),
                          work.data_ptr<scalar_t>());
  });
  return {hidden, cells, work};
}

Sizes sizes_of(bool lstm, const at::Tensor& features, int64_t hidden) {
  return Sizes{features.size(0), features.size(1), features.size(2), hidden, lstm ? 4 : 3};
}

struct RecurrenceFunction : public torch::autograd::Function<RecurrenceFunction> {
  // Returns {hidden} (GRU) or {hidden, cells} (LSTM). All tensors contiguous, of one dtype;
  // resets [T, B] uint8 or undefined.
  static variable_list forward(AutogradContext* ctx, const at::Tensor& features, const at::Tensor& h0,
                               const c10::optional<at::Tensor>& c0, const at::Tensor& w_ih, const at::Tensor& w_hh,
                               const at::Tensor& b_ih, const at::Tensor& b_hh,
                               const c10::optional<at::Tensor>& resets) {
    const bool lstm = c0.has_value() && c0->defined();
    const Sizes s = sizes_of(lstm, features, h0.size(1));
    const at::Tensor reset_flags = resets.has_value() ? *resets : at::Tensor();
    std::vector<at::Tensor> out =
        forward_tensors(lstm, s, features, h0, lstm ? *c0 : at::Tensor(), w_ih, w_hh, b_ih, b_hh, reset_flags);
    ctx->set_materialize_grads(false);
    ctx->save_for_backward({features, w_ih, w_hh, out[2], reset_flags});
    ctx->saved_data["lstm"] = lstm;
    if (lstm) return {out[0], out[1]};
    return {out[0]};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& features = saved[0];
    const at::Tensor& w_ih = saved[1];
    const at::Tensor& w_hh = saved[2];
    const at::Tensor& work = saved[3];
    const at::Tensor& resets = saved[4];
    const bool lstm = ctx->saved_data["lstm"].toBool();
    const int64_t hidden_size = w_hh.size(1);
    const Sizes s = sizes_of(lstm, features, hidden_size);
    const at::TensorOptions options = features.options();
    const auto as_input = [&](const at::Tensor& grad) {
      return grad.defined() ? grad.to(features.scalar_type()).contiguous() : at::Tensor();
    };
    const at::Tensor grad_hidden = as_input(grad_outputs[0]);
    const at::Tensor grad_cells = lstm ? as_input(grad_outputs[1]) : at::Tensor();
    variable_list grads(8);
    if (!grad_hidden.defined() && !grad_cells.defined()) return grads;
    // needs_input_grad counts the node's edges, one per tensor given: a GRU's absent c0 has none.
    const auto wanted = [&](size_t index, at::IntArrayRef shape) {
      if (ctx->needs_input_grad(lstm || index < 2 ? index : index - 1)) grads[index] = at::empty(shape, options);
    };
    wanted(0, features.sizes());
    wanted(1, {s.batch, s.hidden});
    if (lstm) wanted(2, {s.batch, s.hidden});
    wanted(3, w_ih.sizes());
    wanted(4, w_hh.sizes());
    wanted(5, {s.width()});
    wanted(6, {s.width()});
    at::Tensor d_gates = at::empty({s.rows(), s.width()}, options);
    at::Tensor d_hgates = lstm ? at::Tensor() : at::empty({s.rows(), s.width()}, options);
    at::Tensor carry = at::empty({2, s.batch, s.hidden}, options);
    AT_DISPATCH_FLOATING_TYPES(features.scalar_type(), "fused_recurrence_backward", [&] {
      const Gradients<scalar_t> out{pointer<scalar_t>(grads[0]), pointer<scalar_t>(grads[1]),
                                    pointer<scalar_t>(grads[2]), pointer<scalar_t>(grads[3]),
                                    pointer<scalar_t>(grads[4]), pointer<scalar_t>(grads[5]),
                                    pointer<scalar_t>(grads[6])};
      run_backward<scalar_t>(lstm, s, features.data_ptr<scalar_t>(), w_ih.data_ptr<scalar_t>(),
                             w_hh.data_ptr<scalar_t>(), resets.defined() ? resets.data_ptr<uint8_t>() : nullptr,
                             work.data_ptr<scalar_t>(), pointer<scalar_t>(grad_hidden), pointer<scalar_t>(grad_cells),
                             d_gates.data_ptr<scalar_t>(), pointer<scalar_t>(d_hgates), carry.data_ptr<scalar_t>(),
                             out);
    });
    return grads;
  }
};

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument("fused_recurrence: " + what); }

// The episode starts as one byte per [t, b] (1 where the state is reset before step t), or
// undefined where there are none.
at::Tensor reset_flags(const at::Tensor& starts, int64_t steps, int64_t batch) {
  if (!starts.defined()) return {};
  if (starts.numel() != steps * batch) {
    std::ostringstream message;
    message << "starts must be [T, B] = [" << steps << ", " << batch << "], got " << starts.sizes();
    fail(message.str());
  }
  const at::Tensor values = starts.to(at::kCPU, at::kFloat).contiguous();
  at::Tensor flags = at::empty({steps, batch}, at::TensorOptions().dtype(at::kByte));
  const float* from = values.data_ptr<float>();
  uint8_t* to = flags.data_ptr<uint8_t>();
  bool any = false;
  for (int64_t i = 0; i < steps * batch; ++i) {
    to[i] = from[i] != 0.0F ? 1 : 0;
    any = any || to[i] != 0;
  }
  return any ? flags : at::Tensor();
}

}  // namespace

bool fused_recurrence_applies(const at::Tensor& features, const std::vector<at::Tensor>& state,
                              const std::vector<at::Tensor>& weights) {
  if (!features.defined() || !(features.scalar_type() == at::kFloat || features.scalar_type() == at::kDouble)) {
    return false;
  }
  const auto fits = [&](const at::Tensor& t) {
    return t.defined() && t.device().is_cpu() && t.scalar_type() == features.scalar_type() && t.numel() > 0 &&
           t.numel() <= std::numeric_limits<int>::max() / 4;
  };
  if (!fits(features)) return false;
  for (const at::Tensor& t : state) {
    if (!fits(t)) return false;
  }
  for (const at::Tensor& t : weights) {
    if (!fits(t)) return false;
  }
  return true;
}

RecurrenceOutputs fused_recurrence(bool lstm, const at::Tensor& features, const at::Tensor& starts,
                                   const std::vector<at::Tensor>& state, const std::vector<at::Tensor>& weights) {
  const size_t state_count = lstm ? 2 : 1;
  if (state.size() != state_count || weights.size() != 4) {
    std::ostringstream message;
    message << "needs " << state_count << " state tensors and 4 weights (w_ih, w_hh, b_ih, b_hh), got " << state.size()
            << " and " << weights.size();
    fail(message.str());
  }
  if (features.dim() != 3 || state[0].dim() != 2) {
    std::ostringstream message;
    message << "features must be [T, B, I] and the state [B, H], got " << features.sizes() << " and "
            << state[0].sizes();
    fail(message.str());
  }
  const int64_t steps = features.size(0), batch = features.size(1), inputs = features.size(2);
  const int64_t hidden = state[0].size(1), width = (lstm ? 4 : 3) * hidden;
  const auto shaped = [](const at::Tensor& t, std::vector<int64_t> shape) {
    return t.sizes() == at::IntArrayRef(shape);
  };
  bool fit = shaped(weights[0], {width, inputs}) && shaped(weights[1], {width, hidden}) &&
             shaped(weights[2], {width}) && shaped(weights[3], {width});
  for (const at::Tensor& t : state) fit = fit && shaped(t, {batch, hidden});
  if (!fit) {
    std::ostringstream message;
    message << "shapes do not fit: features " << features.sizes() << ", state " << state[0].sizes();
    if (lstm) message << " and " << state[1].sizes();
    message << ", w_ih " << weights[0].sizes() << ", w_hh " << weights[1].sizes() << ", b_ih " << weights[2].sizes()
            << ", b_hh " << weights[3].sizes() << " (expected w_ih [" << width << ", " << inputs << "], w_hh [" << width
            << ", " << hidden << "])";
    fail(message.str());
  }
  if (!fused_recurrence_applies(features, state, weights)) {
    fail("needs non-empty CPU tensors, all float32 or all float64");
  }
  const at::Tensor resets = reset_flags(starts, steps, batch);
  const at::Tensor x = features.contiguous();
  const at::Tensor h0 = state[0].contiguous();
  const at::Tensor c0 = lstm ? state[1].contiguous() : at::Tensor();
  const at::Tensor w_ih = weights[0].contiguous(), w_hh = weights[1].contiguous();
  const at::Tensor b_ih = weights[2].contiguous(), b_hh = weights[3].contiguous();
  bool requires_grad = false;
  for (const at::Tensor& t : {x, h0, c0, w_ih, w_hh, b_ih, b_hh})
    requires_grad = requires_grad || (t.defined() && t.requires_grad());
  RecurrenceOutputs result;
  if (!c10::GradMode::is_enabled() || !requires_grad) {
    const Sizes s = sizes_of(lstm, x, hidden);
    std::vector<at::Tensor> out = forward_tensors(lstm, s, x, h0, c0, w_ih, w_hh, b_ih, b_hh, resets);
    result.hidden = out[0];
    result.cells = out[1];
    return result;
  }
  const variable_list out =
      RecurrenceFunction::apply(x, h0, lstm ? c10::optional<at::Tensor>(c0) : c10::nullopt, w_ih, w_hh, b_ih, b_hh,
                                resets.defined() ? c10::optional<at::Tensor>(resets) : c10::nullopt);
  result.hidden = out[0];
  if (lstm) result.cells = out[1];
  return result;
}

}  // namespace concord::nn
