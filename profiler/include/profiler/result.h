// The profiler's errors are the shared ones (base/result.h): it never throws to its callers.
#pragma once

#include "base/result.h"

namespace tb::prof {
using tb::Error;
using tb::Result;
using tb::Status;
}  // namespace tb::prof
