#include "trace_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace tb::prof::bytes {

namespace {

constexpr size_t kMapMin = size_t(1) << 20;  // smaller files are read: mapping costs more than it saves
size_t page_size() {
  static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return p;
}

}  // namespace

void Release::operator()(char* p) const {
  if (!p) return;
  if (file_mapping) munmap(p, bytes);
  else detail::big_deallocate(p, bytes);
}

Buffer allocate(size_t n) { return Buffer(static_cast<char*>(detail::big_allocate(n)), Release{n, false}); }

Status read_file(const std::string& path, FileBytes& out, size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{"cannot open '" + path + "': " + std::strerror(errno)};
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (fstat(fd, &st) != 0) return Error{"cannot read '" + path + "': " + std::strerror(errno)};
  if (S_ISDIR(st.st_mode)) return Error{"cannot read '" + path + "': it is a directory"};
  if (!S_ISREG(st.st_mode)) return Error{"cannot read '" + path + "': not a regular file"};
  const size_t size = static_cast<size_t>(st.st_size);
  if (max_bytes && size > max_bytes)
    return Error{"'" + path + "' is too large (" + std::to_string(size) + " bytes, limit " + std::to_string(max_bytes) + ")"};
  if (size >= kMapMin) {
    // Reserve the file plus its padding as zero pages, then map the file over the start: the rest of the
    // file's last page reads as zeros (POSIX), and so do the pages after it.
    const size_t len = (size + kBytesPad + page_size() - 1) / page_size() * page_size();
    void* base = mmap(nullptr, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base != MAP_FAILED) {
      Buffer keep(static_cast<char*>(base), Release{len, true});
      if (mmap(base, size, PROT_READ, MAP_PRIVATE | MAP_FIXED | MAP_POPULATE, fd, 0) != MAP_FAILED) {
        out.data = std::move(keep);
        out.size = size;
        return Status::Ok();
      }
    }
    // Mapping refused (an odd file system): read it instead.
  }
  out.size = size;
  out.data = allocate(out.size + kBytesPad);
  std::memset(out.data.get() + out.size, 0, kBytesPad);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(fd, out.data.get() + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error{"cannot read '" + path + "': " + (n < 0 ? std::strerror(errno) : "the file got shorter")};
    done += static_cast<size_t>(n);
  }
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
  out.data = allocate(cap + kBytesPad);
  out.size = 0;
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  size_t remaining = in.size();
  for (;;) {
    if (out.size == cap) {
      if (max_bytes && out.size > max_bytes)
        return Error{"decompressed trace exceeds the limit of " + std::to_string(max_bytes) + " bytes"};
      size_t grown = cap * 2;
      if (max_bytes) grown = std::min(grown, max_bytes + 1);
      Buffer bigger = allocate(grown + kBytesPad);
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

namespace {
// The trailer's ISIZE: the uncompressed size mod 2^32 (of the last member).
size_t gzip_isize(std::string_view in) {
  if (in.size() < 18) return 0;
  const auto* t = reinterpret_cast<const unsigned char*>(in.data() + in.size() - 4);
  return size_t(t[0]) | size_t(t[1]) << 8 | size_t(t[2]) << 16 | size_t(t[3]) << 24;
}
}  // namespace

TextStream::TextStream(size_t cap) : buf_(allocate(cap + kBytesPad)), cap_(cap) {}

std::unique_ptr<TextStream> TextStream::inflate(std::string_view in, size_t max_bytes) {
  const size_t isize = gzip_isize(in);
  if (isize < in.size() / 2 || (max_bytes && isize > max_bytes)) return nullptr;
  std::unique_ptr<TextStream> s(new TextStream(isize + 1));  // +1: the end is seen before the buffer is full
  TextStream* self = s.get();
  s->thread_ = std::thread([self, in] { self->run_inflate(in); });
  return s;
}

std::unique_ptr<TextStream> TextStream::read(int fd, size_t size, std::string path) {
  std::unique_ptr<TextStream> s(new TextStream(size + 1));
  TextStream* self = s.get();
  s->thread_ = std::thread([self, fd, p = std::move(path)]() mutable { self->run_read(fd, std::move(p)); });
  return s;
}

TextStream::~TextStream() {
  if (thread_.joinable()) thread_.join();
}

void TextStream::publish(size_t produced) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    produced_ = produced;
  }
  cv_.notify_all();
}

void TextStream::end(Status status, bool streamed) {
  std::lock_guard<std::mutex> lock(mu_);
  streamed_ = streamed && status;
  status_ = std::move(status);
  ended_ = true;
  cv_.notify_all();
}

constexpr size_t kStreamStep = size_t(1) << 20;  // progress is published every MiB

void TextStream::run_read(int fd, std::string path) {
  size_t produced = 0;
  Status status = Status::Ok();
  const size_t size = cap_ - 1;
  while (produced < size) {
    const ssize_t n = ::read(fd, buf_.get() + produced, std::min(size - produced, kStreamStep));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      status = Error{"cannot read '" + path + "': " + (n < 0 ? std::strerror(errno) : "the file got shorter")};
      break;
    }
    produced += static_cast<size_t>(n);
    publish(produced);
  }
  ::close(fd);
  end(std::move(status), true);
}

void TextStream::run_inflate(std::string_view in) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return end(Error{"corrupt gzip: zlib init failed"}, false);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  size_t remaining = in.size(), produced = 0;
  bool streamed = false;
  Status status = Status::Ok();
  for (;;) {
    const size_t room = std::min(cap_ - produced, kStreamStep);
    if (room == 0) break;  // bigger than the trailer said: gunzip grows its buffer
    const uInt avail_in = static_cast<uInt>(std::min<size_t>(remaining, UINT32_MAX / 2));
    zs.avail_in = avail_in;
    zs.next_out = reinterpret_cast<Bytef*>(buf_.get() + produced);
    zs.avail_out = static_cast<uInt>(room);
    const int rc = ::inflate(&zs, Z_NO_FLUSH);
    produced += room - zs.avail_out;
    remaining -= avail_in - zs.avail_in;
    publish(produced);
    if (rc == Z_STREAM_END) {
      streamed = remaining == 0;  // another member follows: gunzip reads those
      break;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      status = Error{std::string("corrupt gzip: ") + (zs.msg ? zs.msg : "inflate failed"),
                     static_cast<int64_t>(in.size() - remaining)};
      break;
    }
    if (rc == Z_BUF_ERROR && remaining == 0 && zs.avail_out > 0) {
      status = Error{"corrupt gzip: truncated stream", static_cast<int64_t>(in.size())};
      break;
    }
  }
  inflateEnd(&zs);
  end(std::move(status), streamed);
}

size_t TextStream::wait_for(size_t n) {
  std::unique_lock<std::mutex> lock(mu_);
  // No timeout: the thread always ends (a finite input; zlib and read make progress or fail).
  cv_.wait(lock, [&] { return produced_ >= n || ended_; });
  return produced_;
}

Status TextStream::finish(FileBytes& out, bool& streamed) {
  if (thread_.joinable()) thread_.join();
  streamed = streamed_;
  if (!status_) return status_;
  if (streamed) {
    std::memset(buf_.get() + produced_, 0, kBytesPad);
    out.data = std::move(buf_);
    out.size = produced_;
  }
  return Status::Ok();
}

}  // namespace tb::prof::bytes
