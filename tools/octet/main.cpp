// The octet command line: one subcommand per file in this folder.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <new>

#include "cli_common.h"
#include "octet/error.h"

namespace {

// OpenMP threads that wait for work spin before they sleep. libgomp's default spin
// (GOMP_SPINCOUNT 300000, some 3 ms here) made latency grow 7-18x beside a neighbour on
// the CPU (issue 19): a waiting thread burns the core its descheduled sibling needs.
// Session runs now drop to one thread while other processes compete for the cores
// (runtime/thread_governor.h), so the spin matters on a quiet machine mostly, where too
// short a one costs a wake-up per parallel region (~45 us on a 2-vCPU VM): 1000 spins
// (~11 us) left MiniLM-L6 int8 8-12% slower than 10000, and past 10000 nothing more was
// gained. Work outside sessions (the quantizer's own loops) still waits this long; beside
// a neighbour, the governor and 10000 gave MiniLM-L3 1.7-2.0x its quiet latency
// (bench/shared_cpu.py, bench/results/2026-11-27_session18_*). The user's own
// OMP_WAIT_POLICY or GOMP_SPINCOUNT always wins.
constexpr const char* kSpinCount = "10000";

// libgomp reads its environment while it is loaded, before main() and even before a
// .preinit_array function could set it (libc's own initialization, which runs after
// those, resets environ). So the setting takes effect by starting once more with it set:
// one exec, a millisecond. If that fails, octet runs on with libgomp's default.
void ensure_openmp_wait_settings(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;  // the user's choice, or done
  ::setenv("GOMP_SPINCOUNT", kSpinCount, 1);
  ::execv("/proc/self/exe", argv);
}

// The model file of the subcommand that ran, so an out-of-memory error can name it.
std::string model_argument(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands())
    if (const CLI::Option* o = sub->get_option_no_throw("model"); o && o->count() > 0) return o->as<std::string>();
  return "";
}

// "model.onnx: node 'x' (Tile): out of memory allocating N bytes" - unless the message
// already starts with the file (load errors do).
std::string with_model(const CLI::App& app, const std::string& message) {
  const std::string model = model_argument(app);
  if (model.empty() || message.rfind(model, 0) == 0) return message;
  return model + ": " + message;
}

}  // namespace

int main(int argc, char** argv) {
  ensure_openmp_wait_settings(argv);
  CLI::App app{
      "octet: post-training int8 quantization and fast CPU execution of transformer ONNX models"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "octet 0.1.0");
  octet::cli::add_inspect_command(app);
  octet::cli::add_run_command(app);
  octet::cli::add_optimize_command(app);
  octet::cli::add_quantize_command(app);
  octet::cli::add_bench_command(app);
  octet::cli::add_bench_decode_command(app);
  octet::cli::add_check_command(app);
  octet::cli::add_legalize_command(app);
  octet::cli::add_generate_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const octet::cli::ExitStatus& s) {
    return s.code;
  } catch (const octet::OutOfMemory& e) {
    std::cerr << "octet: error: " << with_model(app, e.what()) << "\n";
    return 1;
  } catch (const octet::Error& e) {
    std::cerr << "octet: error: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "octet: error: " << with_model(app, "out of memory (a tensor in the model or its inputs is too large)")
              << "\n";
    return 1;
  } catch (const std::length_error&) {
    // The standard library's text ("cannot create std::vector larger than max_size()")
    // says nothing a user can act on.
    std::cerr << "octet: error: " << with_model(app, "out of memory (a size in the model or its inputs is larger "
                                                     "than any buffer can hold)")
              << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "octet: internal error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
