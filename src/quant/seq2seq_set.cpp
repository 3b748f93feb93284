#include "quant/seq2seq_set.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "generate/portable_runner.h"
#include "generate/runner_factory.h"
#include "generate/sampling.h"
#include "io/npy.h"
#include "quant/calibration_data.h"
#include "quant/merged_decoder.h"

namespace octet::quant {

namespace fs = std::filesystem;
using json = nlohmann::json;

const char* const kSeq2SeqFiles[3] = {"encoder_model", "decoder_model", "decoder_with_past_model"};
const char* const kMergedDecoder = "decoder_model_merged";

bool is_seq2seq_set(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::exists(path / "encoder_model.onnx", ec);
}

namespace {

// The float or int8 set, loaded and optimized as generation loads it, the decoders behind
// the generation module's portable runner (the same inputs, cache and first-step file that
// `octet generate` uses), with config.json's special tokens.
struct SetSessions {
  std::shared_ptr<const Session> encoder;
  std::unique_ptr<generate::PortableRunner> decoder;
  int64_t start = 0;
  std::vector<int64_t> eos;

  // `merged`: the decoder is decoder_model_merged.onnx alone (the runner sets its
  // use_cache_branch), else the two split files.
  SetSessions(const fs::path& folder, const fs::path& config, bool merged = false) {
    const generate::RunnerOptions options;
    encoder = generate::load_session((folder / "encoder_model.onnx").string(), options);
    if (merged)
      decoder = std::make_unique<generate::PortableRunner>(
          generate::load_session((folder / (std::string(kMergedDecoder) + ".onnx")).string(), options));
    else
      decoder = std::make_unique<generate::PortableRunner>(
          generate::load_session((folder / "decoder_with_past_model.onnx").string(), options),
          generate::load_session((folder / "decoder_model.onnx").string(), options));
    json c;
    try {
      std::ifstream in(config);
      if (!in) fail(config.string(), ": cannot read it (the set's config.json names the decoder's start token)");
      c = json::parse(in);
      if (!c.contains("decoder_start_token_id") || !c["decoder_start_token_id"].is_number_integer())
        fail(config.string(), ": no integer decoder_start_token_id");
      start = c["decoder_start_token_id"].get<int64_t>();
      if (c.contains("eos_token_id")) {
        const json& e = c["eos_token_id"];
        if (e.is_number_integer()) eos.push_back(e.get<int64_t>());
        if (e.is_array())
          for (const json& x : e)
            if (x.is_number_integer()) eos.push_back(x.get<int64_t>());
      }
    } catch (const json::exception& e) {
      fail(config.string(), ": not valid JSON (", e.what(), ")");
    }
  }
};

const Tensor* find(const NamedTensors& t, const std::string& name) {
  for (const auto& [n, v] : t)
    if (n == name) return &v;
  return nullptr;
}

struct GreedyRun {
  std::vector<std::vector<int64_t>> tokens;  // per step, one per row (after the start token)
  std::vector<std::vector<float>> logits;    // per step, [B, V]
};

// Greedy decoding of every row in lockstep for up to `steps` tokens (all rows stop when
// each has produced an EOS). With `forced`, the tokens fed are forced[step] instead of the
// argmax (teacher forcing on another run's output). `on_feeds` sees each step's decoder
// inputs (see PortableRunner::observe_feeds).
GreedyRun greedy(SetSessions& s, const NamedTensors& encoder_inputs, int steps,
                 const std::vector<std::vector<int64_t>>* forced, const generate::PortableRunner::FeedObserver& on_feeds) {
  const NamedTensors enc = s.encoder->run(encoder_inputs);
  generate::DecoderStep step;
  step.batch = enc.at(0).second.shape().at(0);
  step.extra_inputs.emplace_back("encoder_hidden_states", enc.at(0).second);
  if (const Tensor* mask = find(encoder_inputs, "attention_mask"))
    step.extra_inputs.emplace_back("encoder_attention_mask", *mask);
  s.decoder->reset();
  s.decoder->observe_feeds(on_feeds);
  std::vector<int64_t> next(static_cast<size_t>(step.batch), s.start);
  std::vector<char> done(static_cast<size_t>(step.batch), 0);
  GreedyRun run;
  for (int i = 0; i < steps; ++i) {
    step.tokens = next;
    run.logits.push_back(s.decoder->step(step).to_float_vector());
    next = forced ? forced->at(static_cast<size_t>(i)) : generate::argmax_rows(run.logits.back(), step.batch);
    run.tokens.push_back(next);
    for (size_t r = 0; r < next.size(); ++r)
      if (std::find(s.eos.begin(), s.eos.end(), next[r]) != s.eos.end()) done[r] = 1;
    if (!forced && std::all_of(done.begin(), done.end(), [](char d) { return d != 0; })) break;
  }
  s.decoder->observe_feeds(nullptr);
  return run;
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) d += double(a[i]) * b[i], na += double(a[i]) * a[i], nb += double(b[i]) * b[i];
  return na > 0 && nb > 0 ? d / std::sqrt(na * nb) : 1.0;
}

// The fidelity check's samples: quantize_model's held-out share (split_holdout: the last
// `holdout` share of 5 or more), or every sample, in-sample, when that share is empty.
std::vector<size_t> held_out(size_t n, double holdout, bool* in_sample) {
  std::vector<size_t> held = split_holdout(n, holdout).second;
  *in_sample = held.empty();
  if (*in_sample)
    for (size_t i = 0; i < n; ++i) held.push_back(i);
  return held;
}

}  // namespace

Seq2SeqSetReport quantize_seq2seq_set(const Seq2SeqSetJob& job) {
  const fs::path config = job.folder / "config.json";
  Seq2SeqSetReport report;
  const bool static_mode = job.base.options.mode == Mode::Static;
  for (const char* f : kSeq2SeqFiles)  // all of them before anything is written
    if (!fs::exists(job.folder / (std::string(f) + ".onnx")))
      fail((job.folder / (std::string(f) + ".onnx")).string(), ": missing; an encoder-decoder set needs ",
           kSeq2SeqFiles[0], ", ", kSeq2SeqFiles[1], " and ", kSeq2SeqFiles[2], " (.onnx)");
  if (static_mode && job.base.calib.empty())
    fail(job.folder.string(), ": static quantization of a set needs --calib with the encoder's inputs");
  fs::create_directories(job.out_dir);

  // Decoder calibration samples: every greedy step's inputs, from the float set.
  const fs::path samples_dir = job.out_dir / ".octet_decoder_calibration";
  std::unique_ptr<CalibrationSource> encoder_samples;
  std::unique_ptr<SetSessions> fp32;
  if (!job.base.calib.empty()) {
    fp32 = std::make_unique<SetSessions>(job.folder, config);
    encoder_samples = std::make_unique<CalibrationSource>(CalibrationSource::open(
        job.base.calib, input_specs(fp32->encoder->required_inputs()), job.base.calib_samples));
  }
  if (static_mode) {
    size_t written = 0;
    for (const char* f : {kSeq2SeqFiles[1], kSeq2SeqFiles[2]}) fs::create_directories(samples_dir / f);
    // The held-out samples of the fidelity check below are left out (with fewer than 5,
    // all of them calibrate and the check says it is in-sample).
    bool in_sample = false;
    const std::vector<size_t> held = held_out(encoder_samples->size(), job.base.holdout, &in_sample);
    const size_t calibrate = in_sample ? encoder_samples->size() : held.front();
    for (size_t i = 0; i < calibrate; ++i) {
      int step = 0;
      greedy(*fp32, encoder_samples->sample(i), job.max_new_tokens, nullptr, [&](bool first_model, const NamedTensors& feeds) {
        const fs::path dir = samples_dir / kSeq2SeqFiles[first_model ? 1 : 2];
        write_npz(dir / ("sample_" + std::to_string(i) + "_" + std::to_string(step++) + ".npz"), feeds);
        ++written;
      });
    }
    report.decode_samples = written;
  }

  const fs::path merged_in = job.folder / (std::string(kMergedDecoder) + ".onnx");
  const bool has_merged = fs::exists(merged_in);
  for (const char* f : kSeq2SeqFiles) {
    QuantizeJob part = job.base;
    part.mode_is_default = false;  // one mode for the whole set, as the caller settled it
    part.model = job.folder / (std::string(f) + ".onnx");
    part.output = job.out_dir / (std::string(f) + ".onnx");
    if (f != kSeq2SeqFiles[0]) {  // the decoders' samples are the generated steps, all of them
      part.calib = static_mode ? (samples_dir / f).string() : "";
      part.calib_samples = 0;
    }
    // A weight SmoothQuant rescaled comes with its rescaled activation, so the merged
    // decoder's branches could not share it; the two files decide smoothing on different
    // steps (decoder_model only ever sees the start token) and rarely agree. So with a
    // merged decoder, static mode's default smoothing is off for the decoders; asked for
    // explicitly (--smoothquant), it is done, and the smoothed weights stay per branch.
    if (has_merged && f != kSeq2SeqFiles[0] && part.smoothing && !job.smoothing_requested) {
      part.smoothing.reset();
      report.decoders_unsmoothed = true;
    }
    report.files.emplace_back(f, quantize_model(part));
  }
  // The merged decoder's branches are the two decoders just quantized (merged_decoder.h).
  if (has_merged) {
    auto in = [&](const char* f) { return job.folder / (std::string(f) + ".onnx"); };
    auto out = [&](const char* f) { return job.out_dir / (std::string(f) + ".onnx"); };
    MergedDecoderFiles files;
    files.float_merged = merged_in;
    files.no_past = out(kSeq2SeqFiles[1]);
    files.with_past = out(kSeq2SeqFiles[2]);
    files.float_no_past = in(kSeq2SeqFiles[1]);
    files.float_with_past = in(kSeq2SeqFiles[2]);
    report.merged = write_quantized_merged_decoder(files, out(kMergedDecoder), job.base.save);
    report.has_merged = true;
  }
  std::error_code ec;
  fs::remove_all(samples_dir, ec);
  fs::copy_file(config, job.out_dir / "config.json", fs::copy_options::overwrite_existing, ec);
  if (!encoder_samples) return report;

  // Fidelity on the held-out encoder samples.
  SetSessions int8(job.out_dir, config);
  std::unique_ptr<SetSessions> int8_merged;
  if (report.has_merged) int8_merged = std::make_unique<SetSessions>(job.out_dir, config, true);
  bool in_sample = false;
  for (size_t i : held_out(encoder_samples->size(), job.base.holdout, &in_sample)) {
    const NamedTensors in = encoder_samples->sample(i);
    const GreedyRun want = greedy(*fp32, in, job.max_new_tokens, nullptr, nullptr);
    const GreedyRun got = greedy(int8, in, job.max_new_tokens, nullptr, nullptr);
    if (int8_merged) {  // the int8 merged decoder against the int8 split files
      const GreedyRun merged = greedy(*int8_merged, in, job.max_new_tokens, nullptr, nullptr);
      for (size_t t = 0; t < got.tokens.size(); ++t)
        for (size_t r = 0; r < got.tokens[t].size(); ++r) {
          report.merged_agreeing_tokens += t < merged.tokens.size() && merged.tokens[t][r] == got.tokens[t][r];
          ++report.merged_tokens;
        }
      // Step by step on the split run's tokens: how far the merged file's logits are.
      const GreedyRun on_split = greedy(*int8_merged, in, static_cast<int>(got.tokens.size()), &got.tokens, nullptr);
      for (size_t t = 0; t < got.logits.size(); ++t) {
        float scale = 0, diff = 0;
        for (size_t j = 0; j < got.logits[t].size(); ++j) {
          scale = std::max(scale, std::fabs(got.logits[t][j]));
          diff = std::max(diff, std::fabs(got.logits[t][j] - on_split.logits[t][j]));
        }
        report.merged_max_rel_diff = std::max(report.merged_max_rel_diff, scale > 0 ? double(diff) / scale : 0.0);
      }
    }
    const GreedyRun forced = greedy(int8, in, static_cast<int>(want.tokens.size()), &want.tokens, nullptr);
    const size_t rows = want.tokens.at(0).size();
    for (size_t r = 0; r < rows; ++r) {
      bool same = want.tokens.size() == got.tokens.size();
      for (size_t t = 0; t < want.tokens.size(); ++t) {
        const bool agree = t < got.tokens.size() && got.tokens[t][r] == want.tokens[t][r];
        same &= agree;
        report.agreeing_tokens += agree;
        ++report.tokens;
      }
      report.exact_sequences += same;
      ++report.eval_sequences;
    }
    double sum = report.mean_logits_cosine * double(report.forced_steps);
    for (size_t t = 0; t < want.logits.size(); ++t) {
      const size_t vocab = want.logits[t].size() / rows;
      for (size_t r = 0; r < rows; ++r) {
        std::vector<float> a(want.logits[t].begin() + static_cast<std::ptrdiff_t>(r * vocab),
                             want.logits[t].begin() + static_cast<std::ptrdiff_t>((r + 1) * vocab));
        std::vector<float> b(forced.logits[t].begin() + static_cast<std::ptrdiff_t>(r * vocab),
                             forced.logits[t].begin() + static_cast<std::ptrdiff_t>((r + 1) * vocab));
        const double c = cosine(a, b);
        report.min_logits_cosine = std::min(report.min_logits_cosine, c);
        sum += c;
        report.forced_top1_agree += std::max_element(a.begin(), a.end()) - a.begin() ==
                                    std::max_element(b.begin(), b.end()) - b.begin();
        ++report.forced_steps;
      }
    }
    report.mean_logits_cosine = report.forced_steps ? sum / double(report.forced_steps) : 1.0;
  }
  report.eval_in_sample = in_sample ? report.eval_sequences : 0;
  return report;
}

json Seq2SeqSetReport::to_json() const {
  json files_json = json::object();
  for (const auto& [name, r] : files) files_json[name] = r.to_json();
  json j = {{"files", files_json}, {"decoder_calibration_samples", decode_samples}};
  if (has_merged) {
    j["merged_decoder"] = {{"unified_weights", merged.unified_weights},
                           {"decoders_without_smoothquant", decoders_unsmoothed},
                           {"shared_initializers", merged.shared_initializers},
                           {"shared_bytes", merged.shared_bytes},
                           {"branch_initializers", merged.branch_initializers},
                           {"branch_bytes", merged.branch_bytes}};
    if (merged_tokens)
      j["merged_decoder"]["vs_split_files"] = {{"tokens", merged_tokens},
                                               {"agreeing_tokens", merged_agreeing_tokens},
                                               {"max_logits_rel_diff", merged_max_rel_diff}};
  }
  if (eval_sequences)
    j["greedy_fidelity"] = {{"sequences", eval_sequences},
                            {"in_sample", eval_in_sample > 0},
                            {"exact_sequences", exact_sequences},
                            {"tokens", tokens},
                            {"agreeing_tokens", agreeing_tokens},
                            {"forced_steps", forced_steps},
                            {"forced_top1_agreement", forced_steps ? double(forced_top1_agree) / double(forced_steps) : 1.0},
                            {"min_logits_cosine", min_logits_cosine},
                            {"mean_logits_cosine", mean_logits_cosine}};
  return j;
}

std::string Seq2SeqSetReport::to_text() const {
  std::ostringstream s;
  for (const auto& [name, r] : files) s << "== " << name << " ==\n" << r.to_text() << "\n";
  if (has_merged) {
    s << "== " << kMergedDecoder << " == (If branches: the two quantized decoders above, weights shared)\n";
    if (decoders_unsmoothed)
      s << "  the decoders were quantized without SmoothQuant (static mode's default), so that their weights can be "
           "shared; --smoothquant asks for it\n";
    s
      << "  " << merged.unified_weights << " weights take the with-past branch's int8 copy in both branches; "
      << merged.shared_initializers << " initializers shared by both branches (" << merged.shared_bytes
      << " bytes), " << merged.branch_initializers << " kept in one branch (" << merged.branch_bytes << " bytes)\n";
    if (merged_tokens)
      s << "  greedy tokens equal to the quantized split files: " << merged_agreeing_tokens << "/" << merged_tokens
        << ", logits max difference " << merged_max_rel_diff << " of their scale\n";
    s << "\n";
  }
  if (decode_samples) s << "decoder calibrated on " << decode_samples << " greedy decode steps of the float set\n";
  if (eval_sequences) {
    s << "greedy decoding, int8 set vs float set, " << eval_sequences << " held-out sequence(s)"
      << (eval_in_sample ? " (in-sample: fewer than 5 calibration samples)" : "") << ":\n"
      << "  identical sequences " << exact_sequences << "/" << eval_sequences << ", tokens agreeing "
      << agreeing_tokens << "/" << tokens << "\n"
      << "  on the float run's tokens: top-1 agreement " << forced_top1_agree << "/" << forced_steps
      << ", logits cosine mean " << mean_logits_cosine << " min " << min_logits_cosine << "\n";
  }
  return s.str();
}

}  // namespace octet::quant
