#pragma once
// Block formats: conversion between f32 and every supported weight type. These scalar
// routines are the reference the SIMD kernels are tested against.
#include <cstdint>

#include "quant/ggml_type.h"

namespace tps {

// The weight types the engine computes with, and the test for one.
inline constexpr GgmlType kWeightTypes[] = {GgmlType::kF32,  GgmlType::kF16,    GgmlType::kBF16,  GgmlType::kQ8_0,
                                            GgmlType::kQ4_0, GgmlType::kQ4_1,   GgmlType::kQ5_0,  GgmlType::kQ5_1,
                                            GgmlType::kQ2_K, GgmlType::kQ3_K,   GgmlType::kQ4_K,  GgmlType::kQ5_K,
                                            GgmlType::kQ6_K, GgmlType::kIQ4_NL, GgmlType::kIQ4_XS};
bool is_supported_weight_type(GgmlType t);

// n must be a multiple of the type's block size. `src` points at the first block.
void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n);
// Round-to-nearest quantization as llama.cpp's reference quantizers do (no imatrix).
void quantize_row(GgmlType t, const float* src, void* dst, int64_t n);

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
float bf16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);  // round to nearest even

}  // namespace tps
