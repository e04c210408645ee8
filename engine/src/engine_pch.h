// Precompiled header for engine .cpp files only. Never include from a public header.
#pragma once
#include <torch/torch.h>
#include <torch/script.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include <memory>
#include <chrono>
