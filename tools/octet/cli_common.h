// Pieces every octet subcommand shares: dim bindings from --dim, and the error policy
// (one line on stderr, exit code 1 for anything the user's input caused).
#pragma once

#include <CLI/CLI.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "ir/dim.h"

namespace octet::cli {

// "seq=128" -> {"seq", 128}; an error naming the bad item otherwise.
Bindings parse_dim_bindings(const std::vector<std::string>& items);

// Refuses to write `out` (and, with external data, `out`.data) over the input model or any
// of its external data files: the result would replace the only copy of the original.
// Other existing files need `force`. `what` names the result ("optimized", "quantized").
void check_output_paths(const std::string& model, const std::filesystem::path& out, bool external_data, bool force,
                        const std::string& what);

// Thrown by a subcommand that ends with a status of its own (octet check: 1 when it found
// problems, 2 when the model could not be read); main() returns `code`.
struct ExitStatus {
  int code;
};

// Each subcommand registers itself on the app and returns the callback-bearing subcommand.
void add_inspect_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_optimize_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_bench_decode_command(CLI::App& app);
void add_quantize_command(CLI::App& app);
void add_check_command(CLI::App& app);
void add_legalize_command(CLI::App& app);
void add_generate_command(CLI::App& app);

}  // namespace octet::cli
