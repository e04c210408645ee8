// The rhythm of a script's epochs in its steps: how many steps a pass of its training loader takes (the steps'
// `loader_pass`, docs/protocol.md), and what a window of steps must hold so that its rhythm is no noise.
//
// A pass's first steps wait for its loader to start again (the workers of a DataLoader without
// persistent_workers are spawned for every pass: an ImageFolder trainer's first step of each 15-step epoch took
// 2.2 s against 0.5 s), and the validation after it is between steps, in no window. A window of 11 steps then
// held one such step or none, and the pairs of a tune varied by ~50% on a quiet machine: the script's rhythm,
// not the machine's noise. So:
//  * short passes (whole passes within twice the window asked for): a window is that many whole passes' steps,
//    wherever it starts, so every window holds as many pass starts - what the run pays per pass is measured,
//    the same share in every window (persistent_workers's gain among it);
//  * long passes: a pass's first step is left out of the windows (its share of a pass is under 1 / (2 x the
//    window)), said as such;
//  * before a pass has been seen whole, windows are as asked - unless the launcher said a pass's length (a
//    DataLoader's len(), the steps' `loader_len`): then it is known from the first step. A tune's live changes
//    re-create the loader's iterator, which starts the pass again, so a long pass of a script whose loader is
//    being tuned was never seen whole (a 500-step epoch over a whole tune); a pass seen whole and shorter than
//    the length said (a loop that breaks early) is the one the steps make.
#pragma once

#include <cstdint>
#include <string>

namespace tb::measure {

class PassRhythm {
 public:
  // One step, in the order they came (its `loader_pass`). Returns whether it began a new pass (its first step
  // after a pass ended), which a window of long passes leaves out.
  bool step(int64_t loader_pass, int64_t loader_len = 0);
  // Forget the passes seen: what makes a pass changed (another batch size).
  void reset();
  // A new process of the same script: its steps start again at its first pass; the length stays known.
  void restart();
  // Steps in a pass: the last whole pass seen, or the length said when none was seen or the one seen was longer
  // (0: neither).
  int pass_steps() const;
  // The steps a window asked for `steps` measures: a whole number of short passes, or `steps`.
  int window_steps(int steps) const;
  // Whether a window of `steps` leaves out the first steps of passes (long passes).
  bool leaves_out_pass_starts(int steps) const;
  // What windows of `steps` do, in words ("" while no pass has been seen whole, or a pass is one step).
  std::string said(int steps) const;

 private:
  int64_t pass_ = -1;   // the pass of the last step
  int steps_in_ = 0;    // steps of that pass so far
  bool whole_ = false;  // that pass began after the first step seen (its count is whole when it ends)
  int pass_steps_ = 0;
  int said_steps_ = 0;  // the pass's length as the launcher said it (0: not said)
};

}  // namespace tb::measure
