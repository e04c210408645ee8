#include "client/inline_files.h"

#include <zlib.h>

#include <algorithm>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "client/protocol.h"

namespace msg = tb::client::protocol::msg;

namespace tb::client {
namespace {
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64(const std::string& in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = uint32_t(uint8_t(in[i])) << 16 | uint32_t(uint8_t(in[i + 1])) << 8 | uint8_t(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  if (i < in.size()) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16;
    if (i + 1 < in.size()) v |= uint32_t(uint8_t(in[i + 1])) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

bool unbase64(const std::string& in, std::string& out) {
  int table[256];
  std::fill(std::begin(table), std::end(table), -1);
  for (int k = 0; k < 64; ++k) table[uint8_t(kAlphabet[k])] = k;
  out.clear();
  out.reserve(in.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (char c : in) {
    if (c == '=') {
      ++pad;
      continue;
    }
    if (pad || table[uint8_t(c)] < 0) return false;  // data after padding, or not base64
    acc = acc << 6 | uint32_t(table[uint8_t(c)]);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += char((acc >> bits) & 0xff);
    }
  }
  return pad <= 2;
}

bool read_file(const std::string& path, std::string& bytes) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  bytes.assign(std::istreambuf_iterator<char>(f), {});
  return !f.bad();
}

// A trace chunk, or the loader's lanes beside one: a file carried as the message's `data`.
bool trace_file(const nlohmann::json& msg) {
  const std::string type = msg.value("type", std::string());
  return type == msg::trace || type == msg::trace_lanes;
}

// The message's file fields: (json pointer of the path, name of the carried copy).
std::vector<std::pair<std::string, std::string>> file_fields(const nlohmann::json& msg) {
  const std::string type = msg.value("type", std::string());
  if (trace_file(msg)) return {{"path", "data"}};
  if (type == msg::tune_done) return {{"report_html", "report_html"}, {"report_markdown", "report_markdown"}, {"report_json", "report_json"}};
  return {};
}
}  // namespace

std::string pack_bytes(const std::string& bytes) {
  z_stream z{};
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return "";  // 15+16: gzip
  std::string gz(deflateBound(&z, uLong(bytes.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = uInt(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(gz.data());
  z.avail_out = uInt(gz.size());
  const int rc = deflate(&z, Z_FINISH);
  gz.resize(z.total_out);
  deflateEnd(&z);
  return rc == Z_STREAM_END ? base64(gz) : "";
}

Result<std::string> unpack_bytes(const std::string& packed) {
  std::string gz, bytes;
  if (!unbase64(packed, gz)) return Error{"not base64"};
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return Error{"zlib cannot start"};
  z.next_in = reinterpret_cast<Bytef*>(gz.data());
  z.avail_in = uInt(gz.size());
  char buf[1 << 16];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    bytes.append(buf, sizeof buf - z.avail_out);
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;  // truncated
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) return Error{"corrupt or truncated gzip data"};
  return bytes;
}

Status inline_files(nlohmann::json& msg) {
  const auto fields = file_fields(msg);
  nlohmann::json carried = nlohmann::json::object();
  std::vector<std::string> sent;
  for (const auto& [field, name] : fields) {
    const std::string path = msg.value(field, std::string());
    if (path.empty()) continue;
    std::string bytes;
    if (!read_file(path, bytes)) {
      msg["inline_error"] = "cannot read " + path;
      return Error{"cannot read " + path};
    }
    carried[name] = pack_bytes(bytes);
    sent.push_back(path);
  }
  if (fields.empty() || carried.empty()) return {};
  if (trace_file(msg)) msg["data"] = carried["data"];
  else msg["files"] = carried;
  std::error_code ec;
  for (const auto& p : sent) std::filesystem::remove(p, ec);
  return {};
}

Status restore_files(nlohmann::json& msg, const std::string& dir, const std::string& prefix) {
  const bool trace = trace_file(msg);
  for (const auto& [field, name] : file_fields(msg)) {
    const nlohmann::json* packed = nullptr;
    if (trace && msg.contains("data") && msg["data"].is_string()) packed = &msg["data"];
    if (!trace && msg.contains("files") && msg["files"].contains(name) && msg["files"][name].is_string())
      packed = &msg["files"][name];
    if (!packed) continue;
    const auto unpacked = unpack_bytes(packed->get<std::string>());
    if (!unpacked) return Error{field + ": " + unpacked.error().message};
    const std::string& bytes = *unpacked;
    const std::string server = msg.value(field, std::string());
    const auto local = std::filesystem::path(dir) / (prefix + std::filesystem::path(server).filename().string());
    std::ofstream f(local, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), std::streamsize(bytes.size()));
    if (!f) return Error{"cannot write " + local.string()};
    msg[field] = local.string();
  }
  if (trace) msg.erase("data");
  else msg.erase("files");
  return {};
}

}  // namespace tb::client
