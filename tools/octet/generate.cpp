// `octet generate MODEL`: text generation with a decoder exported with a KV cache (or an
// encoder-decoder folder), from token ids (.npy or a list; no Python needed) or from text
// through a Hugging Face tokenizer.json (tokenized and detokenized by octet's Python package,
// like quantize --calib-text). Streams ids as they come; --json prints the ids, text and
// timings at the end.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_common.h"
#include "io/npy.h"
#include "octet/generate.h"
#include "runtime/process_memory.h"
#include "text_calibration.h"

namespace octet::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Options {
  std::string model, tokenizer, prompt, prompt_ids, stop_ids, out;
  std::vector<std::string> encoder_inputs;
  v1::GenerationOptions gen;
  int threads = 0, level = 2, repeat = 1;
  bool json = false, seq2seq = false, ignore_eos = false;
};

const char* kFooter = R"(MODELS
  A decoder-only model: an .onnx file with past_key_values.N.key/value inputs and
  present.N.key/value outputs (optimum's naming), or a folder holding one
  (decoder_with_past_model.onnx [+ decoder_model.onnx for the first step],
  decoder_model_merged.onnx, model.onnx, or a single .onnx). A with-past file that declares
  one new token per step (optimum's legacy export: attention_mask [batch, past + 1]) takes
  the prompt through decoder_model.onnx when it is beside it, else one token at a time.
  An encoder-decoder (Marian, T5, BART, Whisper): a folder with encoder_model.onnx and
  decoder_with_past_model.onnx [+ decoder_model.onnx], or decoder_model_merged.onnx (found
  by itself, or --seq2seq).
  config.json / generation_config.json beside the model give eos_token_id (the default stop
  tokens) and, for seq2seq, decoder_start_token_id.

PROMPTS
  --prompt-ids FILE.npy (int64 or int32, any shape: read flat) or --prompt-ids 1,2,3 needs
  no Python. --prompt TEXT needs --tokenizer tokenizer.json and octet's Python package with
  `tokenizers` (pip install . tokenizers; $OCTET_PYTHON names the interpreter); the
  output is then detokenized with the same tokenizer. An encoder that reads something
  else than ids (Whisper's log-mel input_features) takes --encoder-input NAME=FILE.npy.

OUTPUT
  Without --json: the new ids as they come (one line), then the text when a tokenizer was
  given, then the timings on stderr. --json: {"ids", "text", "prompt_tokens", "new_tokens",
  "time_to_first_token_ms", "decode_tokens_per_second", "total_ms", "peak_rss_bytes",
  "stop_reason"}. --out FILE.npy writes the new ids.

EXAMPLES
  octet generate smollm2_with_past.onnx --tokenizer tokenizer.json --prompt "The capital of France is" --max-new-tokens 16
  octet generate gpt2_with_past.onnx --prompt-ids 464,3139,286 --json
  octet generate opus-mt-en-de/ --prompt-ids ids.npy --num-beams 4
)";

std::vector<int64_t> parse_id_list(const std::string& text, const std::string& what) {
  std::vector<int64_t> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    try {
      ids.push_back(std::stoll(item, &used));
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size()) fail(what, ": '", item, "' is not an integer token id");
  }
  if (ids.empty()) fail(what, ": no ids");
  return ids;
}

// A scratch folder for the Python helper's files, removed at the end.
struct TempFolder {
  fs::path path;
  TempFolder() {
    std::string pattern = (fs::temp_directory_path() / "octet-generate-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) fail("cannot create a temporary folder: ", std::strerror(errno));
    path = pattern;
  }
  ~TempFolder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void run_python(const std::vector<std::string>& args, const std::string& what) {
  std::vector<std::string> argv = {python_interpreter(), "-m", "octet"};
  argv.insert(argv.end(), args.begin(), args.end());
  const int status = run_helper(argv);
  if (status != 0)
    fail(what, ": `", python_interpreter(), " -m octet ", args.front(), "` ",
         status < 0 ? "could not be started" : "failed (exit " + std::to_string(status) + ")",
         "; text needs octet's Python package (pip install . in octet's repository) and `tokenizers`; "
         "set OCTET_PYTHON to use another interpreter, or give --prompt-ids");
}

std::vector<int64_t> prompt_ids(const Options& o, const TempFolder* scratch) {
  if (!o.prompt.empty() == !o.prompt_ids.empty()) fail("give one of --prompt TEXT or --prompt-ids FILE.npy|1,2,3");
  if (!o.prompt_ids.empty()) {
    std::error_code ec;  // a long id list is no file name: no exception for its length
    if (!fs::is_regular_file(o.prompt_ids, ec)) return parse_id_list(o.prompt_ids, "--prompt-ids");
    const ::octet::Tensor t = read_npy(o.prompt_ids);
    if (t.dtype() != DType::Int64 && t.dtype() != DType::Int32)
      fail(o.prompt_ids, ": token ids must be int64 or int32, got ", t.describe());
    std::vector<int64_t> ids = t.to_int64_vector();
    if (ids.empty()) fail(o.prompt_ids, ": no ids");
    return ids;
  }
  if (o.tokenizer.empty()) fail("--prompt TEXT needs --tokenizer tokenizer.json (or give --prompt-ids)");
  if (!fs::is_regular_file(o.tokenizer)) fail(o.tokenizer, ": no such file");
  const fs::path ids = scratch->path / "prompt.npy";
  run_python({"tokenize", "--tokenizer", o.tokenizer, "--text", o.prompt, "--out", ids.string()}, "--prompt");
  return read_npy(ids).to_int64_vector();
}

std::string detokenize(const Options& o, const std::vector<int64_t>& ids, const TempFolder& scratch) {
  const fs::path in = scratch.path / "new.npy", out = scratch.path / "new.txt";
  write_npy(in, ::octet::Tensor::from_vector<int64_t>({static_cast<int64_t>(ids.size())}, ids));
  run_python({"detokenize", "--tokenizer", o.tokenizer, "--ids", in.string(), "--out", out.string()}, "detokenizing");
  std::ifstream f(out, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void generate_command(Options o) {
  const bool text = !o.prompt.empty();
  std::unique_ptr<TempFolder> scratch;
  if (text || !o.tokenizer.empty()) scratch = std::make_unique<TempFolder>();
  if (!o.tokenizer.empty() && !fs::is_regular_file(o.tokenizer)) fail(o.tokenizer, ": no such file");
  const bool features = !o.encoder_inputs.empty();
  if (features && (!o.prompt.empty() || !o.prompt_ids.empty()))
    fail("give --encoder-input or a prompt (--prompt, --prompt-ids), not both");
  const std::vector<int64_t> prompt = features ? std::vector<int64_t>{} : prompt_ids(o, scratch.get());
  if (!o.stop_ids.empty()) o.gen.stop_token_ids = parse_id_list(o.stop_ids, "--stop-ids");
  o.gen.use_model_stop_tokens = !o.ignore_eos;
  v1::SessionOptions so;
  so.threads = o.threads;
  so.optimization_level = o.level;
  const bool seq2seq = o.seq2seq || features || fs::is_regular_file(fs::path(o.model) / "encoder_model.onnx");
  // Streaming: ids as they come, unless --json wants one clean document.
  v1::TokenCallback stream;
  if (!o.json)
    stream = [](int64_t token) {
      std::cout << token << ' ' << std::flush;
      return true;
    };
  if (o.repeat < 1) fail("--repeat must be at least 1, got ", o.repeat);
  // --repeat: the same generation again on the loaded models; the timings reported are the
  // last run's (warm: oneDNN primitives created, memory arenas sized), each run's in "runs".
  v1::GenerationResult r;
  std::vector<v1::GenerationResult> runs;
  if (seq2seq) {
    v1::Seq2SeqGenerator g(o.model, so);
    v1::NamedTensors in;
    for (const std::string& item : o.encoder_inputs) {
      const size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0) fail("--encoder-input: '", item, "' is not NAME=FILE.npy");
      const ::octet::Tensor t = read_npy(item.substr(eq + 1));
      in.emplace_back(item.substr(0, eq), v1::Tensor::copy(static_cast<v1::ElementType>(t.dtype()), t.shape(), t.raw()));
    }
    for (int i = 0; i < o.repeat; ++i) runs.push_back(features ? g.generate(in, o.gen, i + 1 == o.repeat ? stream : nullptr)
                                                               : g.generate(prompt, o.gen, i + 1 == o.repeat ? stream : nullptr));
    r = runs.back();
    if (!o.json && o.gen.num_beams > 1)
      for (int64_t t : r.tokens) std::cout << t << ' ';
  } else {
    v1::Generator g(o.model, so);
    for (int i = 0; i < o.repeat; ++i) runs.push_back(g.generate(prompt, o.gen, i + 1 == o.repeat ? stream : nullptr));
    r = runs.back();
  }
  if (!o.json) std::cout << "\n";
  if (!o.out.empty()) write_npy(o.out, ::octet::Tensor::from_vector<int64_t>({static_cast<int64_t>(r.tokens.size())}, r.tokens));
  std::string decoded;
  const bool have_text = !o.tokenizer.empty();
  if (have_text) decoded = detokenize(o, r.tokens, *scratch);
  const auto& t = r.timings;
  if (o.json) {
    json j = {{"ids", r.tokens},
              {"prompt_tokens", t.prompt_tokens},
              {"new_tokens", t.new_tokens},
              {"time_to_first_token_ms", t.time_to_first_token_ms},
              {"decode_tokens_per_second", t.decode_tokens_per_second},
              {"total_ms", t.total_ms},
              {"peak_rss_bytes", peak_rss_bytes()},
              {"stop_reason", r.stop_reason}};
    j["text"] = have_text ? json(decoded) : json(nullptr);
    if (o.repeat > 1) {
      json each = json::array();
      for (const v1::GenerationResult& x : runs)
        each.push_back({{"time_to_first_token_ms", x.timings.time_to_first_token_ms},
                        {"decode_tokens_per_second", x.timings.decode_tokens_per_second},
                        {"total_ms", x.timings.total_ms},
                        {"same_ids", x.tokens == r.tokens}});
      j["runs"] = each;
    }
    std::cout << j.dump(2) << "\n";
    return;
  }
  if (have_text) std::cout << decoded << "\n";
  std::cerr << t.prompt_tokens << " prompt tokens, " << t.new_tokens << " new (" << r.stop_reason
            << "); time to first token " << t.time_to_first_token_ms << " ms, decode "
            << t.decode_tokens_per_second << " tokens/s, peak RSS " << peak_rss_bytes() / (1 << 20) << " MiB\n";
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate tokens (or text) with a decoder or encoder-decoder model");
  cmd->add_option("model", opts->model, "Decoder .onnx with past_key_values inputs, or a folder (see MODELS)")->required();
  cmd->add_option("--prompt", opts->prompt, "Prompt text (needs --tokenizer and octet's Python package)");
  cmd->add_option("--prompt-ids", opts->prompt_ids, "Prompt token ids: a .npy file or a comma-separated list")
      ->type_name("FILE|IDS");
  cmd->add_option("--encoder-input", opts->encoder_inputs,
                  "Encoder-decoder: an encoder input from a .npy file instead of a prompt, NAME=FILE "
                  "(Whisper: input_features=mel.npy), repeatable")
      ->type_name("NAME=FILE");
  cmd->add_option("--tokenizer", opts->tokenizer, "Hugging Face tokenizer.json (for --prompt and the output text)");
  cmd->add_option("--max-new-tokens", opts->gen.max_new_tokens, "Most tokens to generate (default 32)");
  cmd->add_flag("--do-sample", opts->gen.do_sample, "Sample (default: greedy)");
  cmd->add_option("--temperature", opts->gen.temperature, "Sampling temperature (default 1)");
  cmd->add_option("--top-k", opts->gen.top_k, "Sample from the k most likely tokens (default 0: all)");
  cmd->add_option("--top-p", opts->gen.top_p, "Nucleus sampling mass in (0, 1] (default 1: off)");
  cmd->add_option("--repetition-penalty", opts->gen.repetition_penalty, "transformers' repetition penalty (default 1: off)");
  cmd->add_option("--seed", opts->gen.seed, "Seed of the sampling (default 0)");
  cmd->add_option("--stop-ids", opts->stop_ids, "Stop after any of these ids, e.g. 2,0 (default: the config's eos)");
  cmd->add_flag("--ignore-eos", opts->ignore_eos, "Do not stop at the config's eos (benchmarks: always max-new-tokens)");
  cmd->add_option("--num-beams", opts->gen.num_beams, "Beam search width, encoder-decoder models (default 1)");
  cmd->add_option("--length-penalty", opts->gen.length_penalty, "Beam search length penalty (default 1)");
  cmd->add_option("--early-stopping", opts->gen.early_stopping, "Beam search: false | true | never (default false)");
  cmd->add_flag("--seq2seq", opts->seq2seq, "MODEL is an encoder-decoder folder (found by itself when it has encoder_model.onnx)");
  cmd->add_option("--threads", opts->threads, "Threads each kernel may use (default 0: one per core)");
  cmd->add_option("--level", opts->level, "Optimization level 0, 1 or 2 (default 2)");
  cmd->add_option("--out", opts->out, "Write the new ids to FILE.npy");
  cmd->add_flag("--json", opts->json, "Print ids, text and timings as JSON");
  cmd->add_option("--repeat", opts->repeat,
                  "Generate N times on the loaded models and report the last run's timings (benchmarks: warm runs; "
                  "--json lists every run)");
  cmd->footer(kFooter);
  cmd->callback([opts] { generate_command(*opts); });
}

}  // namespace octet::cli
