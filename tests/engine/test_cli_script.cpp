// A user's script, unmodified, through the CLI (run --script, tune --script) and the launcher package
// (python/tunebench): the example of examples/train_folder.py on a tiny image folder made here.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/make_dataset.h"

namespace {

struct Out {
  int code = -1;
  std::string out, err;
};

Out cli(const std::string& args) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string o = (dir / ("tb_cli_script_" + std::to_string(::getpid()))).string(), e = o + ".err";
  Out r;
  const int status = std::system((std::string(TB_CLI_PATH) + " " + args + " >" + o + " 2>" + e).c_str());
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream fo(o), fe(e);
  r.out.assign(std::istreambuf_iterator<char>(fo), {});
  r.err.assign(std::istreambuf_iterator<char>(fe), {});
  std::filesystem::remove(o);
  std::filesystem::remove(e);
  return r;
}

class CliScript : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = (std::filesystem::temp_directory_path() / ("tb_script_data_" + std::to_string(::getpid()))).string();
    tb::engine::ImageFolderSpec spec;
    spec.out = dir_ + "/images";
    spec.images = 96;
    spec.width = 96;
    spec.height = 72;
    spec.classes = 3;
    tb::engine::generate_image_folder(spec);
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  static std::string example() { return std::string(TB_SOURCE_DIR) + "/examples/train_folder.py"; }
  static std::string data() { return dir_ + "/images"; }
  static std::string tmp(const std::string& name) { return dir_ + "/" + name; }
  static std::string dir_;
};
std::string CliScript::dir_;

TEST_F(CliScript, RunsTheExampleUnmodifiedAndReadsWorkersBack) {
  const std::string js = tmp("run.json");
  Out r = cli("run --script " + example() + " --steps 12 --set workers=2 --json " + js + " -- --data " + data() +
              " --epochs 20 --batch-size 8");
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream f(js);
  auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["config"]["workers"], "2");
  EXPECT_EQ(j["steps"].size(), 12u);
  EXPECT_EQ(j["steps"][5]["samples"], 8);
  EXPECT_GT(j["throughput"]["samples_per_s"].get<double>(), 0);
  EXPECT_EQ(j["done"]["reason"], "steps");
  // Where the DataLoader was made, and what it really ran with: the line a report tells the user to edit.
  bool loader = false;
  for (const auto& s : j["source"])
    if (s["kind"] == "dataloader") {
      loader = true;
      EXPECT_NE(s["code"].get<std::string>().find("DataLoader(ds, batch_size=args.batch_size, shuffle=True)"),
                std::string::npos);
      EXPECT_EQ(s["effective"]["num_workers"], 2);
    }
  EXPECT_TRUE(loader);
  EXPECT_NE(r.err.find("  | epoch 0 step 0 loss"), std::string::npos);  // the script's own prints, marked
}

TEST_F(CliScript, BadInputIsOneClearLine) {
  Out missing = cli("run --script /no/such/train.py --steps 2");
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(missing.err, "tunebench-cli: error: script not found: /no/such/train.py\n");
  Out knob = cli("run --script " + example() + " --steps 2 --set batch_size=64 -- --data " + data());
  EXPECT_NE(knob.code, 0);
  EXPECT_NE(knob.err.find("does not apply to scripts"), std::string::npos) << knob.err;
  const std::string not_training = tmp("hello.py");
  std::ofstream(not_training) << "print('hello')\n";
  Out nt = cli("run --script " + not_training + " --steps 2");
  EXPECT_NE(nt.code, 0);
  EXPECT_NE(nt.err.find("without an optimizer step"), std::string::npos) << nt.err;
}

TEST_F(CliScript, AnExceptionKeepsTheStepsAndTheTraceback) {
  const std::string bad = tmp("bad.py");
  {
    std::ifstream in(example());
    std::string text((std::istreambuf_iterator<char>(in)), {});
    const std::string at = "            step += 1\n";
    text.replace(text.find(at), at.size(), at + "            if step == 4: raise ValueError('the data ran out')\n");
    std::ofstream(bad) << text;
  }
  const std::string js = tmp("bad.json");
  Out r = cli("run --script " + bad + " --json " + js + " -- --data " + data() + " --batch-size 8");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("tunebench-cli: error: ValueError: the data ran out"), std::string::npos) << r.err;
  std::ifstream f(js);
  auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["steps"].size(), 4u);
  EXPECT_NE(j["traceback"].get<std::string>().find("Traceback"), std::string::npos);
}

TEST_F(CliScript, TunesTheExampleAndWritesTheSameDocument) {
  const std::string js = tmp("tune.json");
  Out r = cli("tune --script " + example() + " --budget 40 --knobs workers,zero_grad_none --json " + js +
              " -- --data " + data() + " --epochs 1000 --batch-size 8");
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream f(js);
  auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["format"], "tunebench-tune");
  EXPECT_NE(j["environment"]["model"].get<std::string>().find("script:"), std::string::npos);
  ASSERT_GE(j["trials"].size(), 2u);
  EXPECT_EQ(j["trials"][0]["phase"], "noise floor");
  bool workers = false;
  for (const auto& t : j["trials"]) workers |= t["knob"] == "workers";
  EXPECT_TRUE(workers);
  EXPECT_TRUE(j["noise"].contains("verdict"));
}

}  // namespace
