// The run protocol's C++ side (client/protocol.h): what a serve writes and how it reads its parent.
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <thread>

#include "client/protocol.h"

using namespace tb::client::protocol;

namespace {
// Everything written to a Channel over a temporary file, one parsed object per line.
std::vector<nlohmann::json> lines_of(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::vector<nlohmann::json> out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, f)) out.push_back(nlohmann::json::parse(buf));
  return out;
}
}  // namespace

TEST(Protocol, EveryMessageCarriesTheVersionAndDoneIsTheLast) {
  std::FILE* f = std::tmpfile();
  ASSERT_TRUE(f);
  Channel out(f);
  out.send({{"type", "hello"}});
  out.warning("w");
  EXPECT_TRUE(out.send_done({{"steps", 3}}));
  EXPECT_FALSE(out.send_done({{"steps", 4}}));  // a watchdog's late done
  out.send({{"type", "step"}});                 // nothing after done
  const auto l = lines_of(f);
  ASSERT_EQ(l.size(), 3u);
  for (const auto& m : l) EXPECT_EQ(m.at("v"), kVersion);
  EXPECT_EQ(l[1].at("type"), "warning");
  EXPECT_EQ(l[2].at("type"), "done");
  EXPECT_EQ(l[2].at("summary").at("steps"), 3);
  std::fclose(f);
}

TEST(Protocol, TheReaderQueuesMessagesAnswersGarbageAndStopsAtStopOrTheEnd) {
  std::FILE* f = std::tmpfile();
  ASSERT_TRUE(f);
  Channel out(f);
  Inbox inbox;
  int stops = 0;
  std::istringstream in("{\"type\": \"set\", \"knob\": \"amp\", \"value\": \"bf16\"}\n\n"
                        "not json\n[1, 2]\n{\"type\": 3}\n"
                        "{\"type\": \"stop\"}\n{\"type\": \"trace\", \"action\": \"stop\"}\n");
  read_messages(in, out, inbox, [&] { ++stops; });
  EXPECT_EQ(stops, 1);
  EXPECT_TRUE(inbox.stop);
  EXPECT_TRUE(inbox.eof);
  const auto queued = inbox.drain();
  ASSERT_EQ(queued.size(), 2u);  // stop is a flag, not a message; the blank line is nothing
  EXPECT_EQ(queued[0].at("knob"), "amp");
  EXPECT_EQ(queued[1].at("type"), "trace");
  const auto answers = lines_of(f);
  ASSERT_EQ(answers.size(), 3u);  // one recoverable error per bad line
  for (const auto& a : answers) {
    EXPECT_EQ(a.at("type"), "error");
    EXPECT_TRUE(a.at("recoverable").get<bool>());
  }
  EXPECT_NE(answers[0].at("message").get<std::string>().find("not json"), std::string::npos);
  std::fclose(f);
}

TEST(Protocol, WaitNextReturnsAMessageOrNullAtStop) {
  Inbox inbox;
  std::thread t([&] { inbox.push({{"type", "start"}, {"model", "mnist_cnn"}}); });
  const auto m = inbox.wait_next();
  t.join();
  EXPECT_EQ(m.at("model"), "mnist_cnn");
  std::thread s([&] {
    inbox.stop = true;
    inbox.cv.notify_all();
  });
  EXPECT_TRUE(inbox.wait_next().is_null());
  s.join();
}

TEST(Protocol, KnobValuesInTheCatalogsWords) {
  EXPECT_EQ(value_text(true), "on");
  EXPECT_EQ(value_text(false), "off");
  EXPECT_EQ(value_text(4), "4");
  EXPECT_EQ(value_text(8.0), "8");
  EXPECT_EQ(value_text("bf16"), "bf16");
}
