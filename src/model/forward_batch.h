#pragma once
// One forward pass serves every sequence in a scheduler step: prefill chunks and decode
// tokens travel together as rows of one activation matrix, so weights are read once.
// A sequence may contribute several rows (prefill chunk, speculative verification).
#include <cstdint>
#include <vector>

namespace tps {

struct SequenceBlocks {
  const int32_t* block_table = nullptr;  // KV block ids in position order
  int64_t n_blocks = 0;                  // must cover every position written this step
};

struct ForwardBatch {
  std::vector<int32_t> tokens;     // one row per token
  std::vector<int32_t> positions;  // its position in its sequence
  std::vector<int32_t> sequence;   // index into `sequences`
  std::vector<uint8_t> want_logits;  // 1: write this row's logits to the output
  std::vector<SequenceBlocks> sequences;

  size_t size() const { return tokens.size(); }
  void clear() {
    tokens.clear();
    positions.clear();
    sequence.clear();
    want_logits.clear();
    sequences.clear();
  }
  // Appends one token row of sequence `seq`.
  void add(int32_t token, int32_t position, int32_t seq, bool logits) {
    tokens.push_back(token);
    positions.push_back(position);
    sequence.push_back(seq);
    want_logits.push_back(logits ? 1 : 0);
  }
};

}  // namespace tps
