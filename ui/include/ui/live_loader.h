// The loader's verdict of a live run (client/loader_verdict.h): the latest `loader_parts` (a script's launcher or the engine's serve sends it)
// message (after each trace chunk) against the run's measured steps so far, as `run --script` makes it at the end.
#pragma once

#include <QJsonObject>

#include "client/loader_verdict.h"
#include "ui/run_controller.h"

namespace tb::ui {

// The measured steps are the run's after warm-up and outside trace chunks (a traced step is stretched by the
// recording, as `run` leaves it out); the cores are the machine's. Not valid without parts or such steps.
tb::client::LoaderVerdict liveLoaderVerdict(const RunRecord& rec, const QJsonObject& msg);

// The same at the run's end, from its `done` summary: a traced script's last totals (`loader_parts`, `cpu_ns`),
// which carry what no live message did: with num_workers=0, what taking each batch from a worker would cost the
// training process (the launcher's probe at the end). Not valid when the summary has no parts (an engine's run,
// an untraced one).
tb::client::LoaderVerdict loaderVerdictAtEnd(const RunRecord& rec, const QJsonObject& summary);

}  // namespace tb::ui
