// tps serve: an OpenAI-compatible HTTP server over one model, with continuous batching,
// a paged KV cache with prefix caching, streaming and Prometheus metrics.
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "cli/command.h"
#include "cli/model_session.h"
#include "core/error.h"
#include "engine/engine.h"
#include "engine/model_runner.h"
#include "cli/speculative_options.h"
#include "roofline/probe.h"
#include "server/api_server.h"

namespace tps::cli {

namespace {

struct ServeArgs {
  std::string model;
  ServerOptions server;
  int threads = 0;
  int64_t context = 0;
  int32_t max_seqs = 16;
  int64_t kv_blocks = 0;
  int64_t block_tokens = KvCache::kDefaultBlockTokens;
  int32_t batch_tokens = 512;
  int32_t max_queue = 64;
  std::string chat_template;
  std::string log_file;
  std::string profile;
  bool no_prefix_cache = false;
  SpeculativeArgs speculative;
  int tp = 1;
};

ChatFamily choose_chat_family(const ServeArgs& a, const Model& model) {
  if (!a.chat_template.empty()) {
    auto f = chat_family_from_name(a.chat_template);
    if (!f) fail("unknown --chat-template '{}' (expected chatml, llama2, llama3, mistral, phi3 or gemma)", a.chat_template);
    return *f;
  }
  return detect_chat_family(model.gguf().get_string("tokenizer.chat_template"));
}

int serve(ServeArgs a) {
  if (a.max_seqs < 1) fail("--max-seqs must be at least 1");
  if (a.batch_tokens < a.max_seqs) fail("--batch-tokens must be at least --max-seqs ({})", a.max_seqs);
  ModelSession session(a.model, a.tp);
  if (session.follower()) return session.follow();
  Model* model = &session.model();
  ChatFamily chat = choose_chat_family(a, *model);

  // Blocks are handed out on demand and preemption covers the rest.
  std::string note;
  const KvGeometry kv = plan_kv_geometry(model->config(), {a.context, a.kv_blocks, a.block_tokens, a.max_seqs}, &note);
  if (!note.empty()) std::fprintf(stderr, "tps serve: %s\n", note.c_str());
  const int threads = a.threads > 0 ? a.threads : ThreadPool::default_threads();
  ModelRunner runner(*model, kv, threads);

  EngineConfig ec;
  ec.max_seqs = a.max_seqs;
  ec.max_batch_tokens = a.batch_tokens;
  ec.prefix_cache = !a.no_prefix_cache;
  ec.max_queue = a.max_queue;
  Drafter drafter = make_drafter(a.speculative, runner);
  drafter.apply(ec);
  const Tokenizer& tokenizer = model->tokenizer();
  ec.is_eog = [&tokenizer](int32_t id) { return tokenizer.is_eog(id); };

  // Decode reads every weight once per step: its bandwidth is judged against what the
  // probed profile measured for a working set of that size on these threads.
  double bandwidth = 0;
  if (!a.profile.empty())
    bandwidth = load_profile(a.profile).bandwidth_gbps(static_cast<int64_t>(model->weight_bytes()), threads);
  ServerMetrics metrics(static_cast<double>(model->weight_bytes()), bandwidth);
  AccessLog log(a.log_file);
  Engine engine(runner, ec);
  engine.set_step_observer([&metrics](const StepInfo& s) { metrics.record_step(s); });

  ServerOptions so = a.server;
  if (so.model_name.empty()) so.model_name = std::filesystem::path(a.model).filename().string();
  so.http_threads = a.max_seqs + a.max_queue + 16;
  ApiServer server(tokenizer, engine, metrics, log, chat, so);

  // Signals go to one waiting thread, which stops the server cleanly.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is a failed write, not death

  int port = server.bind();
  std::printf("tps serve: %s on http://%s:%d (ctx %lld, %lld KV blocks of %d, max %d sequences, chat %s, %d threads)\n",
              so.model_name.c_str(), so.host.c_str(), port, static_cast<long long>(kv.context),
              static_cast<long long>(kv.blocks), static_cast<int>(kv.block_tokens), a.max_seqs, chat_family_name(chat), threads);
  std::fflush(stdout);
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    server.stop();
  });
  server.run();
  pthread_kill(waiter.native_handle(), SIGTERM);  // wakes the waiter when run() ended by itself
  waiter.join();
  return 0;
}

CommandRegistration registration{
    "serve", "OpenAI-compatible HTTP server with continuous batching and a paged, prefix-cached KV cache",
    [](CLI::App& sub) {
      auto a = std::make_shared<ServeArgs>();
      sub.add_option("-m,--model", a->model, "GGUF model file")->required();
      sub.add_option("--host", a->server.host, "address to listen on")->capture_default_str();
      sub.add_option("--port", a->server.port, "port (0: any free port, printed at start)")->capture_default_str();
      sub.add_option("-t,--threads", a->threads, "threads of the forward pass (default: the cores available)");
      sub.add_option("-c,--ctx-size", a->context, "tokens per sequence (default: the model's, at most 4096)");
      sub.add_option("--max-seqs", a->max_seqs, "sequences batched together")->capture_default_str();
      sub.add_option("--kv-blocks", a->kv_blocks, "KV cache blocks (default: max-seqs x 512 tokens)");
      sub.add_option("--block-size", a->block_tokens, "tokens per KV block")->capture_default_str();
      sub.add_option("--batch-tokens", a->batch_tokens, "token rows per forward pass (chunked prefill budget)")
          ->capture_default_str();
      sub.add_option("--max-queue", a->max_queue, "requests waiting beyond this get 429")->capture_default_str();
      sub.add_option("--api-key", a->server.api_key, "require 'Authorization: Bearer KEY' on /v1 routes");
      sub.add_option("--chat-template", a->chat_template,
                     "chatml, llama2, llama3, mistral, phi3 or gemma (default: from the GGUF)");
      sub.add_option("--request-timeout", a->server.request_timeout_s, "seconds before a request is cancelled")
          ->capture_default_str();
      sub.add_option("--max-body", a->server.max_body_bytes, "largest request body in bytes (413 beyond)")
          ->capture_default_str();
      sub.add_option("--alias", a->server.model_name, "model name reported by the API (default: the file name)");
      sub.add_option("--log-file", a->log_file, "access log file (default: stderr)");
      sub.add_option("--profile", a->profile, "hardware profile from `tps probe`: adds decode bandwidth utilization to /metrics");
      sub.add_flag("--no-prefix-cache", a->no_prefix_cache, "do not share KV blocks between requests");
      add_speculative_options(sub, a->speculative);
      add_tensor_parallel_option(sub, a->tp);
      return [a] { return serve(*a); };
    }};

}  // namespace

}  // namespace tps::cli
