#include "client/loader_verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

namespace tb::client {
namespace {

// XProf's input-pipeline grades, by the share of the step spent waiting for input.
constexpr double kHighly = 0.20, kModerately = 0.05;
constexpr int kMaxWorkers = 64;  // the workers knob's range
// A worker count whose supply only equals the model's rate feeds it less: batches come when they come, and each
// wait the queue did not cover is lost. The count predicted supplies this much more than the model takes.
constexpr double kHeadroom = 1.15;
// A run measuring 95% of its cores' bound or more is at it: more workers add no core.
constexpr double kAtBound = 0.95;
// Workers that wait this share of their busy time for a CPU, and more than on reads, are crowded: too many for
// the cores (16 on 2 waited 76% of it), which looks like a slow disk in wall time and is not.
constexpr double kCrowded = 0.25;

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}
std::string pct(double share) { return fmt("%.0f%%", 100 * share); }
std::string ms(double v) { return fmt(v < 10 ? "%.2f ms" : "%.1f ms", v); }

std::string grade_of(double input_share) {
  return input_share >= kHighly ? "highly input-bound" : input_share >= kModerately ? "moderately input-bound"
                                                                                    : "not input-bound";
}

std::string base_name(const std::string& where) {
  const size_t slash = where.find_last_of('/');
  return slash == std::string::npos ? where : where.substr(slash + 1);
}

// "loader: change SlowDisk (train.py:5), 10.2 ms a sample (85% of the loading): <the change for its kind>; were it
// free, the training process would supply about 530 samples/s: at most 2.10x this run's throughput"
std::string fix_line(const LoaderFix& f, int workers) {
  std::string l = "loader: change " + f.part + (f.where.empty() ? "" : " (" + base_name(f.where) + ")") + ", " +
                  ms(f.ms) + (f.per_batch ? " a batch" : " a sample") + " (" + pct(f.share) + " of the loading): " +
                  f.change + "; were it free, " +
                  (workers > 0 ? "the " + std::to_string(workers) + " worker" + (workers > 1 ? "s" : "") + " would"
                               : std::string("the training process would")) +
                  " supply about " + fmt("%.0f", f.supply_sps) + " samples/s: at most " + fmt("%.2f", f.at_most) +
                  "x this run's throughput";
  return l;
}

}  // namespace

double LoaderVerdict::supply_with(int w) const {
  if (!(ms_per_sample > 0)) return std::numeric_limits<double>::quiet_NaN();
  // A worker's sample without its wait for a CPU: what it takes when the cores are not crowded (the cores'
  // bound below still counts every worker's CPU).
  const double one = 1000.0 / (ms_per_sample * (1 - std::clamp(cpu_wait_share, 0.0, 0.9)));
  if (w <= 0) return one;  // the training process loads, between its steps
  // From a run without workers, the training process will also take each batch from a worker.
  const double cpu_ms = ms_per_sample * cpu_share + train_cpu_ms + receive_ms_a_sample();
  const double cpu_bound =
      cpu_ms > 0 ? std::max(1, cores) * 1000.0 / cpu_ms : std::numeric_limits<double>::infinity();
  return std::min(w * one, cpu_bound);
}

bool LoaderVerdict::crowded() const {
  return workers > 0 && cpu_wait_share >= kCrowded && cpu_wait_share >= 1 - cpu_share - cpu_wait_share;
}

double LoaderVerdict::receive_ms_a_sample() const {
  return workers == 0 && receive_ms > 0 && samples > 0 && batches > 0 ? receive_ms * double(batches) / double(samples)
                                                                       : 0;
}

LoaderVerdict loader_verdict(const nlohmann::json& parts, int64_t samples, int64_t wall_ns, int64_t wait_ns,
                             int cores, double train_cpu_ms) {
  LoaderVerdict v;
  v.cores = cores;
  v.train_cpu_ms = std::max(0.0, train_cpu_ms);
  if (!parts.is_array() || parts.empty() || samples <= 0 || wall_ns <= 0) return v;
  // Worker processes when there were any (a run whose workers came on later keeps its main-process
  // entry from before: the verdict is about the loader as it ended), else the training process.
  bool any_worker = false;
  for (const auto& p : parts) any_worker |= p.value("who", std::string()).rfind("worker ", 0) == 0;
  int64_t busy = 0, cpu = 0, life = 0, run_delay = 0;
  bool delay_known = false;
  std::map<std::string, int64_t> part_ns;
  std::map<std::string, std::string> part_where;
  for (const auto& p : parts) {
    const std::string who = p.value("who", std::string());
    if (const auto t = p.find("threads"); t != p.end() && t->is_boolean() && t->get<bool>()) v.threads = true;
    if (const auto r = p.find("receive"); who == "main" && r != p.end() && r->is_object())
      v.receive_ms = std::max(0.0, r->value("ns", 0.0) / 1e6);
    if (const auto pin = p.find("pin_memory"); who == "main" && pin != p.end() && pin->is_object()) {
      v.pin_batches += pin->value("calls", int64_t(0));
      v.pin_ms += pin->value("ns", int64_t(0)) / 1e6;  // a total until divided below
    }
    if (any_worker != (who.rfind("worker ", 0) == 0)) continue;
    if (any_worker) v.workers = std::max(v.workers, std::atoi(who.c_str() + 7) + 1);
    v.samples += p.value("samples", int64_t(0));
    v.batches += p.value("batches", int64_t(0));
    busy += p.value("busy_ns", int64_t(0));
    cpu += p.value("cpu_ns", int64_t(0));
    life += p.value("life_ns", int64_t(0));
    if (const auto d = p.find("run_delay_ns"); any_worker && d != p.end() && d->is_number()) {
      run_delay += d->get<int64_t>();
      delay_known = true;
    }
    if (const auto it = p.find("parts"); it != p.end() && it->is_object())
      for (const auto& [name, t] : it->items()) part_ns[name] += t.value("ns", int64_t(0));
    if (const auto it = p.find("where"); it != p.end() && it->is_object())
      for (const auto& [name, w] : it->items())
        if (w.is_string() && !w.get<std::string>().empty() && part_where[name].empty()) part_where[name] = w.get<std::string>();
  }
  v.pin_ms = v.pin_batches > 0 ? v.pin_ms / double(v.pin_batches) : 0;
  if (busy <= 0 || (v.samples <= 0 && v.batches <= 0)) return v;
  v.valid = true;
  v.wait_share = std::clamp(double(wait_ns) / double(wall_ns), 0.0, 1.0);
  v.grade = grade_of(v.wait_share);
  v.busy_share = any_worker && life > 0 ? double(busy) / double(life) : 0;
  v.cpu_share = std::clamp(double(cpu) / double(busy), 0.0, 1.0);
  // A wait for a CPU is no more than the busy time off the CPU (a worker also waits to run after its queue woke
  // it, outside any sample).
  if (delay_known) v.cpu_wait_share = std::clamp(double(run_delay) / double(busy), 0.0, 1.0 - v.cpu_share);
  if (v.samples > 0) v.ms_per_sample = busy / 1e6 / double(v.samples);
  for (const auto& [name, ns] : part_ns) {
    LoaderPart p;
    p.name = name;
    p.per_batch = name == "collate";
    const int64_t n = p.per_batch ? v.batches : v.samples;
    if (n <= 0) continue;
    p.ms = ns / 1e6 / double(n);
    p.share = double(ns) / double(busy);
    p.where = part_where[name];
    v.parts.push_back(p);
  }
  std::sort(v.parts.begin(), v.parts.end(), [](const LoaderPart& a, const LoaderPart& b) { return a.share > b.share; });
  const double compute_s = (wall_ns - wait_ns) / 1e9;
  v.consume_sps = compute_s > 0 ? double(samples) / compute_s : 0;
  v.run_sps = wall_ns > 0 ? double(samples) / (wall_ns / 1e9) : 0;
  v.supply_sps = v.supply_with(v.workers);
  // The model's rate when workers feed it: a sample's time plus its share of taking a batch from a worker.
  v.fed_sps = v.consume_sps > 0 ? 1.0 / (1.0 / v.consume_sps + v.receive_ms_a_sample() / 1000.0) : 0;
  if (v.ms_per_sample > 0 && v.consume_sps > 0 && v.wait_share >= kModerately) {
    // The fewest workers that feed the model with headroom; when none can, the fewest that reach what the cores
    // allow.
    const double cap = v.supply_with(kMaxWorkers);
    v.cores_bound = cap < v.fed_sps;
    const double target = v.cores_bound ? 0.97 * cap : std::min(kHeadroom * v.fed_sps, 0.97 * cap);
    for (int w = 1; w <= kMaxWorkers && v.need_workers == 0; ++w)
      if (v.supply_with(w) >= target) v.need_workers = w;
    v.expect_sps = std::min(v.fed_sps, v.supply_with(v.need_workers));
    if (v.cores_bound) {
      // What feeding the model would take on a machine with more cores: a prediction this one cannot test.
      const double cpu_ms = v.ms_per_sample * v.cpu_share + v.train_cpu_ms;
      v.feed_cores = static_cast<int>(std::ceil(v.fed_sps * cpu_ms / 1000.0 - 1e-9));
      v.feed_workers = static_cast<int>(std::ceil(kHeadroom * v.fed_sps * v.ms_per_sample / 1000.0 - 1e-9));
      if (v.feed_workers > kMaxWorkers) v.feed_workers = 0;
    }
  }
  return v;
}

void LoaderVerdict::add_transfer(int64_t h2d_ns, int64_t wall_ns) {
  if (!valid || h2d_ns < 0 || wall_ns <= 0) return;
  transfer_share = std::clamp(double(h2d_ns) / double(wall_ns), 0.0, 1.0);
  grade = grade_of(wait_share + transfer_share);
}

std::vector<std::string> LoaderVerdict::lines() const {
  if (!valid) return {};
  std::vector<std::string> out;
  if (transfer_share >= 0)
    out.push_back("loader: " + grade + ": input took " + pct(wait_share + transfer_share) + " of the step time: the " +
                  "loop waited for batches " + pct(wait_share) + " (host) and copied them to the device " +
                  pct(transfer_share) + " (transfer) (20% and more is highly input-bound, 5% moderately)");
  else
    out.push_back("loader: " + grade + ": the loop waited for batches " + pct(wait_share) +
                  " of its step time (20% and more is highly input-bound, 5% moderately)");
  std::string where = workers > 0 ? "in each of " + std::to_string(workers) + " worker" + (workers > 1 ? "s" : "")
                                  : "in the training process (num_workers=0)";
  std::string line = "loader: ";
  if (ms_per_sample > 0) line += "a sample costs " + ms(ms_per_sample) + " " + where;
  else line += "batches are made " + where;
  if (cpu_wait_share >= 0)
    line += " (" + pct(cpu_share) + " of it on the CPU, " + pct(cpu_wait_share) + " waiting for a CPU, " +
            pct(std::max(0.0, 1 - cpu_share - cpu_wait_share)) + " on reads or sleeps";
  else
    line += " (" + pct(cpu_share) + " of it on the CPU, the rest waiting on reads or sleeps";
  if (workers > 0) line += "; the workers busy " + pct(busy_share) + " of their time";
  line += "): ";
  for (size_t i = 0; i < parts.size() && i < 5; ++i)
    line += (i ? ", " : "") + parts[i].name + " " + ms(parts[i].ms) + (parts[i].per_batch ? " a batch" : "") + " (" +
            pct(parts[i].share) + ")";
  out.push_back(line);
  if (crowded())
    out.push_back("loader: " + std::to_string(workers) + " worker processes share " + std::to_string(cores) +
                  " core" + (cores == 1 ? "" : "s") + ": each waits " + pct(cpu_wait_share) +
                  " of its busy time for a CPU, not for its files; " +
                  (need_workers > 0 && need_workers < workers
                       ? "about " + std::to_string(need_workers) + " would supply as much (run it: --set workers=" +
                             std::to_string(need_workers) + "), with persistent_workers=on so that they start once"
                       : std::string("fewer workers would supply as much, with persistent_workers=on so that they "
                                     "start once")));
  if (workers > 0 && wait_share >= kModerately && busy_share < 0.5)
    out.push_back("loader: the workers are idle " + pct(1 - busy_share) +
                  " of their time while the loop waits: the training process is the bound (collate or pinning in "
                  "it, the GIL), not the workers' samples");
  if (wait_share < kModerately) {
    out.push_back("loader: more workers would not speed the step (the loop hardly waits)");
  } else if (ms_per_sample > 0 && consume_sps > 0) {
    const std::string costliest = parts.empty() ? std::string() : parts.front().name;
    std::string l = "loader: the model takes " + fmt("%.0f", consume_sps) + " samples/s when fed; " +
                    (workers > 0 ? std::to_string(workers) + " worker" + (workers > 1 ? "s supply" : " supplies")
                                 : std::string("the training process supplies")) +
                    " about " + fmt("%.0f", supply_sps) + "; ";
    if (cores_bound)
      l += "no worker count feeds it on " + std::to_string(cores) + " core" + (cores > 1 ? "s" : "") +
           (machine_cores > cores ? " (of " + std::to_string(machine_cores) + ": other work kept the rest busy during the run)"
                                  : std::string()) +
           ": a sample's CPU (loading " +
           ms(ms_per_sample * cpu_share) + ", training " + ms(train_cpu_ms) + ") bounds the run at " +
           fmt("%.0f", expect_sps) + " samples/s, " +
           // A run at its bound already gains no core from a worker: the public ImageNet example at
           // num_workers=0 measured 95.9 samples/s against a bound of 92, and 70.0 with the 1 worker advised.
           (run_sps >= kAtBound * expect_sps
                ? "which this run reaches already (" + fmt("%.0f", run_sps) +
                      "): a worker would move the loading off the training thread, not add a core; make " +
                      costliest + " cheaper"
                : "which about " + std::to_string(need_workers) + " worker" + (need_workers > 1 ? "s" : "") +
                      " reach (run it: --set workers=" + std::to_string(need_workers) + "); beyond that, make " +
                      costliest + " cheaper") +
           (feed_workers > 0 && feed_cores > 0
                ? "; feeding the model would take about " + std::to_string(feed_workers) + " worker" +
                      (feed_workers > 1 ? "s" : "") + " on " +
                      std::to_string(feed_cores) + " free cores, " +
                      (feed_cores > (machine_cores > 0 ? machine_cores : cores)
                           ? std::string("more than this machine has: that prediction cannot be tested here")
                           : std::string("more than other work left free: test it on a quiet machine"))
                : std::string());
    else if (need_workers > workers)
      l += "about " + std::to_string(need_workers) + " worker" + (need_workers > 1 ? "s" : "") + " would supply " +
           fmt("%.0f", supply_with(need_workers)) + " (run it: --set workers=" + std::to_string(need_workers) + ")" +
           (workers > 0 || threads ? std::string()
            : receive_ms > 0
                ? "; from loading in the training process, counting what taking each batch from a worker costs it (" +
                      ms(receive_ms) + " a batch, measured on this run's: the model then takes about " +
                      fmt("%.0f", fed_sps) + ")"
                // Measured without workers and without the probe, the batches' way between processes is in no
                // figure: such predictions measured 4-18% high on a 2-core VM.
                : std::string("; predicted from loading in the training process, without the batches' way "
                              "between processes: expect the run somewhat under it"));
    else
      l += "enough by their cost a sample, so the wait comes from elsewhere: the training process (collate, "
           "pinning, the GIL) or workers started again at each pass (persistent_workers)";
    out.push_back(l);
  }
  if (pin_batches > 0 && batches > 0 && consume_sps > 0)
    out.push_back("loader: pin_memory copies a batch into page-locked memory in " + ms(pin_ms) + " (" +
                  (workers > 0 ? std::string("the training process's pin-memory thread, beside the training")
                               : std::string("on the training thread, between its steps")) +
                  "); the model trains a batch in " + ms(1000.0 * double(samples) / double(batches) / consume_sps));
  if (transfer_share >= kModerately)
    out.push_back("loader: the copies to the device take " + pct(transfer_share) + " of the step: " +
                  (pin_batches > 0 ? std::string("the batches are pinned already; fewer bytes would copy faster (send "
                                                 "images as uint8 and convert them on the device)")
                                   : std::string("pinned batches copied without blocking overlap the compute (run it: "
                                                 "--set pin_memory=on)")));
  for (const auto& f : fixes()) out.push_back(fix_line(f, workers));
  return out;
}

LoaderVerdict loader_verdict_of_run(const nlohmann::json& parts, int64_t cpu_ns, int64_t samples, int64_t wall_ns,
                                    int64_t wait_ns, int64_t samples_after_first, int cores) {
  int64_t loading_cpu = 0;
  if (parts.is_array())
    for (const auto& p : parts)
      if (p.is_object() && p.value("who", std::string()) == "main") loading_cpu += p.value("cpu_ns", int64_t(0));
  const double train_cpu_ms =
      samples_after_first > 0 ? double(std::max<int64_t>(0, cpu_ns - loading_cpu)) / 1e6 / double(samples_after_first) : 0;
  return loader_verdict(parts, samples, wall_ns, wait_ns, cores, train_cpu_ms);
}

int cores_free(int cores, double busy_share, double own_cores) {
  if (cores <= 0) return 1;
  if (!(busy_share >= 0)) return cores;  // not readable: the machine's
  const double other = std::max(0.0, busy_share * cores - std::max(0.0, own_cores));
  return std::clamp(static_cast<int>(std::floor(cores - other + 0.5)), 1, cores);
}

nlohmann::json LoaderVerdict::to_json() const {
  nlohmann::json j = {{"grade", grade},           {"wait_share", wait_share},   {"workers", workers},
                      {"samples", samples},       {"batches", batches},         {"busy_share", busy_share},
                      {"cpu_share", cpu_share},   {"ms_per_sample", ms_per_sample}, {"cores", cores}, {"machine_cores", machine_cores},
                      {"consume_samples_s", consume_sps}, {"supply_samples_s", supply_sps},
                      {"receive_ms", receive_ms}, {"fed_samples_s", fed_sps}, {"threads", threads},
                      {"need_workers", need_workers}, {"cores_bound", cores_bound}, {"expect_samples_s", expect_sps}, {"run_samples_s", run_sps},
                      {"train_cpu_ms", train_cpu_ms}, {"pin_ms", pin_ms}, {"pin_batches", pin_batches},
                      {"feed_workers", feed_workers}, {"feed_cores", feed_cores}, {"transfer_share", transfer_share},
                      {"cpu_wait_share", cpu_wait_share}};
  nlohmann::json ps = nlohmann::json::array();
  for (const auto& p : parts)
    ps.push_back({{"name", p.name}, {"ms", p.ms}, {"per", p.per_batch ? "batch" : "sample"}, {"share", p.share},
                  {"where", p.where}});
  j["parts"] = ps;
  nlohmann::json fs = nlohmann::json::array();
  for (const auto& f : fixes())
    fs.push_back({{"part", f.part}, {"where", f.where}, {"change", f.change}, {"ms", f.ms}, {"share", f.share},
                  {"supply_samples_s", f.supply_sps}, {"at_most", f.at_most}});
  j["fixes"] = fs;
  return j;
}

LoaderVerdict LoaderVerdict::from_json(const nlohmann::json& j) {
  LoaderVerdict v;
  if (!j.is_object() || !j.contains("grade") || !j["grade"].is_string() || !j.contains("parts") || !j["parts"].is_array())
    return v;
  // A field of the wrong type reads as absent: a hand-edited trace shows what it can, never throws.
  auto num = [&](const char* k) { return j.contains(k) && j[k].is_number() ? j[k].get<double>() : 0.0; };
  v.grade = j["grade"].get<std::string>();
  v.wait_share = num("wait_share");
  v.workers = int(num("workers"));
  v.samples = int64_t(num("samples"));
  v.batches = int64_t(num("batches"));
  v.busy_share = num("busy_share");
  v.cpu_share = num("cpu_share");
  v.ms_per_sample = num("ms_per_sample");
  v.cores = int(num("cores"));
  v.machine_cores = int(num("machine_cores"));
  v.consume_sps = num("consume_samples_s");
  v.supply_sps = num("supply_samples_s");
  v.receive_ms = num("receive_ms");
  v.threads = j.contains("threads") && j["threads"].is_boolean() && j["threads"].get<bool>();
  v.fed_sps = j.contains("fed_samples_s") ? num("fed_samples_s") : v.consume_sps;  // a trace from before it
  v.need_workers = int(num("need_workers"));
  v.cores_bound = j.contains("cores_bound") && j["cores_bound"].is_boolean() && j["cores_bound"].get<bool>();
  v.expect_sps = num("expect_samples_s");
  v.run_sps = num("run_samples_s");
  v.train_cpu_ms = num("train_cpu_ms");
  v.pin_ms = num("pin_ms");
  v.pin_batches = int64_t(num("pin_batches"));
  v.feed_workers = int(num("feed_workers"));
  v.feed_cores = int(num("feed_cores"));
  v.transfer_share = j.contains("transfer_share") && j["transfer_share"].is_number() ? j["transfer_share"].get<double>() : -1;
  v.cpu_wait_share = j.contains("cpu_wait_share") && j["cpu_wait_share"].is_number() ? j["cpu_wait_share"].get<double>() : -1;
  for (const auto& p : j["parts"]) {
    if (!p.is_object() || !p.contains("name") || !p["name"].is_string()) continue;
    LoaderPart part;
    part.name = p["name"].get<std::string>();
    part.ms = p.contains("ms") && p["ms"].is_number() ? p["ms"].get<double>() : 0.0;
    part.per_batch = p.contains("per") && p["per"].is_string() && p["per"].get<std::string>() == "batch";
    part.share = p.contains("share") && p["share"].is_number() ? p["share"].get<double>() : 0.0;
    part.where = p.contains("where") && p["where"].is_string() ? p["where"].get<std::string>() : std::string();
    v.parts.push_back(part);
  }
  v.valid = true;
  return v;
}

LoaderVerdict LoaderVerdict::from_text(const std::string& text) {
  return text.empty() ? LoaderVerdict{} : from_json(nlohmann::json::parse(text, nullptr, false));
}

}  // namespace tb::client
