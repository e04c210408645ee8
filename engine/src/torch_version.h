// TB_TORCH_AT_LEAST(major, minor): whether the LibTorch compiled against is that release or newer. Only
// <torch/version.h> (macros), so torch-free tests can state what a release does without LibTorch's headers.
#pragma once

#include <torch/version.h>

#define TB_TORCH_AT_LEAST(maj, min) \
  (TORCH_VERSION_MAJOR > (maj) || (TORCH_VERSION_MAJOR == (maj) && TORCH_VERSION_MINOR >= (min)))
