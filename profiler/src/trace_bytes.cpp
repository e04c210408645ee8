#include "trace_bytes.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace tb::prof::bytes {

Status read_file(const std::string& path, FileBytes& out, size_t max_bytes) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return Error{"cannot open '" + path + "': " + std::strerror(errno)};
  struct Closer {
    FILE* f;
    ~Closer() { std::fclose(f); }
  } closer{f};
  struct stat st {};
  if (fstat(fileno(f), &st) != 0) return Error{"cannot read '" + path + "': " + std::strerror(errno)};
  if (S_ISDIR(st.st_mode)) return Error{"cannot read '" + path + "': it is a directory"};
  if (!S_ISREG(st.st_mode)) return Error{"cannot read '" + path + "': not a regular file"};
  if (std::fseek(f, 0, SEEK_END) != 0) return Error{"cannot read '" + path + "': not a regular file"};
  const long size = std::ftell(f);
  if (size < 0) return Error{"cannot read '" + path + "': " + std::strerror(errno)};
  if (max_bytes && static_cast<size_t>(size) > max_bytes)
    return Error{"'" + path + "' is too large (" + std::to_string(size) + " bytes, limit " + std::to_string(max_bytes) + ")"};
  std::fseek(f, 0, SEEK_SET);
  out.size = static_cast<size_t>(size);
  out.data = std::make_unique_for_overwrite<char[]>(out.size + kBytesPad);
  std::memset(out.data.get() + out.size, 0, kBytesPad);
  if (size > 0 && std::fread(out.data.get(), 1, out.size, f) != out.size)
    return Error{"cannot read '" + path + "': " + (std::ferror(f) ? std::strerror(errno) : "not a regular file")};
  return Status::Ok();
}

bool is_gzip(std::string_view b) {
  return b.size() >= 2 && static_cast<unsigned char>(b[0]) == 0x1f && static_cast<unsigned char>(b[1]) == 0x8b;
}

// Inflates into a buffer sized once from the gzip trailer (ISIZE, the uncompressed size mod 2^32) and never
// zero-filled: growing a std::string chunk by chunk cost more (zero-fill, copies, page faults) than inflate.
Status gunzip(std::string_view in, FileBytes& out, size_t max_bytes) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return Error{"corrupt gzip: zlib init failed"};
  struct End {
    z_stream* z;
    ~End() { inflateEnd(z); }
  } end{&zs};
  size_t cap = in.size() * 4 + (size_t(1) << 16);
  if (in.size() >= 18) {
    const auto* t = reinterpret_cast<const unsigned char*>(in.data() + in.size() - 4);
    const size_t isize = size_t(t[0]) | size_t(t[1]) << 8 | size_t(t[2]) << 16 | size_t(t[3]) << 24;
    if (isize >= in.size() / 2) cap = isize + 1;  // +1: reaching the end is seen before the buffer is full
  }
  if (max_bytes) cap = std::min(cap, max_bytes + 1);
  out.data = std::make_unique_for_overwrite<char[]>(cap + kBytesPad);
  out.size = 0;
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  size_t remaining = in.size();
  for (;;) {
    if (out.size == cap) {
      if (max_bytes && out.size > max_bytes)
        return Error{"decompressed trace exceeds the limit of " + std::to_string(max_bytes) + " bytes"};
      size_t grown = cap * 2;
      if (max_bytes) grown = std::min(grown, max_bytes + 1);
      auto bigger = std::make_unique_for_overwrite<char[]>(grown + kBytesPad);
      std::memcpy(bigger.get(), out.data.get(), out.size);
      out.data = std::move(bigger);
      cap = grown;
    }
    const uInt avail_in = static_cast<uInt>(std::min<size_t>(remaining, UINT32_MAX / 2));
    zs.avail_in = avail_in;
    zs.next_out = reinterpret_cast<Bytef*>(out.data.get() + out.size);
    zs.avail_out = static_cast<uInt>(std::min<size_t>(cap - out.size, UINT32_MAX / 2));
    const uInt avail_out0 = zs.avail_out;
    const int rc = inflate(&zs, Z_NO_FLUSH);
    out.size += avail_out0 - zs.avail_out;
    remaining -= avail_in - zs.avail_in;
    if (max_bytes && out.size > max_bytes)
      return Error{"decompressed trace exceeds the limit of " + std::to_string(max_bytes) + " bytes"};
    if (rc == Z_STREAM_END) {
      // Concatenated gzip members (allowed by the format): continue with the next one.
      if (remaining > 0 && is_gzip(std::string_view(reinterpret_cast<const char*>(zs.next_in), remaining))) {
        inflateReset(&zs);
        continue;
      }
      break;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      return Error{std::string("corrupt gzip: ") + (zs.msg ? zs.msg : "inflate failed"),
                   static_cast<int64_t>(in.size() - remaining)};
    }
    if (rc == Z_BUF_ERROR && remaining == 0 && zs.avail_out > 0)
      return Error{"corrupt gzip: truncated stream", static_cast<int64_t>(in.size())};
  }
  std::memset(out.data.get() + out.size, 0, kBytesPad);
  return Status::Ok();
}

}  // namespace tb::prof::bytes
