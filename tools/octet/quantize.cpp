// `octet quantize MODEL -o OUT`: post-training int8 quantization (src/quant/quantize.h),
// with a report table on stdout (--json for the JSON form) and --report FILE.json.
#include <malloc.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "io/output_file.h"
#include "text_calibration.h"
#include "quant/decoder_set.h"
#include "quant/seq2seq_set.h"
#include "quant/quantize.h"
#include "quant/target_profile.h"
#include "quant/weight_only.h"

namespace octet::cli {

namespace fs = std::filesystem;

namespace {

struct Options {
  std::string model, out, mode, target = "octet", calib, calib_text, tokenizer, calibration = "minmax", activation_type, attention = "int8",
                                report, smoothquant, metric = "cosine", weights, method = "rtn", rounding = "gptq";
  int64_t block = 0;
  bool asymmetric = false, keep_lm_head = false;
  std::vector<std::string> exclude, per_token, dims;
  double smooth_min_outlier = 4, max_drop = -1;
  bool explain = false;
  size_t calib_samples = 0, sqnr_samples = 8, embedding_min_kib = 1024;
  int max_length = 128;
  double percentile = 99.99, holdout = 0.2;
  bool per_tensor = false, keep_embeddings = false, json = false, external_data = false, force = false,
       quiet = false;
};

bool parse_rounding(const std::string& s) {
  if (s == "gptq") return true;
  if (s == "nearest") return false;
  fail("unknown --rounding '", s, "' (expected gptq or nearest)");
}

const char* kFooter = R"(WHAT GETS QUANTIZED
  Every MatMul/Gemm/Conv with a constant weight: int8 weights, symmetric, one scale per
  output channel (--per-tensor: one per tensor). The matmuls of attention whose both
  inputs are activations (Q.K^T and softmax.V), unless --attention fp32. Embedding
  tables (Gather on a constant) of at least --embedding-min-kib (default 1024 KiB) as
  int8 rows with a scale each: a vocabulary shrinks 4x, while small tables (positions,
  token types) stay float: every token adds one of their few rows, so their rounding
  becomes a bias on every token, and they save little. --exclude NAME|OPTYPE keeps nodes
  in float (repeatable).

MODES
  static   activations get per-tensor scales from calibration (--calib required), uint8
           asymmetric (default) or int8 symmetric (--activation-type int8). On the
           octet target the inputs of MatMul/Gemm layers are quantized per token at run
           time instead (--per-token none: calibrated too); attention's Q, K, V and Conv
           keep calibrated scales, and the softmax probabilities get 4095 levels (int16,
           opset 21). Held-out DINOv2-S CLS cosine 0.9959 -> 0.9995, all-MiniLM-L6
           0.9981 -> 0.9994.
  dynamic  activations are quantized per row at run time; no calibration needed (the
           default when --calib is not given). Attention and Conv stay float.
  Without --mode, a model given --calib is quantized static, except a decoder LLM with
  --target octet: per-token dynamic (SmolLM2-135M perplexity +0.4% vs +4.4% static),
  its weights still GPTQ-rounded on the samples. A decoder is what a probe finds: changing
  the second half of input_ids on one sample leaves the first half's outputs unchanged.
  The report's "mode" line says which was chosen and why.

CALIBRATION (--calib PATH)
  PATH is a folder of .npz files (one sample each, keyed by input name), a folder of
  <input>.npy files whose first axis indexes samples, ONNX test-data folders
  (test_data_set_*/input_*.pb), or one .npz file. Samples are read one at a time;
  observers keep fixed-size statistics. Methods: minmax, percentile (--percentile),
  entropy (KL), mse; outlier channels, extremes most samples reach and attention's Q, K
  and V keep their whole range under every method. The default per-token form calibrates
  only those, so the method acts with --per-token none and on the ort/tensorrt targets.
  With 5 samples or more, the last --holdout share is kept out of calibration and used
  for the fidelity report.
  --calib-text FILE --tokenizer tokenizer.json: one sample per non-empty line, tokenized
  (input_ids, attention_mask, token_type_ids as the model has them; at most --max-length
  tokens) by `python3 -m octet write-text-samples`, which needs octet's Python package
  (pip install .) and `tokenizers`; python -m octet quantize also reads images.

WEIGHT-ONLY (--weights int4|int8)
  For decoders, whose decode steps read every weight once: each MatMul with a constant
  float32 weight [K, N] gets 4- or 8-bit weights in blocks of --block values along K
  (default 32 for int4, 128 for int8; a power of 2 >= 16), one float scale per block,
  symmetric (default) or with a zero point per block (--asymmetric); activations stay
  float. --method rtn (default) rounds to nearest, no samples needed; --method awq
  (with --calib PATH) first searches per-input-channel scales s = mean|X|^alpha on the
  calibration activations (alpha in 0..1 by the block-quantized outputs' error, alpha 0
  being plain rounding) and folds them into the weights and, as 1/s, into the producer
  of X (an RMSNorm/LayerNorm weight where possible, else a Mul). --method gptq (with
  --calib) keeps nearest rounding's block scales and rounds the codes by GPTQ against the
  Gram matrix of each MatMul's input (see ROUNDING); awq-gptq does AWQ first. The LM head (the MatMul
  writing a graph output) is quantized too unless --keep-lm-head. Formats:
    --target ort    com.microsoft.MatMulNBits (bits, block_size, packed B [N, K/block,
                    block*bits/8], scales, packed uint8 zero points), run by onnxruntime
    --target octet  standard opset-21 DequantizeLinear(int4/uint4/int8/uint8, axis 0,
                    block_size) + MatMul (the opset is raised when older); octet fuses it
                    into MatMulNBits. tensorrt: the same, symmetric only.

TARGETS (--target)
  octet     QDQ ONNX that octet runs with int8 kernels (octet.QMatMul in dynamic mode)
  ort       standard ONNX onnxruntime runs with its int8 kernels (QDQ; dynamic mode as
            DynamicQuantizeLinear + MatMulInteger)
  tensorrt  static, symmetric int8 Q/DQ with constant scales and zero points 0; refuses
            dynamic mode. The graph is checked against the target's rules before writing.

SMOOTHQUANT (--smoothquant auto|ALPHA|off; static mode's default is auto)
  For each input activation of MatMul/Gemm layers whose channels are uneven (outlier
  ratio, the largest channel max|x| over the median one, >= --smooth-min-outlier, default
  4; 0 smooths every one), scales s_j = max|X_j|^alpha / max|W_j|^(1-alpha) move range
  from the activation into the weights: X/s times s*W. All layers reading one activation
  share one s. 1/s is folded into a LayerNorm's gamma and beta, a per-channel Mul or a
  preceding MatMul/Gemm when they own those parameters, into a copy of an elementwise
  producer when its output has other readers, else into an explicit Mul; shared
  constants are never changed. auto (the default in static mode) picks alpha in 0.0..1.0,
  or no smoothing, per activation by its layers' quantized output error on calibration
  rows; off quantizes without smoothing. The report checks that the smoothed float model
  matches the original and shows fidelity with and without it.

ATTENTION (--attention int8|int8-tensor|fp32)
  int8 (default): both products of attention in int8, the softmax probabilities with a
  scale per row: the graph computes E = Exp(S - ReduceMax(S)) (every row peaks at exactly
  1), quantizes E with the fixed scale 1/255 and divides E.V by ReduceSum(E) after the
  product, all standard ops; octet fuses them back into one octet.QAttention. One scale
  for all of P (int8-tensor, what other quantizers write) leaves most probabilities over a
  few hundred keys below one step: DINOv2-S (257 tokens) CLS cosine 0.977 -> 0.996 with
  per-row scales. fp32 keeps both products float.

ROUNDING (--rounding gptq|nearest)
  With samples (--calib), int8 MatMul/Gemm weights are rounded by GPTQ (default): rows
  are rounded one input channel at a time, each row's rounding error moved onto the rows
  not yet rounded, weighted by the inverse of the inputs' Gram matrix X^T X on the
  calibration samples, so the layer's output X.W moves least (not each weight). Scales and
  file format are those of nearest rounding. Costs one pass over the samples (more when the
  Gram matrices exceed 256 MB) and about K^2 N flops per weight; the report gives the
  output error against nearest rounding. --rounding nearest: every weight to its nearest
  int8 value (the only choice without samples). Conv weights and weights read by several
  quantized nodes are always rounded to nearest.

MIXED PRECISION (--max-drop X [--metric cosine|top1|mse], needs --calib)
  Keeps the fewest quantized layers in float such that the end-output metric on held-out
  samples stays within X of fp32: 1 - cosine, 1 - top-1 agreement (logits outputs), or the
  mean squared error. Layers are ranked by the drop each causes when quantized alone.

REPORT
  Sizes before/after, share of MACs in int8, per-layer SQNR against float on calibration
  samples, end-output cosine / max abs error / top-1 agreement on held-out samples.
  --explain adds each weight layer's input range, outlier ratio and smoothing scale.

OUT is never the input model; an existing OUT is replaced only with --force. The exit
status is 0 on success and 1 for any error (one line on stderr).)";

// Every report: JSON to --report, then JSON or text on stdout.
template <typename Report>
void print_report(const Options& o, const Report& report) {
  const nlohmann::json j = report.to_json();
  if (!o.report.empty()) write_file_replacing(o.report, j.dump(2) + "\n");
  if (o.json) std::cout << j.dump(2) << "\n";
  else std::cout << report.to_text();
}

// -o for a folder of models (a set): given, not the input folder, replaced only with --force.
std::filesystem::path checked_output_folder(const Options& o) {
  namespace fs = std::filesystem;
  const fs::path out = o.out;
  if (out.empty()) fail("-o/--output: the folder to write the quantized files to");
  std::error_code ec;
  if (fs::equivalent(out, fs::path(o.model), ec))
    fail("-o ", out.string(), " is the input folder; write the quantized files elsewhere");
  if (fs::exists(out) && !o.force) fail("-o ", out.string(), " exists; pass --force to replace its files");
  return out;
}

// A folder in optimum's encoder-decoder layout: every file quantized, the decoders
// calibrated on greedy decode steps (quant/seq2seq_set.h), one report for the set.
void quantize_set(const Options& o, const quant::QuantizeJob& base) {
  namespace fs = std::filesystem;
  const fs::path out = checked_output_folder(o);
  if (!o.calib_text.empty()) fail("--calib-text is not supported for an encoder-decoder set; give --calib");
  if (!o.report.empty()) check_replaceable(o.report);
  quant::Seq2SeqSetJob job;
  job.base = base;
  job.base.calib = o.calib;
  job.base.calib_samples = o.calib_samples;
  job.base.holdout = o.holdout;
  job.base.sqnr_samples = o.sqnr_samples;
  job.base.dims = parse_dim_bindings(o.dims);
  job.base.save.external_data = o.external_data;
  job.base.progress = !o.quiet;
  job.base.smoothing = quant::parse_smoothing(o.smoothquant, base.options.mode, o.smooth_min_outlier, "--smoothquant");
  job.smoothing_requested = !o.smoothquant.empty();
  job.base.explain = o.explain;
  if (o.max_drop >= 0) job.base.max_drop = o.max_drop;
  job.base.metric = quant::parse_metric(o.metric);
  job.base.gptq = parse_rounding(o.rounding);
  job.folder = o.model;
  job.out_dir = out;
  const quant::Seq2SeqSetReport report = quant::quantize_seq2seq_set(job);
  print_report(o, report);
}

// Where the calibration samples are: --calib as given, or --calib-text's windows tokenized
// into `text_samples` (a temporary folder that must outlive the job).
// `model`: the file whose inputs the text samples feed (o.model unless a set's).
std::string calibration_path(const Options& o, std::optional<TextSamplesFolder>& text_samples,
                             const std::string& model = "") {
  if (!o.calib_text.empty()) {
    if (!o.calib.empty()) fail("give --calib or --calib-text, not both");
    text_samples.emplace(model.empty() ? o.model : model, o.calib_text, o.tokenizer, o.max_length);
    return text_samples->path().string();
  }
  if (!o.tokenizer.empty()) fail("--tokenizer goes with --calib-text FILE");
  return o.calib;
}

// `job` for one file of a decoder set: its model, output and calibration folder (the
// set's generated steps, all of them).
template <class Job>
Job set_part(const Job& job, const fs::path& model, const fs::path& output, const std::string& calib) {
  Job part = job;
  part.model = model;
  part.output = output;
  part.calib = calib;
  part.calib_samples = 0;
  return part;
}

// A folder in optimum's legacy decoder-only layout (decoder_model, decoder_with_past_model
// [, decoder_model_merged]): each file quantized by `quantize_file` on the steps it runs,
// the merged file written from them (quant/decoder_set.h), one report.
void quantize_decoder_folder(const Options& o, quant::QuantizeDecoderFile quantize_file) {
  const fs::path out = checked_output_folder(o);
  if (!o.report.empty()) check_replaceable(o.report);
  quant::DecoderSetJob job;
  job.folder = o.model;
  job.out_dir = out;
  std::optional<TextSamplesFolder> text_samples;
  job.calib = calibration_path(o, text_samples, (job.folder / "decoder_model.onnx").string());
  job.calib_samples = o.calib_samples;
  job.holdout = o.holdout;
  job.save.external_data = o.external_data;
  job.progress = !o.quiet;
  job.quantize_file = std::move(quantize_file);
  print_report(o, quant::quantize_decoder_set(job));
}

void weight_only_command(const Options& o) {
  if (!o.mode.empty() || !o.smoothquant.empty() || o.max_drop >= 0 || o.per_tensor || !o.activation_type.empty())
    fail("--weights quantizes weights only: it does not take --mode, --smoothquant, --max-drop, "
         "--per-tensor or --activation-type");
  if (o.method != "rtn" && o.method != "awq" && o.method != "gptq" && o.method != "awq-gptq")
    fail("--method must be rtn, awq, gptq or awq-gptq, got '", o.method, "'");
  if (o.method == "rtn" && (!o.calib.empty() || !o.calib_text.empty()))
    fail("--calib and --calib-text go with --method awq, gptq or awq-gptq (rtn needs no samples)");
  quant::WeightOnlyJob job;
  job.model = o.model;
  job.output = o.out;
  quant::WeightOnlyOptions& w = job.options;
  w.bits = quant::parse_weight_bits(o.weights);
  w.block = o.block;
  w.symmetric = !o.asymmetric;
  w.keep_lm_head = o.keep_lm_head;
  w.awq = o.method == "awq" || o.method == "awq-gptq";
  w.gptq = o.method == "gptq" || o.method == "awq-gptq";
  w.target = quant::parse_target(o.target);
  w.exclude.insert(o.exclude.begin(), o.exclude.end());
  job.save.external_data = o.external_data;
  job.progress = !o.quiet;
  if (quant::is_decoder_only_set(o.model))
    return quantize_decoder_folder(o, [&](const fs::path& model, const fs::path& output, const std::string& calib) {
      const quant::WeightOnlyReport r = quant::quantize_weights_only(set_part(job, model, output, calib));
      return quant::DecoderSetFileReport{r.to_json(), r.to_text()};
    });
  std::optional<TextSamplesFolder> text_samples;
  job.calib = calibration_path(o, text_samples);
  job.calib_samples = o.calib_samples;
  check_output_paths(o.model, job.output, o.external_data, o.force, "quantized");
  if (!o.report.empty()) check_replaceable(o.report);
  const quant::WeightOnlyReport report = quant::quantize_weights_only(job);
  print_report(o, report);
}

// The job settings beyond the model, output and samples, from the command line.
void set_job_options(const Options& o, quant::QuantizeJob& job) {
  job.holdout = o.holdout;
  job.sqnr_samples = o.sqnr_samples;
  job.dims = parse_dim_bindings(o.dims);
  job.save.external_data = o.external_data;
  job.progress = !o.quiet;
  job.smoothing = quant::parse_smoothing(o.smoothquant, job.options.mode, o.smooth_min_outlier, "--smoothquant");
  job.mode_is_default = o.mode.empty();
  job.smoothing_is_default = o.smoothquant.empty();
  job.per_token_is_default = o.per_token.empty();
  job.explain = o.explain;
  if (o.max_drop >= 0) job.max_drop = o.max_drop;
  job.metric = quant::parse_metric(o.metric);
  job.gptq = parse_rounding(o.rounding);
}

void quantize_command(const Options& o) {
  // A fixed mmap threshold: every buffer of 1 MiB or more (weights, Gram matrices, the
  // saved proto) is mapped on its own and returned to the system when freed. glibc's
  // default raises the threshold after each large free, so later large buffers came from
  // the heap and stayed resident after use: SmolLM2-135M's peak RSS was 250 MB higher.
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
  if (!o.weights.empty()) return weight_only_command(o);
  if (o.block || o.asymmetric || o.keep_lm_head || o.method != "rtn")
    fail("--block, --asymmetric, --keep-lm-head and --method go with --weights int4|int8");
  quant::QuantizeJob job;
  job.model = o.model;
  job.output = o.out;
  quant::QuantizeOptions& q = job.options;
  const bool has_samples = !o.calib.empty() || !o.calib_text.empty();
  q.mode = o.mode.empty() ? (!has_samples ? quant::Mode::Dynamic : quant::Mode::Static) : quant::parse_mode(o.mode);
  q.target = quant::parse_target(o.target);
  q.calibration = quant::parse_calibration(o.calibration);
  q.percentile = o.percentile;
  if (o.percentile < 50 || o.percentile > 100) fail("--percentile must be in [50, 100], got ", o.percentile);
  if (q.target == quant::Target::TensorRT) q.activation_type = DType::Int8;
  if (!o.activation_type.empty()) {
    if (o.activation_type == "uint8" || o.activation_type == "u8") q.activation_type = DType::UInt8;
    else if (o.activation_type == "int8" || o.activation_type == "s8") q.activation_type = DType::Int8;
    else fail("--activation-type must be uint8 or int8, got '", o.activation_type, "'");
  }
  if (o.attention != "int8" && o.attention != "int8-tensor" && o.attention != "fp32")
    fail("--attention must be int8, int8-tensor or fp32, got '", o.attention, "'");
  q.quantize_attention = o.attention != "fp32";
  q.row_probabilities = o.attention == "int8";
  q.per_channel_weights = !o.per_tensor;
  q.quantize_embeddings = !o.keep_embeddings;
  if (o.embedding_min_kib > (std::numeric_limits<size_t>::max() >> 10))
    fail("--embedding-min-kib ", o.embedding_min_kib, " is too large");
  q.min_embedding_bytes = o.embedding_min_kib << 10;
  q.exclude.insert(o.exclude.begin(), o.exclude.end());
  for (const std::string& p : o.per_token)
    if (p != "none") q.per_token.insert(p);
  quant::check_target_options(q, !o.activation_type.empty());
  if (o.holdout < 0 || o.holdout >= 1) fail("--holdout must be in [0, 1), got ", o.holdout);

  if (quant::is_seq2seq_set(o.model)) return quantize_set(o, job);
  if (quant::is_decoder_only_set(o.model)) {
    set_job_options(o, job);
    // One mode for both files, settled on decoder_model (quantized first): its samples are
    // whole prompts, on which the decoder probe works; the with-past file's are single tokens.
    std::optional<quant::QuantizeOptions> settled;
    return quantize_decoder_folder(o, [&](const fs::path& model, const fs::path& output, const std::string& calib) {
      quant::QuantizeJob part = set_part(job, model, output, calib);
      if (settled) {
        // Static mode's default smoothing goes when the decoder probe switched the mode.
        if (settled->mode != part.options.mode && part.smoothing_is_default) part.smoothing.reset();
        part.options = *settled;
        part.mode_is_default = part.per_token_is_default = part.smoothing_is_default = false;
      }
      const quant::QuantizeReport r = quant::quantize_model(part);
      if (!settled) settled = r.options;
      return quant::DecoderSetFileReport{r.to_json(), r.to_text()};
    });
  }
  check_output_paths(o.model, job.output, o.external_data, o.force, "quantized");
  if (!o.report.empty()) check_replaceable(o.report);  // before minutes of calibration, not after
  std::optional<TextSamplesFolder> text_samples;
  job.calib = calibration_path(o, text_samples);
  job.calib_samples = o.calib_samples;
  set_job_options(o, job);
  print_report(o, quant::quantize_model(job));
}

}  // namespace

void add_quantize_command(CLI::App& app) {
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "quantize",
      "Quantize a float ONNX model to int8 (static with calibration, or dynamic) or its weights\n"
      "only to int4/int8 (--weights), write it "
      "for a target runtime, and report size, int8 coverage and fidelity.");
  cmd->add_option("model", opts->model,
                  "Float ONNX model to read, or an encoder-decoder folder (encoder_model.onnx, decoder_model.onnx, "
                  "decoder_with_past_model.onnx, config.json as optimum writes them), or a decoder-only one "
                  "(decoder_model.onnx, decoder_with_past_model.onnx [, decoder_model_merged.onnx]); -o is then a folder")
      ->required();
  cmd->add_option("-o,--output", opts->out, "Quantized ONNX file to write (required)")->type_name("OUT");
  cmd->add_option("--mode", opts->mode, "static | dynamic (default: static with --calib, else dynamic; a decoder LLM (causal, found by a probe on "
                  "one sample) gets per-token dynamic activations with --target octet)");
  cmd->add_option("--weights", opts->weights, "int4 | int8: weight-only quantization, activations float (see WEIGHT-ONLY)")
      ->type_name("int4|int8");
  cmd->add_option("--block", opts->block, "Weights per scale along K with --weights (default 32 for int4, 128 for int8)")
      ->type_name("N");
  cmd->add_flag("--asymmetric", opts->asymmetric, "A zero point per block with --weights (default symmetric)");
  cmd->add_option("--method", opts->method,
                  "With --weights: rtn (default, no samples) | awq | gptq | awq-gptq (these need --calib)")
      ->type_name("rtn|awq|gptq|awq-gptq");
  cmd->add_flag("--keep-lm-head", opts->keep_lm_head, "With --weights, leave the LM head (MatMul writing an output) float");
  cmd->add_option("--target", opts->target, "octet | ort | tensorrt (default octet; see TARGETS)");
  cmd->add_option("--calib", opts->calib, "Calibration samples (see CALIBRATION)")->type_name("PATH");
  cmd->add_option("--calib-text", opts->calib_text, "Calibrate on raw text, one sample per line (see CALIBRATION)")
      ->type_name("FILE");
  cmd->add_option("--tokenizer", opts->tokenizer, "Hugging Face tokenizer.json for --calib-text")->type_name("FILE");
  cmd->add_option("--max-length", opts->max_length, "Tokens per --calib-text sample (default 128)")->type_name("N");
  cmd->add_option("--calib-samples", opts->calib_samples, "Use at most N samples (default: all)")->type_name("N");
  cmd->add_option("--calibration", opts->calibration, "minmax | percentile | entropy | mse (default minmax)");
  cmd->add_option("--percentile", opts->percentile, "Percentile for --calibration percentile (default 99.99)");
  cmd->add_option("--activation-type", opts->activation_type,
                  "uint8 (asymmetric, default) | int8 (symmetric; forced by --target tensorrt)");
  cmd->add_flag("--per-tensor", opts->per_tensor, "One weight scale per tensor instead of per output channel");
  cmd->add_option("--attention", opts->attention,
                  "int8 (default) | int8-tensor | fp32: quantize attention's Q.K^T and P.V (see ATTENTION)");
  cmd->add_flag("--keep-embeddings", opts->keep_embeddings, "Leave every embedding table in float");
  cmd->add_option("--embedding-min-kib", opts->embedding_min_kib,
                  "Smaller embedding tables stay float (default 1024; 0: quantize every table)")
      ->type_name("KIB");
  cmd->add_option("--exclude", opts->exclude, "Keep this node name or op type in float (repeatable)")
      ->type_name("NODE|OPTYPE")
      ->allow_extra_args(false);
  cmd->add_option("--per-token", opts->per_token,
                  "Static mode, target octet: quantize this MatMul/Gemm's input per token at run time (repeatable; "
                  "default: every MatMul/Gemm; none: all calibrated; see MODES)")
      ->type_name("NODE|OPTYPE")
      ->allow_extra_args(false);
  cmd->add_option("--smoothquant", opts->smoothquant, "auto (static default) | ALPHA in [0, 1] | off (see SMOOTHQUANT)")
      ->type_name("auto|ALPHA|off");
  cmd->add_option("--smooth-min-outlier", opts->smooth_min_outlier,
                  "Smooth only activations with at least this outlier ratio (default 4; 0: all)");
  cmd->add_option("--max-drop", opts->max_drop, "Keep layers float until the metric drop is at most X (see MIXED PRECISION)")
      ->type_name("X")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--metric", opts->metric, "cosine (default) | top1 | mse, for --max-drop");
  cmd->add_option("--rounding", opts->rounding,
                  "gptq (default with --calib) | nearest: how int8 MatMul/Gemm weights are rounded (see ROUNDING)");
  cmd->add_flag("--explain", opts->explain, "Per-layer input range, outlier ratio and smoothing scale in the table");
  cmd->add_option("--holdout", opts->holdout, "Share of samples held out for fidelity (default 0.2)");
  cmd->add_option("--sqnr-samples", opts->sqnr_samples, "Samples for per-layer SQNR (default 8)")->type_name("N");
  cmd->add_option("--dim", opts->dims, "Count MACs at these sizes, e.g. --dim batch=1 --dim seq=128")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false);
  cmd->add_option("--report", opts->report, "Also write the report as JSON to this file")->type_name("FILE.json");
  cmd->add_flag("--json", opts->json, "Print the report as JSON instead of a table");
  cmd->add_flag("--external-data", opts->external_data, "Write large initializers to OUT.data");
  cmd->add_flag("--force", opts->force, "Replace OUT if it exists (never the input model)");
  cmd->add_flag("-q,--quiet", opts->quiet, "No progress bar on stderr");
  cmd->footer(kFooter);
  cmd->callback([opts] { quantize_command(*opts); });
}

}  // namespace octet::cli
