// Test helpers for the shape and linalg reference kernels: build a one-node graph, run it
// through Session (the reference kernels), and compare results.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"
#include "octet/error.h"
#include "runtime/session.h"

namespace octet {
namespace reftest {

using Inputs = std::vector<std::optional<Tensor>>;
using Attrs = std::vector<Attribute>;

// Every test node is named like this, so errors can be checked to name it.
inline const char* kNodeName = "the_node";

// Runs `op` once. Present inputs become graph inputs fed at run time (or initializers
// when `as_initializers`); std::nullopt is an omitted optional input.
inline std::vector<Tensor> run_op(const std::string& op, const Inputs& inputs, const Attrs& attrs = {},
                                  int64_t opset = 18, int num_outputs = 1, bool as_initializers = false) {
  auto g = std::make_shared<Graph>();
  g->opset_imports[""] = opset;
  std::vector<std::string> in_names;
  NamedTensors feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) {
      in_names.push_back("");
      continue;
    }
    const std::string name = "in" + std::to_string(i);
    if (as_initializers) {
      g->add_initializer(name, std::make_shared<const Tensor>(*inputs[i]));
    } else {
      const auto& s = inputs[i]->shape();
      g->add_input(name, TensorType(inputs[i]->dtype(), DimVector(s.begin(), s.end())));
      feeds.emplace_back(name, *inputs[i]);
    }
    in_names.push_back(name);
  }
  std::vector<std::string> out_names;
  for (int i = 0; i < num_outputs; ++i) out_names.push_back("out" + std::to_string(i));
  g->add_node(op, in_names, out_names, attrs, "", kNodeName);
  for (const auto& n : out_names) g->mark_output(g->value(n));
  Session session(g);
  std::vector<Tensor> out;
  for (auto& [name, t] : session.run(feeds)) out.push_back(t);
  return out;
}

inline Tensor run1(const std::string& op, const Inputs& inputs, const Attrs& attrs = {}, int64_t opset = 18) {
  return run_op(op, inputs, attrs, opset).at(0);
}

// Expects `fn` to throw octet::Error whose message names the test node and contains `part`.
inline void expect_node_error(const std::function<void()>& fn, const std::string& part) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing '" << part << "'";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(std::string("node '") + kNodeName + "'"), std::string::npos) << m;
    EXPECT_NE(m.find(part), std::string::npos) << "message: " << m;
  }
}

// ---- tensor construction

inline Tensor f32(std::vector<int64_t> shape, const std::vector<float>& v) { return Tensor::from_vector<float>(shape, v); }
inline Tensor f64(std::vector<int64_t> shape, const std::vector<double>& v) { return Tensor::from_vector<double>(shape, v); }
inline Tensor i64(std::vector<int64_t> shape, const std::vector<int64_t>& v) { return Tensor::from_vector<int64_t>(shape, v); }
inline Tensor i32(std::vector<int64_t> shape, const std::vector<int32_t>& v) { return Tensor::from_vector<int32_t>(shape, v); }
inline Tensor boolean(std::vector<int64_t> shape, const std::vector<bool>& v) { return Tensor::from_vector<bool>(shape, v); }
inline Tensor ints(const std::vector<int64_t>& v) { return i64({static_cast<int64_t>(v.size())}, v); }

// float16 / bfloat16 tensors from float values (rounded to nearest even).
inline Tensor half_like(DType dtype, std::vector<int64_t> shape, const std::vector<float>& v) {
  Tensor t(dtype, std::move(shape));
  EXPECT_EQ(static_cast<int64_t>(v.size()), t.numel());
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h = dtype == DType::Float16 ? float_to_half(v[i]) : float_to_bfloat16(v[i]);
    std::memcpy(t.mutable_raw() + 2 * i, &h, 2);
  }
  return t;
}
inline Tensor f16(std::vector<int64_t> shape, const std::vector<float>& v) { return half_like(DType::Float16, std::move(shape), v); }
inline Tensor bf16(std::vector<int64_t> shape, const std::vector<float>& v) { return half_like(DType::BFloat16, std::move(shape), v); }

// 0, 1, 2, ... as float32 (or scaled/offset), handy for data-movement checks.
inline std::vector<float> iota(int64_t n, float start = 0.0f, float step = 1.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = start + step * static_cast<float>(i);
  return v;
}
inline Tensor iota_f32(std::vector<int64_t> shape) { return f32(shape, iota(shape_numel(shape))); }

// Deterministic pseudo-random values in [-1, 1) (a tiny LCG, so no <random> differences).
inline std::vector<float> noise(int64_t n, uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t s = seed * 2654435761u + 1;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) / static_cast<float>(1 << 23) - 1.0f;
  }
  return v;
}

// ---- reading results

template <typename T>
std::vector<T> values(const Tensor& t) {
  const T* p = t.data<T>();
  return std::vector<T>(p, p + t.numel());
}
// Any float type (float16/bfloat16 widened) as float.
inline std::vector<float> floats(const Tensor& t) { return t.to_float_vector(); }

inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, float tol,
                         const std::string& what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1.0f + std::abs(want[i]))) << what << " at element " << i;
}

}  // namespace reftest
}  // namespace octet
