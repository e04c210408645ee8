// The engine's side of the run protocol (docs/protocol.md) for `tunebench-cli serve`: JSON lines on
// stdin/stdout, "v" stamped by client/protocol.h. stdout carries only protocol lines; logs go to stderr.
//
// Threads: the calling thread trains and applies the parent's messages at step boundaries; a reader thread
// parses stdin into a queue. `stop` must be answered within 2 s even when one step takes longer (a ResNet-50
// step on a CPU does): the reader arms a watchdog that sends `done` itself and exits if the trainer has not
// finished its step by then.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "engine/session.h"

namespace tb::engine {

struct ServeOptions {
  SessionOptions session;  // an empty model: wait for the parent's `start`
  int64_t steps = 0;       // 0: until `stop` or the end of stdin
  int64_t trace_every = 50;
  std::string trace_dir;   // "" = no tracing; else it exists
  std::string report_dir;  // a live tune's report files ("" = the trace dir, else none)
  bool inline_files = false;  // trace chunks and reports travel in the stream (a remote GUI)
  int dist_timeout_s = 0;
  // Rank 0 of a group (session.dist enabled, already joined) whose rendezvous port was taken meanwhile exits
  // with port_in_use_exit before its hello, so that its launcher starts the group again on another port.
  std::function<bool(const char*)> port_in_use;
  int port_in_use_exit = 75;
};

// Serves one run until `stop`, the end of stdin, `steps` or an error. Ends the process with its exit code
// (std::_Exit: the reader thread may still block on stdin), except for the port-in-use case, which returns.
int serve(ServeOptions o);

}  // namespace tb::engine
