#include "run_report.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace octet::cli {

namespace {

using nlohmann::json;

// JSON has no NaN or infinity; such values are written as null.
json number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

std::string fmt(const json& v, const char* spec = "%.6g") {
  if (v.is_null()) return "-";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  char buf[64];
  std::snprintf(buf, sizeof buf, spec, v.get<double>());
  return buf;
}

std::string shape_text(const json& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i].get<int64_t>());
  }
  return s + "]";
}

std::string pad(const std::string& s, size_t width) { return s.size() >= width ? s : s + std::string(width - s.size(), ' '); }

std::string type_text(const json& t) { return t["dtype"].get<std::string>() + shape_text(t["shape"]); }

void render_reference(std::ostringstream& out, const json& r, const std::string& indent) {
  out << indent << "vs " << r["file"].get<std::string>() << ": ";
  if (r.contains("problem")) {
    out << "MISMATCH: " << r["problem"].get<std::string>() << "\n";
    return;
  }
  out << "max abs err " << fmt(r["max_abs_error"], "%.3g") << ", max rel err " << fmt(r["max_rel_error"], "%.3g");
  if (r["ok"].get<bool>()) {
    out << ", ok\n";
    return;
  }
  out << ", MISMATCH: " << r["mismatched"].get<int64_t>() << " of " << r["count"].get<int64_t>()
      << " elements out of tolerance";
  if (r.contains("worst"))
    out << "; worst at " << shape_text(r["worst"]["index"]) << ": " << fmt(r["worst"]["actual"]) << ", expected "
        << fmt(r["worst"]["expected"]);
  out << "\n";
}

}  // namespace

json stats_json(const TensorStats& s) {
  auto opt = [](const std::optional<double>& v) { return v ? number(*v) : json(nullptr); };
  return {{"count", s.count}, {"min", opt(s.min)}, {"max", opt(s.max)}, {"mean", opt(s.mean)},
          {"nan", s.nan}, {"inf", s.pos_inf + s.neg_inf}};
}

json tensor_json(const std::string& name, const Tensor& t) {
  return {{"name", name}, {"dtype", dtype_name(t.dtype())}, {"shape", t.shape()}};
}

json comparison_json(const Comparison& c, const std::string& file) {
  json j = {{"file", file}, {"ok", c.ok()}, {"count", c.count}, {"mismatched", c.mismatched}};
  if (!c.problem.empty()) {
    j["problem"] = c.problem;
    return j;
  }
  // An infinite error (NaN against a number) must not read as 0: say it as a string.
  auto err = [](double v) { return std::isfinite(v) ? json(v) : json(std::isnan(v) ? "nan" : "inf"); };
  j["max_abs_error"] = err(c.max_abs_error);
  j["max_rel_error"] = err(c.max_rel_error);
  if (c.worst_index)
    j["worst"] = {{"index", *c.worst_index}, {"actual", number(c.worst_actual)}, {"expected", number(c.worst_expected)}};
  return j;
}

std::string render_run_text(const json& report) {
  std::ostringstream out;
  out << "model " << report["model"].get<std::string>() << " (" << report["nodes"].get<int64_t>()
      << " nodes): loaded in " << fmt(report["timing_ms"]["load"], "%.1f") << " ms, session ready in "
      << fmt(report["timing_ms"]["session"], "%.1f") << " ms\n";
  // The first few in full (a node named is a node found); inspect lists every one.
  const json& warnings = report["warnings"];
  constexpr size_t kShown = 5;
  for (size_t i = 0; i < warnings.size() && i < kShown; ++i) out << "warning: " << warnings[i].get<std::string>() << "\n";
  if (warnings.size() > kShown)
    out << "note: " << warnings.size() - kShown << " more warning(s) while loading; `octet inspect` lists them\n";
  for (const json& run : report["runs"]) {
    out << "\n" << run["name"].get<std::string>();
    if (!run["bindings"].empty()) {
      std::string b;
      for (const auto& [k, v] : run["bindings"].items()) b += (b.empty() ? "" : ", ") + k + "=" + fmt(v);
      out << " (" << b << ")";
    }
    out << ": ran in " << fmt(run["time_ms"], "%.2f") << " ms\n";
    size_t name_w = 0, type_w = 0;
    for (const char* part : {"inputs", "outputs"})
      for (const json& t : run[part]) {
        name_w = std::max(name_w, t["name"].get<std::string>().size());
        type_w = std::max(type_w, type_text(t).size());
      }
    out << "  inputs:\n";
    for (const json& t : run["inputs"])
      out << "    " << pad(t["name"], name_w) << "  " << pad(type_text(t), type_w) << "  "
          << t["source"].get<std::string>() << "\n";
    out << "  outputs:\n";
    for (const json& t : run["outputs"]) {
      const json& s = t["stats"];
      out << "    " << pad(t["name"], name_w) << "  " << pad(type_text(t), type_w) << "  min " << fmt(s["min"])
          << "  max " << fmt(s["max"]) << "  mean " << fmt(s["mean"]) << "  nan " << fmt(s["nan"]) << "  inf "
          << fmt(s["inf"]);
      if (t.contains("file")) out << "  -> " << t["file"].get<std::string>();
      out << "\n";
      if (t.contains("reference")) render_reference(out, t["reference"], "      ");
    }
  }
  if (report.contains("comparison")) {
    const json& c = report["comparison"];
    out << "\n" << c["sets"].get<int64_t>() << " data set(s), " << c["outputs_compared"].get<int64_t>()
        << " output(s) compared at rtol " << fmt(c["rtol"]) << ", atol " << fmt(c["atol"]) << ": ";
    if (c["ok"].get<bool>()) out << "all match\n";
    else out << c["outputs_mismatched"].get<int64_t>() << " MISMATCHED\n";
  }
  return out.str();
}

}  // namespace octet::cli
