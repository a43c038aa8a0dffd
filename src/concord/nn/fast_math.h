#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

// Elementwise float32 functions for the fused CPU paths (fused_linear_stack.cpp,
// fused_recurrence.cpp): branch-free, so that loops over them vectorise, where the C library's
// tanhf and expf are scalar calls (tanhf was the largest symbol of a fused LSTM's profile).

// Loops over these are built for AVX-512, AVX2 and the baseline, and the CPU picks at load time:
// the baseline build is SSE2, a quarter of AVX-512's width. Not under ThreadSanitizer: Clang
// instruments the resolver that picks, which the loader runs before the sanitizer's runtime starts.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CONCORD_NO_CLONES
#endif
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(CONCORD_NO_CLONES) && !defined(__SANITIZE_THREAD__)
#define CONCORD_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CONCORD_VECTOR_CLONES
#endif

namespace concord::nn {

// exp(y) for y in [-86, 88] (the caller clamps): y = k ln 2 + r, |r| <= ln 2 / 2, ln 2 split in two
// so that k ln 2 is exact; exp(r) by its series to r^7 (the next term is below rounding), times 2^k
// through the exponent bits (-124 <= k <= 127 keeps the result normal). Without std::fma, which is
// a library call where the clone's target lacks the instruction (AVX2 does not imply FMA).
inline float exp_float_in_range(float y) {
  const float k = std::nearbyint(y * 1.44269504088896341F);
  const float r = (y - k * 0.693145751953125F) - k * 1.428606765330187045e-06F;
  float q = 1.0F / 5040.0F;
  q = q * r + 1.0F / 720.0F;
  q = q * r + 1.0F / 120.0F;
  q = q * r + 1.0F / 24.0F;
  q = q * r + 1.0F / 6.0F;
  q = q * r + 0.5F;
  q = q * r + 1.0F;
  q = q * r + 1.0F;
  int32_t bits = 0;
  std::memcpy(&bits, &q, sizeof bits);
  bits += static_cast<int32_t>(k) * (1 << 23);
  float e = 0.0F;
  std::memcpy(&e, &bits, sizeof e);
  return e;
}

// tanh(x) in float32, within 1.52 units in the last place of the exact value (LibTorch's is within
// 1). Near 0 (|x| < 0.55) the odd Taylor series to x^17 (its terms shrink by (x / (pi / 2))^2 < 1/8
// each, so the next is below rounding); elsewhere (1 - e) / (1 + e) with e = exp(-2 |x|), where
// 1 - e loses no digits. From |x| = 9 on tanh rounds to 1. The sign is copied last, so that
// tanh(-0) = -0, and NaN stays NaN (it takes the series' side).
inline float tanh_float(float x) {
  const float a = std::fabs(x);
  const float s = a * a;
  float p = 6404582.0F / 10854718875.0F;
  p = p * s - 929569.0F / 638512875.0F;
  p = p * s + 21844.0F / 6081075.0F;
  p = p * s - 1382.0F / 155925.0F;
  p = p * s + 62.0F / 2835.0F;
  p = p * s - 17.0F / 315.0F;
  p = p * s + 2.0F / 15.0F;
  p = p * s - 1.0F / 3.0F;
  const float series = a + a * s * p;
  const float e = exp_float_in_range(-2.0F * std::fmin(a, 9.0F));
  const float rational = (1.0F - e) / (1.0F + e);
  return std::copysign(a >= 0.55F ? rational : series, x);
}

// The logistic sigmoid 1 / (1 + exp(-x)) in float32, as LibTorch computes it, with exp(-x) clamped
// to [exp(-86), exp(88)]: below x = -88 the result (under 1e-38, against the exact one's smaller
// still) differs from LibTorch's only in the subnormal range, and above x = 86 both round to 1.
// NaN stays NaN.
inline float sigmoid_float(float x) {
  const float y = std::fmin(std::fmax(-x, -86.0F), 88.0F);
  const float e = exp_float_in_range(y);
  return 1.0F / (1.0F + (x != x ? x : e));
}

}  // namespace concord::nn
