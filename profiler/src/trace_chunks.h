// Cuts a big trace's JSON text into small complete documents, each holding a run of whole traceEvents
// elements (private to the trace reader).
//
// Why: simdjson indexes a whole document before the first value is read, 4 bytes per structural character.
// For a 150 MB trace that index is ~120 MB of fresh memory, page-faulted in once and read back from DRAM:
// half of `analyze` on 1 M events. Parsed in pieces of about a megabyte, the index is allocated once, stays
// in cache and is reused, and the pieces can be parsed while the rest of a gzip stream is still inflating.
//
// How: the cutter scans the text exactly (strings, escapes, nesting; 64 bytes at a time where a block holds no
// backslash) and cuts only between two elements of the traceEvents array, so every piece is valid JSON when
// the file is:
//   object form   {"schemaVersion":1, ..., "traceEvents":[ e0, e1, ..., en ], "traceName": ...}
//     first piece   {"schemaVersion":1, ..., "traceEvents":[ e0 ... ei ]}        (suffix "]}")
//     middle        {"traceEvents":[ ej ... ek ]}                                 (prefix, suffix)
//     last          {"traceEvents":[ em ... en ], "traceName": ...}               (prefix only)
//   array form    [ e0, ..., en ]  ->  [ e0 ... ei ]   [ ej ... ek ]   [ em ... en ]
// A file the cutter cannot place (no traceEvents key found, an odd first byte) is one piece: the whole text.
// A piece that fails to parse sends the reader back to the whole text, so errors name the file's offsets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

namespace tb::prof::chunks {

// Where a scan of JSON text stands.
struct ScanState {
  bool in_string = false;
  bool escaped = false;  // the previous byte was a backslash inside a string
  int64_t depth = 0;     // open objects and arrays
};

// Advances `s` over text[0, n). Exact for any text: brackets inside strings and escaped quotes do not count.
void scan(const char* text, size_t n, ScanState& s);

// prefix + text[begin, end) + suffix is one complete document.
struct Piece {
  std::string_view prefix;
  size_t begin = 0;
  size_t end = 0;
  std::string_view suffix;
};

class Cutter {
 public:
  // `wait_for(n)` blocks until at least n bytes of the text are readable and returns how many are; less
  // than n means the text is complete and that long. For a text already in memory it returns its length.
  using WaitFn = std::function<size_t(size_t)>;
  // target_bytes: the size a piece is cut at (it ends at the first element boundary after it).
  Cutter(const char* text, WaitFn wait_for, size_t target_bytes);

  // The next piece, or nullopt after the last one. Its bytes are readable when it is returned.
  std::optional<Piece> next();
  // Number of pieces handed out so far.
  size_t pieces() const { return pieces_; }

 private:
  enum class Form { Unknown, Object, Array, Whole };
  bool locate_events();              // object form: scans to just after the traceEvents array's '['
  void scan_to(size_t pos);          // scans up to pos, or to the end of a shorter text
  int at(size_t i);                  // byte i once readable, -1 past the end
  std::optional<size_t> next_cut();  // the end of the first element ending after the target, if a ',' follows

  const char* text_;
  WaitFn wait_for_;
  size_t target_;
  Form form_ = Form::Unknown;
  ScanState st_;
  size_t scanned_ = 0;      // st_ holds the state at text_[scanned_]
  size_t avail_ = 0;        // readable bytes known so far
  bool complete_ = false;   // avail_ is the whole text
  int64_t event_depth_ = 0; // depth between two elements of the events array
  size_t piece_begin_ = 0;
  size_t events_begin_ = 0;  // where the first piece's elements start
  size_t pieces_ = 0;
  bool done_ = false;
};

}  // namespace tb::prof::chunks
