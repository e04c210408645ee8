// Text for an XML or HTML document (reports written as HTML or SVG): the one escape their writers share.
#pragma once

#include <string>
#include <string_view>

namespace tb {

// Escaped for XML text and attribute values; a control character (not allowed in XML 1.0 text) becomes a space.
inline std::string xml_escape(std::string_view s) {
  std::string o;
  o.reserve(s.size() + 8);
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') o += ' ';
        else o += c;
    }
  }
  return o;
}

}  // namespace tb
