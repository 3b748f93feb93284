// Raising a model's ai.onnx opset to 21 so that it may hold blocked DequantizeLinear
// (block_size is new in opset 21): what weight-only quantization's standard form needs
// when the exporter wrote an older opset; likewise QuantizeLinear to int16 (the attention
// probabilities of static quantization on the octet target).
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace octet::quant {

// Rewrites the nodes whose meaning changed incompatibly between `graph`'s opset (>= 13) and
// 21 and sets the opset to 21; returns one note per kind of change made. Between 13 and 21
// the one such change in the ops exporters write is the reductions' `axes` moving from an
// attribute to an input (opset 18: ReduceMean, ReduceMax, ReduceMin, ReduceProd,
// ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare); every other change
// only adds optional attributes or inputs. An opset below 13 is an error naming the file.
// `why` ends the first note: "... to 21 (<why>)".
std::vector<std::string> raise_opset_to_21(Graph& graph, const std::string& file, const std::string& why);

}  // namespace octet::quant
