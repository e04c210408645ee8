// Trace input bytes (private to the trace importer): a whole file, or a gzip stream inflated once into a
// buffer sized from its trailer, each followed by kBytesPad zero bytes the JSON parser may read past the end.
// Files of 1 MiB and more are mapped (read-only, populated up front) instead of copied: the copy and the page
// faults of a fresh buffer were a third of `analyze` on a 150 MB trace. Big buffers (the inflated text) are
// anonymous mappings with transparent huge pages where the system allows them (fewer page faults).
// A mapped file cut short by another process while it is parsed raises SIGBUS, as with any mapped file.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "profiler/result.h"
#include "profiler/trace.h"

namespace tb::prof::bytes {

inline constexpr size_t kBytesPad = 64;  // >= simdjson's SIMDJSON_PADDING (checked where the parser is)

// Frees a buffer of `bytes` bytes: a mapped file is unmapped, anything else came from allocate().
struct Release {
  size_t bytes = 0;
  bool file_mapping = false;
  void operator()(char* p) const;
};
using Buffer = std::unique_ptr<char, Release>;

// A writable buffer of n bytes, not zero-filled (100+ MB traces), from detail::big_allocate (trace.h).
Buffer allocate(size_t n);

// A trace's bytes with kBytesPad zero bytes after them.
struct FileBytes {
  Buffer data;
  size_t size = 0;
  std::string_view view() const { return {data.get(), size}; }
};

Status read_file(const std::string& path, FileBytes& out, size_t max_bytes);

// A trace's text arriving on a thread of its own into one buffer (huge pages, sized once), so that a reader
// parses the first megabytes while the rest arrives: on two cores the two overlap. Two sources:
// - inflate(): a gzip stream, the buffer sized from its trailer (a 150 MB text inflates in ~0.3 s). Streams
//   it cannot do that way (several members, a trailer that does not match, more than max_bytes) stop early
//   with streamed = false: the caller then uses gunzip(), which handles them.
// - read(): a plain file, read 1 MiB at a time (copying into huge pages beat mapping the file).
class TextStream {
 public:
  // nullptr when the trailer's size is no use for a fixed buffer.
  static std::unique_ptr<TextStream> inflate(std::string_view in, size_t max_bytes);
  // Takes `fd` (closed when done); `size` bytes are read from its start.
  static std::unique_ptr<TextStream> read(int fd, size_t size, std::string path);
  ~TextStream();  // waits for the thread
  TextStream(const TextStream&) = delete;
  TextStream& operator=(const TextStream&) = delete;

  size_t expected_size() const { return cap_ - 1; }
  const char* data() const { return buf_.get(); }
  // Blocks until n bytes are there or the stream ended; returns how many are there (< n: it ended).
  size_t wait_for(size_t n);
  // Waits for the end. `streamed`: the whole text is in the buffer, which `out` then takes (with kBytesPad
  // zero bytes after it). An error is a corrupt stream or a failed read (as gunzip / read_file say it).
  Status finish(FileBytes& out, bool& streamed);

 private:
  explicit TextStream(size_t cap);
  void publish(size_t produced);
  void end(Status status, bool streamed);
  void run_inflate(std::string_view in);
  void run_read(int fd, std::string path);

  Buffer buf_;
  size_t cap_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  size_t produced_ = 0;  // guarded by mu_
  bool ended_ = false;   // guarded by mu_
  bool streamed_ = false;
  Status status_ = Status::Ok();
};
bool is_gzip(std::string_view b);
Status gunzip(std::string_view in, FileBytes& out, size_t max_bytes);

}  // namespace tb::prof::bytes
