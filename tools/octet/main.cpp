// The octet command line: one subcommand per file in this folder.
#include <iostream>
#include <new>

#include "cli_common.h"
#include "octet/error.h"

int main(int argc, char** argv) {
  CLI::App app{
      "octet: post-training int8 quantization and fast CPU execution of transformer ONNX models"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "octet 0.1.0");
  octet::cli::add_inspect_command(app);
  octet::cli::add_run_command(app);
  octet::cli::add_optimize_command(app);
  octet::cli::add_quantize_command(app);
  octet::cli::add_bench_command(app);
  octet::cli::add_check_command(app);
  octet::cli::add_legalize_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const octet::cli::ExitStatus& s) {
    return s.code;
  } catch (const octet::Error& e) {
    std::cerr << "octet: error: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "octet: error: out of memory (a tensor in the model or its inputs is too large)\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "octet: internal error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
