// --profile FILE and --timings (issues #12 item 4, #9 item 5). The timeline is parsed with nlohmann
// and its structure checked -- never its durations: every span closed, each device's spans nested
// and ordered, thread names present, exactly one span per collective per device matching the
// trace's sequence numbers, a wait span where the device arrived and none where it never did;
// also for a run that failed. --timings: one JSON line, its keys in order, the flop counts of
// ../shared/peers/programs_numpy.py, the bytes read.
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/profile_json.hpp"
#include "mesh/mesh.hpp"
#include "mesh/shard_map.hpp"
#include "support/run_meshrun.hpp"
#include "support/json.hpp"

namespace fs = std::filesystem;
using meshrun::testing::run;
using meshrun::testing::slurp;
using meshrun::testing::TempDir;
using nlohmann::json;

namespace {

using meshrun::testing::has;

// One collective span as a device's track shows it.
struct SeenCollective {
  std::string op, group;
  std::uint64_t seq;
  bool arrived, failed, has_wait, has_transfer;
};

struct Timeline {
  std::map<int, std::string> names;                        // tid -> thread_name
  std::map<int, std::vector<SeenCollective>> collectives;  // device -> in track order
  std::vector<std::string> phases;                         // the main track's, in order
  json other;
};

// Checks what every timeline must satisfy and returns what it shows. Rounding: ts and dur are
// microseconds with 3 decimals, so containment is checked to 1e-3.
Timeline check_timeline(const std::string& text) {
  const json doc = meshrun::testing::parse_json(text);
  BOOST_REQUIRE(doc.contains("traceEvents"));
  BOOST_TEST(doc["displayTimeUnit"] == "ms");
  Timeline t;
  t.other = doc["otherData"];
  std::map<int, std::vector<json>> spans;
  for (const json& e : doc["traceEvents"]) {
    BOOST_TEST(e["pid"] == 1);
    const std::string ph = e["ph"];
    if (ph == "M" && e["name"] == "thread_name") t.names[e["tid"]] = e["args"]["name"];
    if (ph != "X") continue;
    BOOST_TEST(e["ts"].get<double>() >= 0.0);
    BOOST_TEST(e["dur"].get<double>() >= 0.0);  // closed: a complete event with a duration
    spans[e["tid"]].push_back(e);
  }
  BOOST_TEST(t.names[0] == "main");
  for (auto& [tid, list] : spans) {
    BOOST_TEST(t.names.count(tid) == 1u, "track " << tid << " has a thread_name");
    // The file lists each track's spans parent first, in time order: check it is so, and that
    // every span lies inside its parent or after it -- never across its end. ts and dur come
    // from whole nanoseconds, so the only slack needed is the doubles' rounding.
    constexpr double kSlack = 1e-6;
    auto end_of = [](const json& s) { return s["ts"].get<double>() + s["dur"].get<double>(); };
    std::vector<const json*> stack;
    double last_ts = 0;
    for (const json& e : list) {
      const double ts = e["ts"], end = end_of(e);
      BOOST_TEST(ts + kSlack >= last_ts, "track " << tid << ": " << e["name"] << " out of order");
      last_ts = ts;
      while (!stack.empty() &&
             end > end_of(*stack.back()) + kSlack) {  // not inside: a later sibling
        BOOST_TEST(ts + kSlack >= end_of(*stack.back()), "track " << tid << ": " << e["name"]
                                                                  << " crosses the end of "
                                                                  << (*stack.back())["name"]);
        stack.pop_back();
      }
      const json* parent = stack.empty() ? nullptr : stack.back();
      const std::string cat = e["cat"];
      if (tid == 0) {
        BOOST_TEST(parent == nullptr);  // the main thread's phases follow each other
        t.phases.push_back(e["name"]);
      } else if (cat == "device") {
        BOOST_TEST(parent == nullptr);
      } else if (cat == "compute" || cat == "collective") {
        BOOST_TEST((parent && (*parent)["cat"] == "device"), e["name"] << " inside the body");
      } else {
        BOOST_TEST((cat == "wait" || cat == "transfer"));
        BOOST_REQUIRE((parent && (*parent)["cat"] == "collective"));
        auto& c = t.collectives[tid - 1].back();
        (cat == "wait" ? c.has_wait : c.has_transfer) = true;
      }
      if (cat == "collective") {
        const json& a = e["args"];
        const std::string op = a["op"], group = a["group"];
        const std::uint64_t seq = a["seq"];
        BOOST_TEST(e["name"] == op + " #" + std::to_string(seq) + " '" + group + "'");
        BOOST_TEST(a.contains("bytes"));
        t.collectives[tid - 1].push_back(
            {op, group, seq, a.value("arrived", false), a.value("failed", false), false, false});
      }
      stack.push_back(&e);
    }
  }
  for (auto& [device, list] : t.collectives)
    for (const SeenCollective& c : list) {
      // The engine marks both ends of the wait of a collective that completed; one that failed
      // may have waited (until the abort or its deadline) but never transferred.
      BOOST_TEST(c.has_wait == c.arrived);
      BOOST_TEST(c.has_transfer == !c.failed);
    }
  return t;
}

// The device's track names on a mesh, e.g. "device 5 (data=1, model=1)".
void check_names(const Timeline& t, const std::vector<std::string>& expected) {
  for (std::size_t d = 0; d < expected.size(); ++d)
    BOOST_TEST(t.names.at(static_cast<int>(d) + 1) == expected[d]);
  BOOST_TEST(t.names.size() == expected.size() + 1);
}

const std::vector<std::string> kPhases{"read", "split", "run", "assemble", "write"};

}  // namespace

// In the library: a body making collectives of every kind in three groups, staged and direct
// sizes; the timeline holds exactly the trace's collectives, device by device, with their
// sequence numbers.
BOOST_AUTO_TEST_CASE(library_timeline_matches_the_trace) {
  using namespace meshrun;
  Mesh mesh(MeshShape{{"data", 2}, {"model", 4}});
  const Body body = [](Device& dev, const std::vector<Tensor>& in) {
    Tensor a = dev.psum(in[0], "model");                         // 64 KiB: the direct path
    Tensor b = dev.pmean(Tensor({1, 4}, {1, 2, 3, 4}), "data");  // staged
    Tensor g = dev.all_gather(b, AxisNames{"data", "model"});
    Tensor p = dev.ppermute(b, "model", {{0, 1}, {1, 2}, {2, 3}, {3, 0}});
    std::vector<float> buf(3, 1.0f);
    dev.psum_inplace(buf, "data");
    Tensor s = dev.psum_scatter(Tensor({4, 2}), "model");
    return std::vector<Tensor>{Tensor::scalar(a.data[0] + g.data[0] + p.data[0] + s.data[0])};
  };
  Trace trace;
  Profile profile;
  trace.profile = &profile;
  shard_map(mesh, body, {{"x", {"R", "C"}, P()}}, {{"s", {}, P()}}, {Tensor({16, 1024})}, &trace);
  const Timeline t = check_timeline(trace_event_json(trace, profile, ""));
  check_names(
      t, {"device 0 (data=0, model=0)", "device 1 (data=0, model=1)", "device 2 (data=0, model=2)",
          "device 3 (data=0, model=3)", "device 4 (data=1, model=0)", "device 5 (data=1, model=1)",
          "device 6 (data=1, model=2)", "device 7 (data=1, model=3)"});
  BOOST_TEST(t.phases == (std::vector<std::string>{"split", "run", "assemble"}));
  for (int d = 0; d < 8; ++d) {
    const auto& seen = t.collectives.at(d);
    const auto& recorded = trace.collectives[static_cast<std::size_t>(d)];
    BOOST_REQUIRE(seen.size() == recorded.size());
    BOOST_REQUIRE(seen.size() == 6u);
    for (std::size_t i = 0; i < seen.size(); ++i) {
      BOOST_TEST(seen[i].op == recorded[i].op);
      BOOST_TEST(seen[i].group == recorded[i].axis);
      BOOST_TEST(seen[i].seq == recorded[i].seq);
      BOOST_TEST(seen[i].arrived);
      BOOST_TEST(!seen[i].failed);
    }
    BOOST_TEST(seen[4].seq == 2u);  // the second collective over 'data'
  }
  const TimingSums sums = sum_timings(profile);
  BOOST_TEST(sums.compute_s > 0.0);
  BOOST_TEST(sums.collectives_s > 0.0);
}

BOOST_AUTO_TEST_CASE(profile_of_each_program) {
  struct Run {
    std::vector<std::string> args;
    std::vector<std::string> names;
    std::vector<std::pair<std::string, std::string>> collectives;  // op, group on every device
  };
  const std::vector<Run> runs{
      {{"dp-step", "cases/dp-step/example1.json", "--devices", "2"},
       {"device 0 (data=0)", "device 1 (data=1)"},
       {{"pmean", "data"}}},
      {{"tp-mlp", "cases/tp-mlp/example1.json", "--devices", "4"},
       {"device 0 (model=0)", "device 1 (model=1)", "device 2 (model=2)", "device 3 (model=3)"},
       {{"psum", "model"}}},
      {{"mlp-train", "cases/mlp-train/example1.json", "--mesh", "data=2,model=2"},
       {"device 0 (data=0, model=0)", "device 1 (data=0, model=1)", "device 2 (data=1, model=0)",
        "device 3 (data=1, model=1)"},
       {{"psum", "model"}, {"pmean", "data"}}},
  };
  for (const Run& r : runs) {
    TempDir dir;
    std::vector<std::string> args = r.args;
    args.insert(args.end(), {"--profile", dir / "p.json"});
    const auto res = run(args);
    BOOST_TEST_CONTEXT(r.args[0]) {
      BOOST_TEST(res.code == 0);
      BOOST_TEST(res.err == "");
      const Timeline t = check_timeline(slurp(dir / "p.json"));
      check_names(t, r.names);
      BOOST_TEST(t.phases == kPhases);
      BOOST_TEST(!t.other.contains("failure"));
      for (std::size_t d = 0; d < r.names.size(); ++d) {
        const auto& seen = t.collectives.at(static_cast<int>(d));
        BOOST_REQUIRE(seen.size() == r.collectives.size());
        for (std::size_t i = 0; i < seen.size(); ++i) {
          BOOST_TEST(seen[i].op == r.collectives[i].first);
          BOOST_TEST(seen[i].group == r.collectives[i].second);
          BOOST_TEST(seen[i].seq == 1u);  // the first in its group
        }
      }
      BOOST_TEST(fs::directory_iterator(dir.path)->path().filename() ==
                 "p.json");  // no temp file left
    }
  }
}

// The straggler: device 3 never arrives; the file is still written, and shows device 3's pmean as
// never arrived (no wait) and every other device waiting in it until the timeout.
BOOST_AUTO_TEST_CASE(stalled_run_writes_the_timeline) {
  TempDir dir;
  const auto res = run({"dp-step", "cases/dp-step/example1.json", "--inject", "stall:3@1",
                        "--timeout", "1", "--profile", dir / "p.json"});
  BOOST_TEST(res.code == 3);
  BOOST_TEST(has(res.err, "device(s) 3 never arrived"));
  const Timeline t = check_timeline(slurp(dir / "p.json"));
  BOOST_TEST(has(t.other["failure"].get<std::string>(), "timed out"));
  BOOST_TEST(t.phases == (std::vector<std::string>{"read", "split", "run"}));
  for (int d = 0; d < 8; ++d) {
    BOOST_REQUIRE(t.collectives.at(d).size() == 1u);
    const SeenCollective& c = t.collectives.at(d)[0];
    BOOST_TEST(c.op == "pmean");
    BOOST_TEST(c.failed);
    BOOST_TEST(c.arrived == (d != 3));
  }
}

// A run that ends by an error after the mesh ran (an --inject that never fired) still leaves its
// timeline, written while the trace it draws from is alive (under ASan a dangling read fails here).
BOOST_AUTO_TEST_CASE(error_after_the_run_writes_the_timeline) {
  TempDir dir;
  const auto res = run({"dp-step", "cases/dp-step/example1.json", "--inject", "stall:1@9",
                        "--profile", dir / "p.json"});
  BOOST_TEST(res.code == 2, res.err);
  BOOST_TEST(has(res.err, "never fired"));
  const Timeline t = check_timeline(slurp(dir / "p.json"));
  BOOST_TEST(t.collectives.at(0).size() == 1u);
}

BOOST_AUTO_TEST_CASE(failed_device_and_bad_paths) {
  TempDir dir;
  const auto failed = run({"tp-mlp", "cases/tp-mlp/example1.json", "--inject", "fail:2@1",
                           "--profile", dir / "p.json"});
  BOOST_TEST(failed.code == 3);
  const Timeline t = check_timeline(slurp(dir / "p.json"));
  BOOST_TEST(has(t.other["failure"].get<std::string>(), "device 2 failed at psum #1 on 'model'"));
  BOOST_TEST(!t.collectives.at(2)[0].arrived);

  const auto bad =
      run({"dp-step", "cases/dp-step/example1.json", "--profile", "/nonexistent-dir/p.json"});
  BOOST_TEST(bad.code == 2);
  BOOST_TEST(bad.out == "");
  BOOST_TEST(has(bad.err, "--profile: cannot write /nonexistent-dir/p.json"));
  const auto self =
      run({"dp-step", "cases/dp-step/example1.json", "--profile", "cases/dp-step/example1.json"});
  BOOST_TEST(self.code == 2);
  BOOST_TEST(has(self.err, "is the case file being read"));
}

BOOST_AUTO_TEST_CASE(timings_line) {
  struct Want {
    std::vector<std::string> args;
    std::uint64_t flops;
    std::vector<std::string> files;  // whose bytes are read
  };
  const std::vector<Want> wants{
      // N=8 D=1 K=1: 2*2*N*D*K
      {{"dp-step", "cases/dp-step/example1.json"}, 32, {"cases/dp-step/example1.json"}},
      // B=1 D=2 H=8 O=1: 2*B*D*H + 2*B*H*O
      {{"tp-mlp", "cases/tp-mlp/example1.json"}, 48, {"cases/tp-mlp/example1.json"}},
      {{"dp-step", "cases/npy/dp-step-example1.json"},
       32,
       {"cases/npy/dp-step-example1.json", "cases/npy/dp-step-example1.x.npy",
        "cases/npy/dp-step-example1.y.npy"}},
  };
  for (const Want& w : wants) {
    std::vector<std::string> args = w.args;
    args.emplace_back("--timings");
    const auto res = run(args);
    BOOST_TEST_CONTEXT(w.args[1]) {
      BOOST_TEST(res.code == 0);
      BOOST_REQUIRE(!res.err.empty());
      BOOST_TEST(res.err.find('\n') == res.err.size() - 1);  // one line
      const nlohmann::ordered_json j = meshrun::testing::parse_ordered_json(res.err);
      std::vector<std::string> keys;
      for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
      BOOST_TEST(keys ==
                 (std::vector<std::string>{"read_s", "shard_s", "compute_s", "collectives_s",
                                           "write_s", "total_s", "flops", "gflops", "read_MBps"}));
      BOOST_TEST(j["flops"].get<std::uint64_t>() == w.flops);
      for (const auto& [k, v] : j.items()) BOOST_TEST(v.get<double>() >= 0.0, k);
      // The phases are disjoint intervals of the whole run.
      BOOST_TEST(j["read_s"].get<double>() + j["shard_s"].get<double>() +
                     j["write_s"].get<double>() <=
                 j["total_s"].get<double>());
      std::uintmax_t bytes = 0;
      for (const std::string& f : w.files)
        bytes += fs::file_size(meshrun::testing::kSource + "/" + f);
      BOOST_TEST(j["read_MBps"].get<double>() * j["read_s"].get<double>() * 1e6 ==
                     static_cast<double>(bytes),
                 boost::test_tools::tolerance(1e-9));
      BOOST_TEST(j["gflops"].get<double>() * j["compute_s"].get<double>() * 1e9 ==
                     static_cast<double>(w.flops),
                 boost::test_tools::tolerance(1e-9));
    }
  }
}

// --repeat N: the same result as one run, a --trace of one run, and --timings saying how many runs
// its warm medians come from; refused where it would mean nothing.
BOOST_AUTO_TEST_CASE(repeat_runs_warm_steps_with_the_bits_of_one_run) {
  for (const std::vector<std::string>& cmd :
       {std::vector<std::string>{"tp-mlp", "cases/tp-mlp/example1.json"},
        {"mlp-train", "cases/mlp-train/example1.json"},
        {"dp-step", "cases/npy/dp-step-example1.json"},
        {"run", "cases/programs/dp-step.json", "cases/dp-step/example1.json"}}) {
    BOOST_TEST_CONTEXT(cmd[1]) {
      std::vector<std::string> once = cmd, thrice = cmd;
      once.emplace_back("--trace");
      thrice.insert(thrice.end(), {"--trace", "--repeat", "3"});
      const auto a = run(once);
      const auto b = run(thrice);
      BOOST_TEST(a.code == 0);
      BOOST_TEST(b.code == 0);
      BOOST_TEST(!a.out.empty());
      BOOST_TEST(b.out == a.out);
      BOOST_TEST(b.err == a.err);  // the trace: one run's collectives, not three runs'
      std::vector<std::string> timed = cmd;
      timed.insert(timed.end(), {"--repeat", "4", "--timings"});
      const auto t = run(timed);
      BOOST_TEST(t.code == 0);
      BOOST_TEST(t.out == a.out);
      BOOST_REQUIRE(!t.err.empty());
      const nlohmann::ordered_json j = meshrun::testing::parse_ordered_json(t.err);
      BOOST_TEST(j.back().get<int>() == 4);
      BOOST_TEST(std::prev(j.end()).key() == "repeat");
      BOOST_TEST(j["compute_s"].get<double>() > 0.0);
      BOOST_TEST(j["gflops"].get<double>() * j["compute_s"].get<double>() * 1e9 ==
                     j["flops"].get<double>(),
                 boost::test_tools::tolerance(1e-9));
    }
  }
  // --profile: one run's timeline (its phases once, each device's collectives of one run).
  TempDir dir;
  const auto prof = run(
      {"mlp-train", "cases/mlp-train/example1.json", "--repeat", "3", "--profile", dir / "p.json"});
  BOOST_TEST(prof.code == 0);
  const Timeline tl = check_timeline(slurp(dir / "p.json"));
  BOOST_TEST(tl.phases == kPhases);
  BOOST_TEST(tl.collectives.size() == 8u);
  for (const auto& [device, seen] : tl.collectives) {
    BOOST_TEST(seen.size() == 2u, "device " << device);  // psum over model, pmean over data
    for (const SeenCollective& c : seen) BOOST_TEST(c.seq == 1u);
  }
  const auto once = run({"dp-step", "cases/dp-step/example1.json", "--timings"});
  BOOST_TEST(!once.err.empty());
  BOOST_TEST(!has(once.err, "repeat"));  // one run: the line as it always was
  const auto zero = run({"dp-step", "cases/dp-step/example1.json", "--repeat", "0"});
  BOOST_TEST(zero.code == 2);
  BOOST_TEST(has(zero.err, "--repeat: must be from 1 to 100000, got '0'"));
  const auto inject =
      run({"dp-step", "cases/dp-step/example1.json", "--repeat", "2", "--inject", "fail:1@1"});
  BOOST_TEST(inject.code == 2);
  BOOST_TEST(has(inject.err, "meshrun: --repeat: not with --inject"));
  const auto mpi =
      run({"dp-step", "cases/dp-step/example1.json", "--repeat", "2", "--backend", "mpi"});
  BOOST_TEST(mpi.code == 2);
  BOOST_TEST(has(mpi.err, "meshrun: --repeat: in one process only"));
  BOOST_TEST(mpi.out.empty());
}
