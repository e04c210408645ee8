// Trace input bytes (private to the trace importer): a whole file, or a gzip stream inflated once into a
// buffer sized from its trailer, each followed by kBytesPad zero bytes the JSON parser may read past the end.
// Files of 1 MiB and more are mapped (read-only, populated up front) instead of copied: the copy and the page
// faults of a fresh buffer were a third of `analyze` on a 150 MB trace. Big buffers (the inflated text) are
// anonymous mappings with transparent huge pages where the system allows them (fewer page faults).
// A mapped file cut short by another process while it is parsed raises SIGBUS, as with any mapped file.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

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
bool is_gzip(std::string_view b);
Status gunzip(std::string_view in, FileBytes& out, size_t max_bytes);

}  // namespace tb::prof::bytes
