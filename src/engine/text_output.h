#pragma once
// A sequence's generated tokens as the user sees them, for every command alike (run,
// serve): complete UTF-8 pieces, stop strings held back until ruled out and never
// shown, and whether a stop string ended the text.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/stop_strings.h"
#include "tokenizer/tokenizer.h"

namespace tps {

class TextOutput {
 public:
  // previous: the prompt's last token (-1 for none).
  TextOutput(const Tokenizer& tokenizer, std::vector<std::string> stops, int32_t previous)
      : decoder_(tokenizer, previous), filter_(std::move(stops)) {}

  // The text now safe to show after token id; nothing once stopped().
  std::string push(int32_t id) { return filter_.push(decoder_.push(id)); }
  // At the end of generation: the rest held back (which may still complete a stop).
  std::string finish() {
    std::string out = filter_.push(decoder_.flush());
    return out + filter_.finish();
  }
  bool stopped() const { return filter_.stopped(); }

 private:
  StreamingDecoder decoder_;
  StopStringFilter filter_;
};

}  // namespace tps
