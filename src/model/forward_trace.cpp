#include "model/forward_trace.h"

#include "core/timer.h"
#include "kernels/packed_weights.h"

namespace tps {

const char* phase_name(ForwardPhase phase) {
  switch (phase) {
    case ForwardPhase::kEmbed: return "embed";
    case ForwardPhase::kNorm: return "rmsnorm";
    case ForwardPhase::kQkv: return "qkv";
    case ForwardPhase::kRopeKv: return "rope+kv";
    case ForwardPhase::kAttention: return "attention";
    case ForwardPhase::kAttnOut: return "attn_out";
    case ForwardPhase::kFfnUp: return "ffn_gate_up";
    case ForwardPhase::kFfnAct: return "ffn_silu";
    case ForwardPhase::kFfnDown: return "ffn_down";
    case ForwardPhase::kOutput: return "output";
    case ForwardPhase::kCollective: return "collective";
  }
  return "?";
}

PhaseClock::PhaseClock(ForwardTrace* trace, ForwardPhase phase, std::initializer_list<const WeightMatrix*> weights)
    : trace_(trace), phase_(static_cast<size_t>(phase)) {
  if (trace_ == nullptr) return;
  for (const WeightMatrix* w : weights)
    trace_->weight_bytes[phase_] += static_cast<double>(w->packed != nullptr ? w->packed->bytes() : row_bytes(w->type, w->cols) * w->rows);
  waited_at_start_ = trace_->waited;
  start_ = now_seconds();
}

PhaseClock::~PhaseClock() {
  if (trace_ == nullptr) return;
  trace_->seconds[phase_] += now_seconds() - start_;
  trace_->wait_seconds[phase_] += trace_->waited - waited_at_start_;
}

}  // namespace tps
