// Tiny-graph builder for the shape and linalg inference tests.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/infer.h"
#include "octet/error.h"

namespace octet::testing {

inline Dim S(const std::string& name) { return Dim::symbol(name); }

class GraphBuilder {
 public:
  explicit GraphBuilder(int64_t opset = 17) { g.opset_imports[""] = opset; }

  Value* input(const std::string& name, DType t, std::optional<DimVector> dims) {
    return g.add_input(name, TensorType(t, std::move(dims)));
  }
  // A 1-D int64 initializer (or any shape given).
  Value* ints(const std::string& name, const std::vector<int64_t>& v, std::optional<std::vector<int64_t>> shape = {}) {
    std::vector<int64_t> s = shape ? *shape : std::vector<int64_t>{static_cast<int64_t>(v.size())};
    return g.add_initializer(name, std::make_shared<Tensor>(Tensor::from_vector<int64_t>(s, v)));
  }
  Value* scalar(const std::string& name, int64_t v) { return ints(name, {v}, std::vector<int64_t>{}); }
  Value* floats(const std::string& name, const std::vector<float>& v, std::vector<int64_t> shape) {
    return g.add_initializer(name, std::make_shared<Tensor>(Tensor::from_vector<float>(shape, v)));
  }
  Node* node(const std::string& op, const std::vector<std::string>& ins, const std::vector<std::string>& outs,
             std::vector<Attribute> attrs = {}, const std::string& name = "") {
    return g.add_node(op, ins, outs, std::move(attrs), "", name);
  }
  InferResult infer(const DeclaredTypes& declared = {}) { return infer_graph(g, declared); }

  const TensorType& type(const std::string& name) const { return g.value(name)->type; }
  DimVector dims(const std::string& name) const {
    const auto& d = type(name).dims;
    EXPECT_TRUE(d.has_value()) << name << " has unknown rank";
    return d ? *d : DimVector{};
  }
  std::optional<DimVector> values(const std::string& name) const { return g.value(name)->known_values; }

  Graph g;
};

inline Attribute I(const std::string& name, int64_t v) { return Attribute::make_int(name, v); }
inline Attribute Is(const std::string& name, std::vector<int64_t> v) { return Attribute::make_ints(name, std::move(v)); }
inline Attribute Str(const std::string& name, const std::string& v) { return Attribute::make_string(name, v); }

// The message of the octet::Error `f` throws ("" when it throws none).
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

}  // namespace octet::testing
