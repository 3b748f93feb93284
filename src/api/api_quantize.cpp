// octet::quantize (octet/quantize.h) over quant::quantize_model. A caller's
// CalibrationSource is read once into a temporary folder of .npz files, one per sample,
// which the quantizer then reads like any --calib folder: the same checks on every
// sample, several passes over the samples (calibration, SQNR, fidelity) without holding
// them all in memory.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "analysis/model_files.h"
#include "api/api_internal.h"
#include "io/npy.h"
#include "quant/quantize.h"
#include "quant/target_profile.h"

namespace octet::v1 {

namespace fs = std::filesystem;

namespace {

// A private temporary folder, removed with everything in it when this goes away.
class TempFolder {
 public:
  TempFolder() {
    std::string pattern = (fs::temp_directory_path() / "octet-calib-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) fail("cannot create a temporary folder for the calibration samples under ",
                                          fs::temp_directory_path().string());
    path_ = pattern;
  }
  ~TempFolder() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

quant::ProgressFn stage(const ProgressCallback& progress, const std::string& label) {
  if (!progress) return {};
  return [progress, label](size_t done, size_t total) { progress(label, done, total); };
}

// Reads the caller's samples into `folder` as sample_<i>.npz (natural order = reading
// order); returns how many.
size_t spill_samples(CalibrationSource& source, const fs::path& folder, size_t limit, const ProgressCallback& progress) {
  const auto report = stage(progress, "reading samples");
  size_t count = 0;
  NamedTensors sample;
  while (limit == 0 || count < limit) {
    sample.clear();
    if (!source.next(sample)) break;
    if (sample.empty()) fail("calibration sample ", count, " has no tensors");
    NamedArrays arrays;
    for (const auto& [name, tensor] : sample) {
      const std::string what = "calibration sample " + std::to_string(count) + " input '" + name + "'";
      arrays.emplace_back(name, api::unwrap(tensor, what));
    }
    write_npz(folder / ("sample_" + std::to_string(count) + ".npz"), arrays);
    ++count;
    if (report) report(count, 0);
  }
  if (count == 0) fail("the calibration source gave no samples");
  if (report) report(count, count);
  return count;
}

quant::QuantizeJob make_job(const std::string& model_path, const std::string& output_path, const QuantizeOptions& o,
                            bool has_samples,
                            const ProgressCallback& progress) {
  quant::QuantizeJob job;
  job.model = model_path;
  job.output = output_path;
  if (output_path.empty()) fail("the output path is empty");
  std::error_code ec;
  if (fs::exists(output_path, ec)) {
    if (fs::is_directory(output_path, ec)) fail(output_path, ": is a folder; the output must name the .onnx file to write");
    for (const fs::path& in : model_files(model_path).all())
      if (fs::equivalent(output_path, in, ec))
        fail(output_path, ": is the input model or its data; write the quantized model to another file");
  }
  quant::QuantizeOptions& q = job.options;
  // "auto": static with samples, else dynamic; quantize_model may still turn a decoder
  // LLM dynamic once it has read the model (quant/default_mode.h).
  job.mode_is_default = o.mode == "auto";
  job.smoothing_is_default = o.smoothquant.empty();
  job.per_token_is_default = o.per_token.empty();
  q.mode = job.mode_is_default ? (has_samples ? quant::Mode::Static : quant::Mode::Dynamic) : quant::parse_mode(o.mode);
  q.target = quant::parse_target(o.target);
  q.calibration = quant::parse_calibration(o.method);
  if (!(o.percentile >= 50 && o.percentile <= 100)) fail("percentile must be in [50, 100], got ", o.percentile);
  q.percentile = o.percentile;
  if (q.target == quant::Target::TensorRT) q.activation_type = DType::Int8;
  if (o.activation_type == "uint8") q.activation_type = DType::UInt8;
  else if (o.activation_type == "int8") q.activation_type = DType::Int8;
  else if (!o.activation_type.empty()) fail("activation_type must be uint8 or int8, got '", o.activation_type, "'");
  q.per_channel_weights = o.per_channel;
  q.quantize_attention = o.quantize_attention;
  q.row_probabilities = o.attention_row_scales;
  q.quantize_embeddings = o.quantize_embeddings;
  if (o.embedding_min_kib > (std::numeric_limits<size_t>::max() >> 10))
    fail("embedding_min_kib ", o.embedding_min_kib, " is too large");
  q.min_embedding_bytes = o.embedding_min_kib << 10;
  q.exclude.insert(o.exclude.begin(), o.exclude.end());
  for (const std::string& p : o.per_token)
    if (p != "none") q.per_token.insert(p);
  quant::check_target_options(q, !o.activation_type.empty());
  if (!(o.holdout >= 0 && o.holdout < 1)) fail("holdout must be in [0, 1), got ", o.holdout);
  job.holdout = o.holdout;
  job.sqnr_samples = o.sqnr_samples;
  job.calib_samples = o.max_samples;
  job.save.external_data = o.external_data;
  job.smoothing = quant::parse_smoothing(o.smoothquant, q.mode, o.smoothquant_min_outlier);
  job.explain = o.explain;
  if (o.max_drop) {
    if (!(*o.max_drop >= 0)) fail("max_drop must be >= 0, got ", *o.max_drop);
    job.max_drop = *o.max_drop;
  }
  job.metric = quant::parse_metric(o.metric);
  if (o.rounding != "gptq" && o.rounding != "nearest")
    fail("QuantizeOptions::rounding must be gptq or nearest, got '", o.rounding, "'");
  job.gptq = o.rounding == "gptq";
  job.progress = false;
  if (progress) job.progress_sink = [progress](const std::string& label) { return stage(progress, label); };
  return job;
}

QuantizeReport summarize(const quant::QuantizeReport& r) {
  QuantizeReport out;
  out.model = r.model;
  out.output = r.output;
  out.float_file_bytes = r.float_file_bytes;
  out.quantized_file_bytes = r.quantized_file_bytes;
  out.total_macs = r.coverage.total_macs;
  out.int8_macs = r.coverage.int8_macs;
  out.int8_mac_share = r.coverage.share();
  out.calibration_source = r.calibration_source;
  out.calibration_samples = r.calibration_samples;
  out.eval_samples = r.eval_samples;
  for (const quant::LayerReport& l : r.layers) out.layers.push_back({l.node, l.op, l.kind, l.sqnr_db});
  for (const quant::SkippedReport& s : r.skipped) out.skipped.push_back({s.node, s.op, s.reason});
  for (const quant::OutputFidelity& f : r.fidelity)
    out.fidelity.push_back({f.name, f.cosine, f.max_abs_error, f.mse, f.top1_agreement, f.samples});
  out.notes = r.notes;
  out.seconds = r.seconds;
  out.json = r.to_json().dump(2);
  out.text = r.to_text();
  return out;
}

}  // namespace

QuantizeReport quantize(const std::string& model_path, const std::string& output_path, const QuantizeOptions& options,
                        CalibrationSource* calibration, const ProgressCallback& progress) {
  return api::guarded(model_path, [&] {
    quant::QuantizeJob job = make_job(model_path, output_path, options, calibration != nullptr, progress);
    std::optional<TempFolder> folder;
    size_t samples = 0;
    if (calibration) {
      folder.emplace();
      samples = spill_samples(*calibration, folder->path(), options.max_samples, progress);
      job.calib = folder->path().string();
    }
    quant::QuantizeReport report = quant::quantize_model(job);
    // The temporary folder means nothing to the caller.
    if (folder) report.calibration_source = std::to_string(samples) + " samples from the caller's CalibrationSource";
    return summarize(report);
  });
}

QuantizeReport quantize(const std::string& model_path, const std::string& output_path, const QuantizeOptions& options,
                        const std::string& calibration_path, const ProgressCallback& progress) {
  return api::guarded(model_path, [&] {
    quant::QuantizeJob job = make_job(model_path, output_path, options, !calibration_path.empty(), progress);
    job.calib = calibration_path;
    return summarize(quant::quantize_model(job));
  });
}

}  // namespace octet::v1
