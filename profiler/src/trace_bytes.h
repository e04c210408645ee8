// Trace input bytes (private to the trace importer): a whole file, or a gzip stream inflated once into a
// buffer sized from its trailer, each followed by kBytesPad zero bytes the JSON parser may read past the end.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "profiler/result.h"

namespace tb::prof::bytes {

inline constexpr size_t kBytesPad = 64;  // >= simdjson's SIMDJSON_PADDING (checked where the parser is)

// A trace's bytes with kBytesPad zero bytes after them (not zero-filled first: 100+ MB traces).
struct FileBytes {
  std::unique_ptr<char[]> data;
  size_t size = 0;
  std::string_view view() const { return {data.get(), size}; }
};

Status read_file(const std::string& path, FileBytes& out, size_t max_bytes);
bool is_gzip(std::string_view b);
Status gunzip(std::string_view in, FileBytes& out, size_t max_bytes);

}  // namespace tb::prof::bytes
