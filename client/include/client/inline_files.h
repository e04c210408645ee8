// Files carried inside the run protocol (client/): a remote `serve --inline-files` writes its trace chunks
// and tune reports on the server's disk, which the GUI on another machine cannot read, so it sends each one's
// bytes in the message that names it, gzip-compressed (trace JSON shrinks ~10x) and base64-encoded (JSON
// strings carry text only). The receiver writes them to its own disk and goes on with local paths, so the
// timeline, compare and report code is the same for local and remote runs.
//
// Messages (docs/protocol.md): `trace` gains `data` (the chunk); `tune_done` gains
// `files{report_html, report_markdown, report_json}`. `path` keeps naming the file on the server.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/result.h"

namespace tb::client {

// gzip + base64 of `bytes`; "" on a zlib failure.
std::string pack_bytes(const std::string& bytes);
// The inverse; an error on bad base64 or a corrupt stream.
Result<std::string> unpack_bytes(const std::string& packed);

// Sender side: adds the files a message names to it and removes them from disk (they now travel in the
// stream). Messages of other types are left alone. An error says why a file could not be read (the message
// is then sent as it was, with that reason in `inline_error`).
Status inline_files(nlohmann::json& msg);

// Receiver side: writes the carried files under `dir` (which must exist), named after the server's file
// names with `prefix` in front, and points the message's paths at them, or says why not.
Status restore_files(nlohmann::json& msg, const std::string& dir, const std::string& prefix);

}  // namespace tb::client
