// The loader verdict in a report (private to the tuner's report writers): the picture the GUI's Loader tab draws
// (client/loader_picture.h, the one model of both) as inline SVG, its advice line above it and its sentences and
// parts table collapsed under "Details"; in Markdown a compact text of the same. The session report
// (report_session.cpp) draws its script's verdict, the tune report (report.cpp) its baseline snapshot's.
#pragma once

#include <string>

#include "client/loader_picture.h"
#include "client/loader_verdict.h"
#include "engine/tuner.h"

namespace tb::engine::report_detail {

// The three sections of the picture (where a sample's time goes, what the loading processes did, samples/s),
// each a title and one <svg> 900 units wide, every bar with its tooltip's exact figures as its <title>. "" for
// an empty picture.
std::string loader_picture_html(const client::LoaderPicture& pic);

// "Why the loader is slow": the advice line, the picture, then <details> with the verdict's lines and its parts.
// `note`: a muted line under the heading ("" for none). "" for an invalid verdict.
std::string loader_section_html(const client::LoaderVerdict& v, const std::string& note = "");
std::string loader_section_markdown(const client::LoaderVerdict& v, const std::string& note = "");

// The same for a tune: its baseline snapshot's verdict (Snapshot::loader), "" when it had none.
std::string tune_loader_html(const TuneResult& r);
std::string tune_loader_markdown(const TuneResult& r);

}  // namespace tb::engine::report_detail
