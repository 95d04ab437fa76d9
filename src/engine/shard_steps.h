#pragma once
// How the leader of a tensor-parallel group keeps the other ranks in step. Every call the
// engine makes on the model runner (a KV cache opened, a forward pass, a block copied,
// the cache closed) goes to every rank as one broadcast message, and the other ranks
// replay it on their slice of the model. Nothing else crosses ranks but the model's own
// sums and gathers. The model runner sends; follow_leader() replays.
#include <cstdint>

#include "engine/kv_geometry.h"
#include "model/forward_batch.h"
#include "model/model.h"
#include "model/tensor_parallel.h"

namespace tps {

void send_open(TensorParallelGroup& group, const KvGeometry& geometry, int threads);
void send_forward(TensorParallelGroup& group, const ForwardBatch& batch);
void send_copy_block(TensorParallelGroup& group, int32_t from, int32_t to);
void send_close(TensorParallelGroup& group);
// The leader is done with the model: follow_leader() returns on every other rank.
void send_release(TensorParallelGroup& group);

// Run on every rank but the leader: replays the leader's messages on `model` until it
// releases the model. Throws tps::Error on a message it cannot read.
void follow_leader(Model& model);

}  // namespace tps
