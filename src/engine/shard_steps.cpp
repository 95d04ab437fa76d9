#include "engine/shard_steps.h"

#include <cstring>
#include <memory>
#include <optional>
#include <type_traits>

#include "core/error.h"
#include "engine/model_runner.h"

namespace tps {

namespace {

enum class Command : uint8_t { kOpen, kForward, kCopyBlock, kClose, kRelease };

class Writer {
 public:
  explicit Writer(Command c) { put(c); }
  template <typename T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    append(&v, sizeof v);
  }
  template <typename T>
  void put_array(const T* v, size_t n) {
    put(static_cast<uint64_t>(n));
    append(v, n * sizeof(T));
  }
  void send(TensorParallelGroup& group) { group.broadcast(bytes_); }

 private:
  void append(const void* p, size_t n) {
    if (n == 0) return;
    const size_t at = bytes_.size();
    bytes_.resize(at + n);
    std::memcpy(bytes_.data() + at, p, n);
  }
  std::vector<uint8_t> bytes_;
};

class Reader {
 public:
  explicit Reader(const std::vector<uint8_t>& bytes) : bytes_(bytes) {}
  template <typename T>
  T get() {
    T v;
    take(&v, sizeof v);
    return v;
  }
  template <typename T>
  void get_array(std::vector<T>& v) {
    const auto n = get<uint64_t>();
    if (n > (bytes_.size() - at_) / sizeof(T)) fail("tensor-parallel step message: an array of {} runs past its end", n);
    v.resize(n);
    take(v.data(), n * sizeof(T));
  }

 private:
  void take(void* out, size_t n) {
    if (n > bytes_.size() - at_) fail("tensor-parallel step message of {} bytes is cut short", bytes_.size());
    std::memcpy(out, bytes_.data() + at_, n);
    at_ += n;
  }
  const std::vector<uint8_t>& bytes_;
  size_t at_ = 0;
};

}  // namespace

void send_open(TensorParallelGroup& group, const KvGeometry& geometry, int threads) {
  Writer w(Command::kOpen);
  w.put(geometry);
  w.put(threads);
  w.send(group);
}

void send_forward(TensorParallelGroup& group, const ForwardBatch& batch) {
  Writer w(Command::kForward);
  w.put_array(batch.tokens.data(), batch.size());
  w.put_array(batch.positions.data(), batch.positions.size());
  w.put_array(batch.sequence.data(), batch.sequence.size());
  w.put_array(batch.want_logits.data(), batch.want_logits.size());
  w.put(static_cast<uint64_t>(batch.sequences.size()));
  for (const SequenceBlocks& s : batch.sequences) w.put_array(s.block_table, static_cast<size_t>(s.n_blocks));
  w.send(group);
}

void send_copy_block(TensorParallelGroup& group, int32_t from, int32_t to) {
  Writer w(Command::kCopyBlock);
  w.put(from);
  w.put(to);
  w.send(group);
}

void send_close(TensorParallelGroup& group) { Writer(Command::kClose).send(group); }
void send_release(TensorParallelGroup& group) { Writer(Command::kRelease).send(group); }

void follow_leader(Model& model) {
  TensorParallelGroup& group = *model.tensor_parallel();
  std::unique_ptr<ModelRunner> runner;
  ForwardBatch batch;
  std::vector<std::vector<int32_t>> tables;
  std::vector<uint8_t> bytes;
  for (;;) {
    group.broadcast(bytes);
    Reader r(bytes);
    const auto command = r.get<Command>();
    if (command == Command::kRelease) return;
    if (command == Command::kOpen) {
      const auto geometry = r.get<KvGeometry>();
      const int threads = r.get<int>();
      runner.reset();
      runner = std::make_unique<ModelRunner>(model, geometry, threads);
      continue;
    }
    if (command == Command::kClose) {
      runner.reset();
      continue;
    }
    if (!runner) fail("tensor-parallel step message {} before the KV cache was opened", static_cast<int>(command));
    if (command == Command::kCopyBlock) {
      const auto from = r.get<int32_t>();
      const auto to = r.get<int32_t>();
      runner->copy_block(from, to);
    } else if (command == Command::kForward) {
      r.get_array(batch.tokens);
      r.get_array(batch.positions);
      r.get_array(batch.sequence);
      r.get_array(batch.want_logits);
      const auto n_tables = r.get<uint64_t>();
      if (n_tables > bytes.size()) fail("tensor-parallel step message names {} sequences", n_tables);
      tables.resize(n_tables);
      batch.sequences.clear();
      for (std::vector<int32_t>& t : tables) {
        r.get_array(t);
        batch.sequences.push_back({t.data(), static_cast<int64_t>(t.size())});
      }
      // The leader checks the same batch the same way: a batch it refuses (one
      // sequence's fault) is refused here too, before any sum, and both go on.
      try {
        runner->forward(batch, nullptr);
      } catch (const Error&) {
      }
    } else {
      fail("tensor-parallel step message with unknown command {}", static_cast<int>(command));
    }
  }
}

}  // namespace tps
