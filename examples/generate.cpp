// Greedy generation through the installed public API: a decoder exported with a KV cache in
// optimum's naming, token ids in, streamed token ids out.
//   octet_generate_example MODEL_WITH_PAST.onnx
#include <cstdio>
#include <vector>

#include "octet/octet.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MODEL_WITH_PAST.onnx\n", argv[0]);
    return 2;
  }
  try {
    octet::Generator generator(argv[1], {.threads = 1});
    octet::GenerationOptions options;
    options.max_new_tokens = 8;
    std::printf("streamed:");
    const octet::GenerationResult r = generator.generate({1, 2, 3}, options, [](int64_t token) {
      std::printf(" %lld", static_cast<long long>(token));
      return true;
    });
    std::printf("\ngenerated %zu tokens (%s), first after %.2f ms\n", r.tokens.size(), r.stop_reason.c_str(),
                r.timings.time_to_first_token_ms);
  } catch (const octet::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
