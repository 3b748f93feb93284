// Helpers shared by the math op families: elementwise, reductions/normalization and
// quantization. They check ONNX type constraints with messages that name the node, the
// inputs' types and the rule broken (user story 3), broadcast inputs, and carry the
// symbolic contents of small integer tensors through arithmetic (user story 1).
//
// Private to these families; shape_ops/linalg_ops keep their own helpers.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ops/op_registry.h"

namespace octet::math {

// The newest ai.onnx opset these rules know. A graph that imports no ai.onnx opset
// (hand-built graphs, tests) is read as this one.

// ---- element-type families, as ONNX type constraints name them
bool is_float_type(DType t);       // float16, float32, float64, bfloat16
bool is_int_type(DType t);         // 8- to 64-bit integers, signed or unsigned
bool is_signed_int_type(DType t);  // int8 .. int64
bool is_numeric_type(DType t);     // is_float_type or is_int_type
bool is_bool_type(DType t);
bool is_any_type(DType t);

// Names of the families above, for messages.
inline constexpr const char* kFloatTypes = "float16, float32, float64 or bfloat16";
inline constexpr const char* kNumericTypes = "an integer or float16/float32/float64/bfloat16 type";
inline constexpr const char* kSignedTypes = "a signed integer or float16/float32/float64/bfloat16 type";

// "input 1 'bias' (float16[768])", or "input 1 (absent)".
std::string describe_input(const InferContext& ctx, size_t i);

// Fails naming the node unless input i's element type satisfies `ok`.
void require_type(const InferContext& ctx, size_t i, bool (*ok)(DType), const char* allowed);
// Fails unless input i has exactly `want`.
void require_dtype(const InferContext& ctx, size_t i, DType want);
// Fails unless inputs a and b have one element type (ONNX's shared type variable `T`).
void require_same_type(const InferContext& ctx, size_t a, size_t b);

// Multidirectional (numpy) broadcast of the listed inputs' dims. nullopt when any rank is
// unknown; an error naming the node and both shapes when two known sizes conflict.
std::optional<DimVector> broadcast_inputs(const InferContext& ctx, const std::vector<size_t>& inputs);
// Fails unless input i broadcasts unidirectionally to `target` (PRelu slope, norm scales):
// no higher rank, and every known size is 1 or the target's size.
void require_unidirectional(const InferContext& ctx, size_t i, const DimVector& target);

// Reads an optional int attribute that must be 0 or 1.
bool attr_flag(const InferContext& ctx, const std::string& name, bool fallback);


// ---- symbolic values (contents of rank-0/1 integer tensors)

// Elementwise `fn` over value lists with numpy broadcasting (each list has 1 or n
// elements). nullopt when the lengths do not broadcast or `fn` cannot decide an element.
using ValueFn = std::function<std::optional<Dim>(const std::vector<Dim>&)>;
std::optional<DimVector> map_values(const std::vector<DimVector>& args, const ValueFn& fn);

// Sets output 0's values to `fn` over the listed inputs' values, when every input's values
// are known, the output is an integer/bool tensor of rank 0 or 1, and fn decides them all.
void propagate_values(InferContext& ctx, const std::vector<size_t>& inputs, const ValueFn& fn);

// ---- sub-families, each in its own file, called by the register_* in op_families.h
void register_unary_ops(OpRegistry& r);       // elementwise_unary.cpp
void register_binary_ops(OpRegistry& r);      // elementwise_binary.cpp
void register_quant_matmul_ops(OpRegistry& r);  // quant_matmul_ops.cpp

}  // namespace octet::math
