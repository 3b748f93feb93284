// The dtype rule for calibration inputs: what data of one type may feed a model input of
// another. Calibration sets are often written by hand (np.int32 token ids for an int64
// input, float64 features from pandas), and refusing those would only make users convert
// by hand, so the conversions that cannot change a value's meaning are done here:
//   - integer -> integer (8 to 64 bits, signed or not) when every value fits the target;
//   - float16 / bfloat16 / float64 -> float32, rounding to nearest (a finite float64
//     beyond float32's range is an error rather than a silent infinity).
// Everything else (integers for a float input, floats for integer ids, bool) is an error:
// it is far more likely the wrong file than something to fix by casting.
#pragma once

#include <string>

#include "core/tensor.h"

namespace octet::quant {

// Errors unless `from` may be converted to `to` (the rule above). `context` starts the
// message ("calib/ids.npy: input 'input_ids'").
void check_input_dtype(DType from, DType to, const std::string& context);

// `t` itself when it already has dtype `to`, else a converted copy; errors (naming the
// first offending value) when the rule forbids it or a value does not fit.
Tensor convert_input_dtype(const Tensor& t, DType to, const std::string& context);

}  // namespace octet::quant
