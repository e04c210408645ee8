// How the gate names a revision (gate/git.h), without git.
#include <gtest/gtest.h>

#include "gate/git.h"

using tb::gate::Commit;
using tb::gate::named;

// A loaded CI round once printed "c2f555c Wider hidden layers" for --candidate c2: the tag was taken for the
// sha's first two digits. A name keeps its brackets whatever the sha; a hash the user gave adds nothing.
TEST(GateGit, ARevisionIsNamedUnlessItWasTheHash) {
  const Commit c{"c2f555c0123456789abcdef0123456789abcdef0", "c2f555c Wider hidden layers"};
  EXPECT_EQ(named(c, "c2"), "c2f555c Wider hidden layers (c2)");
  EXPECT_EQ(named(c, "c2f"), "c2f555c Wider hidden layers (c2f)");
  EXPECT_EQ(named(c, "main"), "c2f555c Wider hidden layers (main)");
  EXPECT_EQ(named(c, "HEAD~1"), "c2f555c Wider hidden layers (HEAD~1)");
  EXPECT_EQ(named(c, "c2f5"), "c2f555c Wider hidden layers");
  EXPECT_EQ(named(c, c.sha), "c2f555c Wider hidden layers");
  EXPECT_EQ(named(c, "c2f556"), "c2f555c Wider hidden layers (c2f556)");
}
