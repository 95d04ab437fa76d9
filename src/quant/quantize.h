#pragma once
// Block formats: conversion between f32 and every supported weight type. These scalar
// routines are the reference the SIMD kernels are tested against.
#include <cstdint>

#include "quant/ggml_type.h"

namespace tps {

// True for the weight types the engine computes with: F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0
// Q5_1 Q4_K Q5_K Q6_K.
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
