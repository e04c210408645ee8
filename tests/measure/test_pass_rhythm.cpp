// A script's epochs in its steps (measure/pass_rhythm.h): the pass length read from the steps' loader_pass, and
// the windows that hold whole passes or leave the passes' first steps out.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "measure/pass_rhythm.h"

using tb::measure::PassRhythm;

namespace {

// Steps of `passes` passes of `per_pass` steps, from pass `first` on.
std::vector<int64_t> passes_of(int passes, int per_pass, int first = 0) {
  std::vector<int64_t> out;
  for (int p = first; p < first + passes; ++p)
    for (int i = 0; i < per_pass; ++i) out.push_back(p);
  return out;
}

}  // namespace

TEST(PassRhythm, APassIsKnownOnceSeenWhole) {
  PassRhythm r;
  std::vector<bool> starts;
  for (int64_t p : passes_of(3, 15)) starts.push_back(r.step(p));
  EXPECT_EQ(r.pass_steps(), 15);
  // The first step of every pass but the run's first (which no earlier step ends) is said to begin one.
  for (size_t i = 0; i < starts.size(); ++i) EXPECT_EQ(starts[i], i == 15 || i == 30) << i;
}

TEST(PassRhythm, APassSeenFromItsMiddleIsNoLength) {
  PassRhythm r;
  for (int i = 0; i < 7; ++i) r.step(4);  // joined pass 4 late (a live script already running)
  EXPECT_EQ(r.pass_steps(), 0);
  for (int i = 0; i < 9; ++i) r.step(5);
  EXPECT_EQ(r.pass_steps(), 0);  // pass 4 was not seen whole
  r.step(6);
  EXPECT_EQ(r.pass_steps(), 9);
  r.step(8);  // pass 7 made no step here: pass 8's start is not known to be its start
  for (int i = 0; i < 3; ++i) r.step(9);
  EXPECT_EQ(r.pass_steps(), 9);  // pass 8 (1 step seen) was not whole
}

TEST(PassRhythm, ShortPassesMakeWindowsOfWholePasses) {
  PassRhythm r;
  EXPECT_EQ(r.window_steps(11), 11);  // nothing seen: as asked
  EXPECT_EQ(r.said(11), "");
  for (int64_t p : passes_of(2, 15)) r.step(p);
  r.step(2);
  EXPECT_EQ(r.window_steps(11), 15);  // one pass
  EXPECT_EQ(r.window_steps(15), 15);
  EXPECT_EQ(r.window_steps(16), 30);  // two passes: within twice what was asked
  EXPECT_FALSE(r.leaves_out_pass_starts(11));
  EXPECT_NE(r.said(11).find("windows of whole passes: 15 steps, 1 pass"), std::string::npos) << r.said(11);
  PassRhythm shorter;
  for (int64_t p : passes_of(3, 4)) shorter.step(p);
  EXPECT_EQ(shorter.window_steps(11), 12);  // three passes of 4
  // Every window of whole passes holds as many pass starts, wherever it starts.
  for (int start = 0; start < 4; ++start) {
    int starts = 0;
    for (int i = start; i < start + shorter.window_steps(11); ++i) starts += i % 4 == 0;
    EXPECT_EQ(starts, 3) << start;
  }
}

TEST(PassRhythm, LongPassesLeaveTheirFirstStepOut) {
  PassRhythm r;
  for (int64_t p : passes_of(2, 100)) r.step(p);
  r.step(2);
  EXPECT_EQ(r.window_steps(11), 11);
  EXPECT_TRUE(r.leaves_out_pass_starts(11));
  EXPECT_NE(r.said(11).find("first step of each pass is left out"), std::string::npos) << r.said(11);
  EXPECT_EQ(r.window_steps(60), 100);  // a long window holds the pass whole instead
  EXPECT_FALSE(r.leaves_out_pass_starts(60));
  r.reset();
  EXPECT_EQ(r.pass_steps(), 0);
  EXPECT_EQ(r.window_steps(11), 11);
}

TEST(PassRhythm, ALoopWithoutPassesChangesNothing) {
  PassRhythm r;
  for (int i = 0; i < 500; ++i) r.step(0);  // no DataLoader: every step's loader_pass is 0
  EXPECT_EQ(r.pass_steps(), 0);
  EXPECT_EQ(r.window_steps(11), 11);
  EXPECT_FALSE(r.leaves_out_pass_starts(11));
  PassRhythm one;
  for (int p = 0; p < 10; ++p) one.step(p);  // a pass of one step (a full-batch loader)
  EXPECT_EQ(one.window_steps(11), 11);
  EXPECT_EQ(one.said(11), "");
}

TEST(PassRhythm, APassLengthSaidIsKnownFromTheFirstStep) {
  // A 500-step epoch whose iterator the tune re-creates every window: never seen whole, known from len().
  PassRhythm r;
  for (int i = 0; i < 40; ++i) r.step(0, 500);
  EXPECT_EQ(r.pass_steps(), 500);
  EXPECT_TRUE(r.leaves_out_pass_starts(30));
  EXPECT_NE(r.said(30).find("500 steps a pass"), std::string::npos) << r.said(30);
  // Seen whole and longer than said (the tune's re-created iterators started it again): the length said.
  PassRhythm again;
  for (int64_t p : passes_of(2, 620)) again.step(p, 500);
  EXPECT_EQ(again.pass_steps(), 500);
  // Seen whole and shorter (a loop that breaks after 100 steps): the steps' own.
  PassRhythm early;
  for (int64_t p : passes_of(3, 100)) early.step(p, 500);
  EXPECT_EQ(early.pass_steps(), 100);
  // Another batch size: the length said before is forgotten until the steps say the new one.
  r.reset();
  EXPECT_EQ(r.pass_steps(), 0);
  r.step(0, 250);
  EXPECT_EQ(r.pass_steps(), 250);
  // Nothing said (an IterableDataset, no loader): as before.
  PassRhythm none;
  for (int i = 0; i < 40; ++i) none.step(0, 0);
  EXPECT_EQ(none.pass_steps(), 0);
}
