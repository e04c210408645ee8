// A live data-parallel run (docs/distributed.md): `serve --ranks N` speaks the run protocol for a group of real ranks
// (Gloo over 127.0.0.1, PyTorch's Reducer). The live groups (a toggle reaching every rank at the same step, the
// trace chunks holding every rank, an Auto-tune, a rank that dies) are E2eRanks's (test_e2e_ranks.cpp); here
// the requests refused before a group starts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "serve_child.h"

namespace {

using Serve = tb::test_util::ServeChild;

// Refused before any rank starts: one line, exit 2.
TEST(ServeRanks, BadRequestsAreOneLineErrors) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--ranks", "2"},                                                      // no model
           {"--model", "mnist_cnn", "--ranks", "2", "--set", "ranks=3"},          // disagreement
           {"--model", "mnist_cnn", "--ranks", "0"}}) {
    Serve s(args);
    close(s.in);
    s.in = -1;
    EXPECT_EQ(s.wait_exit(), 2);
    EXPECT_EQ(std::count(s.err_text.begin(), s.err_text.end(), '\n'), 1) << s.err_text;
    EXPECT_NE(s.err_text.find("error: serve:"), std::string::npos) << s.err_text;
  }
}

}  // namespace
