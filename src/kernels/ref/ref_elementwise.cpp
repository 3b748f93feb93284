// The elementwise reference family: each part lives in its own file
// (ref_elementwise_{unary,activation,binary,variadic,cast}.cpp).
#include "kernels/kernel.h"
#include "kernels/ref/ref_families.h"
#include "kernels/ref/ref_math_elementwise.h"

namespace octet {

void register_ref_elementwise(KernelRegistry& r) {
  ref::register_elementwise_unary(r);
  ref::register_elementwise_activation(r);
  ref::register_elementwise_binary(r);
  ref::register_elementwise_variadic(r);
  ref::register_elementwise_cast(r);
}

}  // namespace octet
