// Helpers for the math reference-kernel tests: run one op through a Session on given
// tensors, build float16/bfloat16 tensors, and read results back as plain vectors.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"
#include "runtime/session.h"

namespace octet::testing {

// The name every node under test gets, so error messages can be checked for it.
inline const char* kNodeName = "node_under_test";

struct OpCall {
  std::string op;
  std::vector<std::optional<Tensor>> inputs;  // nullopt = omitted optional input
  std::vector<Attribute> attrs = {};
  int64_t opset = 21;
  int num_outputs = 1;
  std::string domain = "";
  std::vector<bool> wanted_outputs = {};  // default: all wanted
};

// Builds Graph(inputs -> op -> outputs) and runs it; returns the outputs in order.
inline std::vector<Tensor> run(const OpCall& call) {
  auto g = std::make_shared<Graph>();
  g->opset_imports[""] = call.opset;
  if (!call.domain.empty()) g->opset_imports[call.domain] = 1;
  std::vector<std::string> in_names, out_names;
  NamedTensors feeds;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    if (!call.inputs[i]) {
      in_names.push_back("");
      continue;
    }
    const Tensor& t = *call.inputs[i];
    const std::string name = "in" + std::to_string(i);
    g->add_input(name, TensorType(t.dtype(), DimVector(t.shape().begin(), t.shape().end())));
    in_names.push_back(name);
    feeds.emplace_back(name, t);
  }
  for (int i = 0; i < call.num_outputs; ++i) {
    const bool wanted = call.wanted_outputs.empty() || call.wanted_outputs[i];
    out_names.push_back(wanted ? "out" + std::to_string(i) : "");
  }
  g->add_node(call.op, in_names, out_names, call.attrs, call.domain, kNodeName);
  for (const std::string& name : out_names)
    if (!name.empty()) g->mark_output(g->value(name));
  Session session(g);
  std::vector<Tensor> outs;
  for (auto& [name, t] : session.run(feeds)) outs.push_back(t);
  return outs;
}

// Single-output convenience.
inline Tensor run1(const std::string& op, std::vector<std::optional<Tensor>> inputs,
                   std::vector<Attribute> attrs = {}, int64_t opset = 21) {
  return run({op, std::move(inputs), std::move(attrs), opset}).at(0);
}

template <typename T>
Tensor tensor(std::vector<int64_t> shape, std::vector<T> values) {
  return Tensor::from_vector<T>(std::move(shape), values);
}
inline Tensor f32(std::vector<int64_t> shape, std::vector<float> values) {
  return tensor<float>(std::move(shape), std::move(values));
}
inline Tensor i64(std::vector<int64_t> shape, std::vector<int64_t> values) {
  return tensor<int64_t>(std::move(shape), std::move(values));
}

// float16 / bfloat16 tensors from float values (rounded to nearest even).
inline Tensor half_tensor(DType t, std::vector<int64_t> shape, const std::vector<float>& values) {
  Tensor out(t, std::move(shape));
  EXPECT_EQ(static_cast<int64_t>(values.size()), out.numel());
  uint16_t* bits = reinterpret_cast<uint16_t*>(out.mutable_raw());
  for (size_t i = 0; i < values.size(); ++i)
    bits[i] = t == DType::Float16 ? float_to_half(values[i]) : float_to_bfloat16(values[i]);
  return out;
}
inline Tensor f16(std::vector<int64_t> shape, const std::vector<float>& v) {
  return half_tensor(DType::Float16, std::move(shape), v);
}
inline Tensor bf16(std::vector<int64_t> shape, const std::vector<float>& v) {
  return half_tensor(DType::BFloat16, std::move(shape), v);
}

// Raw bytes tensor (sub-byte and float8 types).
inline Tensor raw_tensor(DType t, std::vector<int64_t> shape, const std::vector<uint8_t>& bytes) {
  Tensor out(t, std::move(shape));
  EXPECT_EQ(bytes.size(), out.bytes());
  for (size_t i = 0; i < bytes.size() && i < out.bytes(); ++i) out.mutable_raw()[i] = bytes[i];
  return out;
}
inline std::vector<uint8_t> bytes_of(const Tensor& t) { return std::vector<uint8_t>(t.raw(), t.raw() + t.bytes()); }

inline std::vector<float> floats(const Tensor& t) { return t.to_float_vector(); }
inline std::vector<int64_t> ints(const Tensor& t) { return t.to_int64_vector(); }
inline std::vector<double> doubles(const Tensor& t) {
  const double* p = t.data<double>();
  return std::vector<double>(p, p + t.numel());
}

// Elementwise |got - want| <= atol + rtol * |want|, NaN matching NaN.
inline void expect_near(const std::vector<float>& got, const std::vector<float>& want,
                        double rtol = 1e-6, double atol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i << " is " << got[i] << ", want NaN";
      continue;
    }
    if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << "element " << i;
      continue;
    }
    EXPECT_NEAR(got[i], want[i], atol + rtol * std::fabs(want[i])) << "element " << i;
  }
}

// Expects `fn` to throw octet::Error whose message names the node under test and contains
// `fragment`.
template <typename Fn>
void expect_node_error(Fn&& fn, const std::string& fragment) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing '" << fragment << "'";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(kNodeName), std::string::npos) << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
  }
}

}  // namespace octet::testing
