#include "quant/decoder_set.h"

#include <sstream>

#include "generate/portable_runner.h"
#include "generate/runner_factory.h"
#include "generate/sampling.h"
#include "io/npy.h"
#include "quant/calibrate.h"
#include "quant/calibration_data.h"
#include "quant/seq2seq_set.h"

namespace octet::quant {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const char* const kFirst = "decoder_model";
const char* const kLater = "decoder_with_past_model";

fs::path onnx_file(const fs::path& folder, const char* stem) { return folder / (std::string(stem) + ".onnx"); }

// Greedy decoding of a prompt [B, S] (rows in lockstep) for `steps` tokens: per step, one
// token per row. No stop tokens: every run is as long, so runs compare position by position.
std::vector<std::vector<int64_t>> greedy(generate::DecoderRunner& runner, const Tensor& prompt, int steps) {
  if (prompt.rank() != 2 || prompt.dtype() != DType::Int64)
    fail("decoder set: a prompt sample's input_ids is ", prompt.describe(), ", not int64 [batch, sequence]");
  generate::DecoderStep step;
  step.batch = prompt.shape()[0];
  step.tokens.assign(prompt.data<int64_t>(), prompt.data<int64_t>() + prompt.numel());
  runner.reset();
  std::vector<std::vector<int64_t>> out;
  for (int i = 0; i < steps; ++i) {
    out.push_back(generate::argmax_rows(runner.step(step).to_float_vector(), step.batch));
    step.tokens = out.back();
  }
  return out;
}

}  // namespace

bool is_decoder_only_set(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::exists(onnx_file(path, kFirst), ec) &&
         fs::exists(onnx_file(path, kLater), ec) && !fs::exists(path / "encoder_model.onnx", ec);
}

DecoderSetReport quantize_decoder_set(const DecoderSetJob& job) {
  if (!is_decoder_only_set(job.folder))
    fail(job.folder.string(), ": not a decoder-only set (", kFirst, ".onnx and ", kLater,
         ".onnx, no encoder_model.onnx)");
  if (job.max_new_tokens < 1) fail("decoder set: max_new_tokens must be >= 1, got ", job.max_new_tokens);
  DecoderSetReport report;
  fs::create_directories(job.out_dir);
  const fs::path samples_dir = job.out_dir / ".octet_decoder_calibration";
  // The generated samples (GBs for a real model: each later step carries the cache) go
  // however the job ends.
  struct RemoveOnExit {
    fs::path dir;
    ~RemoveOnExit() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } remove_samples{samples_dir};
  const generate::RunnerOptions options;

  // The prompts: calibration first, the held-out share (5 or more samples) after.
  std::unique_ptr<CalibrationSource> prompts;
  std::unique_ptr<generate::PortableRunner> fp32;
  size_t calibrate = 0;
  if (!job.calib.empty()) {
    auto first = generate::load_session(onnx_file(job.folder, kFirst).string(), options);
    const Value* ids = first->graph().find_value("input_ids");
    if (!ids || !ids->is_graph_input())
      fail(onnx_file(job.folder, kFirst).string(), ": no input_ids input; a decoder set's prompts are token ids");
    prompts = std::make_unique<CalibrationSource>(
        CalibrationSource::open(job.calib, {InputSpec::of(*ids)}, job.calib_samples));
    fp32 = std::make_unique<generate::PortableRunner>(
        generate::load_session(onnx_file(job.folder, kLater).string(), options), first);
    report.prompts = prompts->size();
    calibrate = split_holdout(prompts->size(), job.holdout).first.size();  // the held-out share after them
    fs::create_directories(samples_dir / kFirst);
    fs::create_directories(samples_dir / kLater);
    const ProgressFn progress = job.progress ? stderr_progress("decode steps (calibration)") : ProgressFn{};
    for (size_t i = 0; i < calibrate; ++i) {
      int step = 0;
      fp32->observe_feeds([&](bool first_model, const NamedTensors& feeds) {
        write_npz(samples_dir / (first_model ? kFirst : kLater) /
                      ("sample_" + std::to_string(i) + "_" + std::to_string(step++) + ".npz"),
                  feeds);
        ++(first_model ? report.first_step_samples : report.later_step_samples);
      });
      // The last token needs no step of its own: max_new_tokens steps see max_new_tokens - 1
      // with-past inputs and the prompt.
      greedy(*fp32, prompts->sample(i).at(0).second, job.max_new_tokens);
      if (progress) progress(i + 1, calibrate);
    }
    fp32.reset();  // the float files are loaded again for the fidelity check, not held while quantizing
  }

  for (const char* f : {kFirst, kLater}) {
    const std::string calib = calibrate ? (samples_dir / f).string() : "";
    report.files.emplace_back(f, job.quantize_file(onnx_file(job.folder, f), onnx_file(job.out_dir, f), calib));
  }
  std::error_code ec;
  fs::remove_all(samples_dir, ec);  // before the merged file is written: disk, not only on exit
  const fs::path merged_in = onnx_file(job.folder, kMergedDecoder);
  if (fs::exists(merged_in)) {
    MergedDecoderFiles files;
    files.float_merged = merged_in;
    files.no_past = onnx_file(job.out_dir, kFirst);
    files.with_past = onnx_file(job.out_dir, kLater);
    files.float_no_past = onnx_file(job.folder, kFirst);
    files.float_with_past = onnx_file(job.folder, kLater);
    report.merged = write_quantized_merged_decoder(files, onnx_file(job.out_dir, kMergedDecoder), job.save);
    report.has_merged = true;
  }
  for (const char* extra : {"config.json", "generation_config.json"})
    if (fs::exists(job.folder / extra))
      fs::copy_file(job.folder / extra, job.out_dir / extra, fs::copy_options::overwrite_existing, ec);

  // Fidelity on the held-out prompts, each file through the runner `octet generate` picks.
  if (!prompts || calibrate == prompts->size()) return report;
  fp32 = std::make_unique<generate::PortableRunner>(
      generate::load_session(onnx_file(job.folder, kLater).string(), options),
      generate::load_session(onnx_file(job.folder, kFirst).string(), options));
  auto q_split = generate::make_decoder_runner(
      {onnx_file(job.out_dir, kLater).string(), onnx_file(job.out_dir, kFirst).string()}, options);
  std::unique_ptr<generate::DecoderRunner> q_merged;
  if (report.has_merged) q_merged = generate::make_decoder_runner({onnx_file(job.out_dir, kMergedDecoder).string(), ""}, options);
  for (size_t i = calibrate; i < prompts->size(); ++i) {
    const Tensor prompt = prompts->sample(i).at(0).second;
    const auto want = greedy(*fp32, prompt, job.max_new_tokens);
    const auto split = greedy(*q_split, prompt, job.max_new_tokens);
    const auto merged = q_merged ? greedy(*q_merged, prompt, job.max_new_tokens) : split;
    for (size_t t = 0; t < want.size(); ++t)
      for (size_t r = 0; r < want[t].size(); ++r) {
        report.split_agreeing += split[t][r] == want[t][r];
        report.merged_agreeing += merged[t][r] == want[t][r];
        ++report.tokens;
      }
    ++report.eval_prompts;
  }
  return report;
}

json DecoderSetReport::to_json() const {
  json files_json = json::object();
  for (const auto& [name, r] : files) files_json[name] = r.json;
  json j = {{"files", files_json},
            {"prompts", prompts},
            {"calibration_steps", {{kFirst, first_step_samples}, {kLater, later_step_samples}}}};
  if (has_merged)
    j["merged_decoder"] = {{"unified_weights", merged.unified_weights},
                           {"shared_initializers", merged.shared_initializers},
                           {"shared_bytes", merged.shared_bytes},
                           {"branch_initializers", merged.branch_initializers},
                           {"branch_bytes", merged.branch_bytes}};
  if (eval_prompts)
    j["greedy_fidelity"] = {{"held_out_prompts", eval_prompts},
                            {"tokens", tokens},
                            {"split_files_agreeing_tokens", split_agreeing},
                            {"merged_agreeing_tokens", has_merged ? json(merged_agreeing) : json(nullptr)}};
  return j;
}

std::string DecoderSetReport::to_text() const {
  std::ostringstream s;
  for (const auto& [name, r] : files) s << "== " << name << " ==\n" << r.text << "\n";
  if (has_merged)
    s << "== " << kMergedDecoder << " == (If branches: the two quantized decoders above)\n  "
      << merged.unified_weights << " weights take the with-past branch's int8 copy in both branches; "
      << merged.shared_initializers << " initializers shared by both branches (" << merged.shared_bytes
      << " bytes), " << merged.branch_initializers << " kept in one branch (" << merged.branch_bytes << " bytes)\n\n";
  if (first_step_samples)
    s << "calibrated on " << first_step_samples << " prompts through " << kFirst << " and " << later_step_samples
      << " greedy decode steps through " << kLater << " (float files)\n";
  if (eval_prompts) {
    s << "greedy decoding of " << eval_prompts << " held-out prompt(s), tokens agreeing with the float files: split "
      << split_agreeing << "/" << tokens;
    if (has_merged) s << ", merged " << merged_agreeing << "/" << tokens;
    s << "\n";
  } else if (prompts) {
    s << "no fidelity check: no prompt held out (fewer than 5, or --holdout 0), all used for calibration\n";
  }
  return s.str();
}

}  // namespace octet::quant
