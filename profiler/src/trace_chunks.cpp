#include "trace_chunks.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tb::prof::chunks {
namespace {

constexpr std::string_view kEventsKey = "\"traceEvents\"";
constexpr std::string_view kObjectPrefix = "{\"traceEvents\":[";

void scan_bytes(const char* p, size_t n, ScanState& s) {
  for (size_t i = 0; i < n; ++i) {
    const char c = p[i];
    if (s.in_string) {
      if (s.escaped) s.escaped = false;
      else if (c == '\\') s.escaped = true;
      else if (c == '"') s.in_string = false;
      continue;
    }
    switch (c) {
      case '"': s.in_string = true; break;
      case '{': case '[': ++s.depth; break;
      case '}': case ']': --s.depth; break;
      default: break;
    }
  }
}

// Bit i = xor of bits 0..i: set from an opening quote up to (not including) its closing quote.
inline uint64_t prefix_xor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

// Outside-string openers and closers of one 64-byte block, from its masks; false when the block needs the
// byte loop (a backslash in it or carried into it: escapes are rare in traces).
struct BlockMasks {
  uint64_t open, close;
};
inline bool block_masks(uint64_t quote, uint64_t backslash, uint64_t open, uint64_t close, ScanState& s,
                        BlockMasks& out) {
  if (s.escaped || backslash != 0) return false;
  uint64_t inside = prefix_xor(quote);
  if (s.in_string) inside = ~inside;
  out = {open & ~inside, close & ~inside};
  s.in_string = (inside >> 63) != 0;
  return true;
}

#if defined(__x86_64__)
// The block loop twice: AVX2 + POPCNT where the CPU has them (checked at run time), SSE2 everywhere else.
__attribute__((target("avx2"))) inline uint64_t eq_avx2(__m256i a, __m256i b, char c) {
  const __m256i k = _mm256_set1_epi8(c);
  return static_cast<uint64_t>(static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, k)))) |
         static_cast<uint64_t>(static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, k)))) << 32;
}

__attribute__((target("avx2,popcnt"))) size_t scan_avx2(const char* p, size_t n, ScanState& s) {
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 32));
    BlockMasks m;
    if (block_masks(eq_avx2(a, b, '"'), eq_avx2(a, b, '\\'), eq_avx2(a, b, '{') | eq_avx2(a, b, '['),
                    eq_avx2(a, b, '}') | eq_avx2(a, b, ']'), s, m))
      s.depth += __builtin_popcountll(m.open) - __builtin_popcountll(m.close);
    else
      scan_bytes(p + i, 64, s);
  }
  return i;
}
#endif

#if defined(__SSE2__)
inline uint64_t eq_sse2(const __m128i (&v)[4], char c) {
  const __m128i k = _mm_set1_epi8(c);
  uint64_t m = 0;
  for (int j = 0; j < 4; ++j)
    m |= static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v[j], k)))) << (16 * j);
  return m;
}
#endif

size_t scan_sse2(const char* p, size_t n, ScanState& s) {
  size_t i = 0;
#if defined(__SSE2__)
  for (; i + 64 <= n; i += 64) {
    __m128i v[4];
    for (int j = 0; j < 4; ++j) v[j] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + 16 * j));
    BlockMasks m;
    if (block_masks(eq_sse2(v, '"'), eq_sse2(v, '\\'), eq_sse2(v, '{') | eq_sse2(v, '['),
                    eq_sse2(v, '}') | eq_sse2(v, ']'), s, m))
      s.depth += __builtin_popcountll(m.open) - __builtin_popcountll(m.close);
    else
      scan_bytes(p + i, 64, s);
  }
#endif
  return i;
}

bool is_space(int c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

}  // namespace

void scan(const char* text, size_t n, ScanState& s) {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
  const size_t i = avx2 ? scan_avx2(text, n, s) : scan_sse2(text, n, s);
#else
  const size_t i = scan_sse2(text, n, s);
#endif
  scan_bytes(text + i, n - i, s);
}

Cutter::Cutter(const char* text, WaitFn wait_for, size_t target_bytes)
    : text_(text), wait_for_(std::move(wait_for)), target_(std::max<size_t>(target_bytes, 1)) {}

int Cutter::at(size_t i) {
  if (i >= avail_ && !complete_) {
    const size_t want = i + 65536;
    avail_ = wait_for_(want);
    if (avail_ < want) complete_ = true;
  }
  return i < avail_ ? static_cast<unsigned char>(text_[i]) : -1;
}

void Cutter::scan_to(size_t pos) {
  if (pos > avail_ && !complete_) {
    avail_ = wait_for_(pos);
    if (avail_ < pos) complete_ = true;
  }
  pos = std::min(pos, avail_);
  if (pos > scanned_) {
    scan(text_ + scanned_, pos - scanned_, st_);
    scanned_ = pos;
  }
}

bool Cutter::locate_events() {
  // st_ stands just inside the top-level object (depth 1). The key is the first "traceEvents" string that
  // starts at depth 1 outside a string and is followed by ':' and '['.
  for (;;) {
    if (at(scanned_) < 0) return false;
    const std::string_view rest(text_ + scanned_, avail_ - scanned_);
    const size_t q = rest.find(kEventsKey);
    if (q == std::string_view::npos) {
      if (complete_) return false;
      // Keep the bytes that could start a match; ask for more.
      const size_t keep = std::min(rest.size(), kEventsKey.size());
      scan_to(avail_ - keep);
      if (at(avail_) < 0) return false;
      continue;
    }
    scan_to(scanned_ + q);
    if (!st_.in_string && st_.depth == 1) {
      size_t j = scanned_ + kEventsKey.size();
      while (is_space(at(j))) ++j;
      if (at(j) == ':') {
        ++j;
        while (is_space(at(j))) ++j;
        if (at(j) == '[') {
          scan_to(j + 1);
          return true;
        }
      }
    }
    scan_to(scanned_ + 1);
  }
}

std::optional<size_t> Cutter::next_cut() {
  const size_t start = pieces_ == 0 ? events_begin_ : piece_begin_;
  scan_to(std::max(start + target_, scanned_));
  for (size_t i = scanned_;; ++i) {
    const int c = at(i);
    if (c < 0) return std::nullopt;
    const char ch = static_cast<char>(c);
    scan(&ch, 1, st_);
    scanned_ = i + 1;
    if (st_.in_string) continue;
    if (st_.depth < event_depth_) return std::nullopt;  // the events array closed: the rest is the last piece
    if (ch != '}' || st_.depth != event_depth_) continue;
    size_t j = i + 1;
    while (is_space(at(j))) ++j;
    if (at(j) != ',') return std::nullopt;
    scan_to(j + 1);  // whitespace and the comma leave the state as it is
    piece_begin_ = j + 1;
    return i + 1;
  }
}

std::optional<Piece> Cutter::next() {
  if (done_) return std::nullopt;
  if (form_ == Form::Unknown) {
    size_t first = 0;
    while (is_space(at(first))) ++first;
    const int c = at(first);
    form_ = Form::Whole;
    if (c == '[') {
      scan_to(first + 1);
      form_ = Form::Array;
    } else if (c == '{') {
      scan_to(first + 1);
      if (locate_events()) form_ = Form::Object;
    }
    event_depth_ = form_ == Form::Object ? 2 : 1;
    events_begin_ = scanned_;
  }
  Piece p;
  p.begin = pieces_ == 0 ? 0 : piece_begin_;
  if (pieces_ > 0) p.prefix = form_ == Form::Object ? kObjectPrefix : std::string_view("[");
  const std::optional<size_t> cut = form_ == Form::Whole ? std::nullopt : next_cut();
  if (cut) {
    p.end = *cut;
    p.suffix = form_ == Form::Object ? std::string_view("]}") : std::string_view("]");
  } else {
    while (!complete_) at(avail_);
    p.end = avail_;
    done_ = true;
  }
  ++pieces_;
  return p;
}

}  // namespace tb::prof::chunks
