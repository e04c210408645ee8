// Minimal streaming JSON writer (private): the analysis report and the Chrome trace export are write-only and
// big (millions of events), so they are built directly into one string without a DOM.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tb::prof {

class JsonWriter {
 public:
  JsonWriter& begin_object() { sep(); out_ += '{'; first_.push_back(true); return *this; }
  JsonWriter& end_object() { out_ += '}'; first_.pop_back(); after_key_ = false; return *this; }
  JsonWriter& begin_array() { sep(); out_ += '['; first_.push_back(true); return *this; }
  JsonWriter& end_array() { out_ += ']'; first_.pop_back(); after_key_ = false; return *this; }
  JsonWriter& key(std::string_view k) {
    sep();
    append_string(out_, k);
    out_ += ':';
    after_key_ = true;
    return *this;
  }
  JsonWriter& value(std::string_view s) { sep(); append_string(out_, s); return *this; }
  JsonWriter& value(const char* s) { return value(std::string_view(s ? s : "")); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b) { sep(); out_ += b ? "true" : "false"; return *this; }
  // An array of strings (notes, ids) in one call.
  JsonWriter& strings(const std::vector<std::string>& v) {
    begin_array();
    for (const auto& s : v) value(s);
    return end_array();
  }
  JsonWriter& value(int64_t v) { sep(); append_int(out_, v); return *this; }
  JsonWriter& value(uint64_t v) {
    sep();
    char b[24];
    auto r = std::to_chars(b, b + sizeof b, v);
    out_.append(b, r.ptr);
    return *this;
  }
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(double v) { sep(); append_double(out_, v); return *this; }
  JsonWriter& null() { sep(); out_ += "null"; return *this; }
  // Raw JSON text (already valid) as a value.
  JsonWriter& raw(std::string_view json) { sep(); out_ += json; return *this; }
  std::string take() { return std::move(out_); }
  std::string& buffer() { return out_; }

  static void append_int(std::string& out, int64_t v) {
    char b[24];
    auto r = std::to_chars(b, b + sizeof b, v);
    out.append(b, r.ptr);
  }
  static void append_double(std::string& out, double v) {
    if (!std::isfinite(v)) {
      out += "null";
      return;
    }
    char b[32];
    auto r = std::to_chars(b, b + sizeof b, v);
    out.append(b, r.ptr);
  }
  // ns -> microseconds with exactly three decimals, from integers (no rounding through a double).
  static void append_us(std::string& out, int64_t ns) {
    if (ns < 0) {
      out += '-';
      ns = ns == INT64_MIN ? INT64_MAX : -ns;
    }
    append_int(out, ns / 1000);
    const int frac = static_cast<int>(ns % 1000);
    if (frac) {
      char b[5] = {'.', char('0' + frac / 100), char('0' + frac / 10 % 10), char('0' + frac % 10), 0};
      out += b;
    }
  }
  static void append_string(std::string& out, std::string_view s) {
    out += '"';
    for (unsigned char c : s) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (c < 0x20) {
            static const char* hex = "0123456789abcdef";
            out += "\\u00";
            out += hex[c >> 4];
            out += hex[c & 15];
          } else {
            out += static_cast<char>(c);
          }
      }
    }
    out += '"';
  }

 private:
  void sep() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) out_ += ',';
      first_.back() = false;
    }
  }
  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace tb::prof
