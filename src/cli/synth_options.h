#pragma once
// The flags of a synthesized model that `tps synth` and `tps bench` share.
#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "model/synth.h"

namespace tps::cli {

inline CLI::Option* add_output_skew_option(CLI::App& sub, float& skew) {
  return add_ranged_option(sub, "--output-skew", skew,
                           "widen the output rows of the vocabulary's first 1000 tokens, from this many times "
                           "down to 1 (in a tied model, their embeddings too), so that greedy text falls into loops "
                           "as small trained models' does (1: off)",
                           1.0f, kMaxOutputSkew);
}

}  // namespace tps::cli
