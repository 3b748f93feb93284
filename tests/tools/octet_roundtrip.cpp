// Dev tool for the round-trip tests: load a model and save it again, so python tests can
// compare the two in onnxruntime without depending on the CLI.
//   octet_roundtrip IN OUT [--external-data] [--no-infer]
#include <cstring>
#include <iostream>

#include "onnx/model_io.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: octet_roundtrip IN OUT [--external-data] [--no-infer]\n";
    return 2;
  }
  octet::LoadOptions load;
  octet::SaveOptions save;
  for (int i = 3; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--external-data")) {
      save.external_data = true;
    } else if (!std::strcmp(argv[i], "--no-infer")) {
      load.infer_types = false;
    } else {
      std::cerr << "octet_roundtrip: unknown option " << argv[i] << "\n";
      return 2;
    }
  }
  try {
    octet::Model model = octet::load_model(argv[1], load);
    for (const auto& w : model.warnings) std::cerr << "warning: " << w << "\n";
    for (const auto& w : octet::save_model(model, argv[2], save)) std::cerr << "warning: " << w << "\n";
  } catch (const octet::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
