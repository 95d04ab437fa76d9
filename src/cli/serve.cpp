// tps serve: an OpenAI-compatible HTTP server over one model, with continuous batching,
// a paged KV cache with prefix caching, streaming and Prometheus metrics.
#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include "cli/command.h"
#include "cli/model_session.h"
#include "core/error.h"
#include "core/timer.h"
#include "engine/engine.h"
#include "engine/model_runner.h"
#include "cli/speculative_options.h"
#include "roofline/probe.h"
#include "server/api_server.h"
#include "server/loading_server.h"

namespace tps::cli {

namespace {

struct ServeArgs {
  std::string model;
  std::vector<std::string> aliases;
  ServerOptions server;
  int threads = 0;
  int64_t context = 0;
  int32_t max_seqs = 16;
  int64_t kv_blocks = 0;
  int64_t block_tokens = KvCache::kDefaultBlockTokens;
  int32_t batch_tokens = 256;  // ITL p99 half of 512's at 16 clients, same throughput (docs/serve.md)
  int32_t max_queue = 64;
  std::string chat_template;
  std::string log_file;
  std::string profile;
  bool no_prefix_cache = false;
  SpeculativeArgs speculative;
  int tp = 1;
  double shutdown_timeout_s = 30;
};

ChatFamily choose_chat_family(const ServeArgs& a, const Model& model) {
  if (!a.chat_template.empty()) {
    auto f = chat_family_from_name(a.chat_template);
    if (!f) fail("unknown --chat-template '{}' (expected chatml, llama2, llama3, mistral, phi3 or gemma)", a.chat_template);
    return *f;
  }
  return detect_chat_family(model.gguf().get_string("tokenizer.chat_template"));
}

// SIGINT and SIGTERM go to one thread, which waits for them with sigwait: they are
// blocked here, before any thread exists, so that every thread inherits the mask and
// none takes their default action (death). Their action is reset too: a shell starts a
// background job with SIGINT ignored, and an ignored signal is discarded even when a
// thread waits for it.
sigset_t block_shutdown_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is a failed write, not death
  return signals;
}

// After the first SIGINT or SIGTERM: new requests get 503, the generations in flight
// have `timeout_s` to end (a second signal cuts that short), those still running then
// end with finish_reason "abort", and the server stops once their answers are written.
void shut_down_on_signal(ApiServer& server, const sigset_t& signals, double timeout_s) {
  // Writing the last events of aborted streams takes a moment; a client that reads
  // nothing holds its writer up to httplib's write timeout, not longer.
  constexpr double kAbortGraceSeconds = 10;
  int sig = 0;
  sigwait(&signals, &sig);
  server.refuse_new_requests();
  std::fprintf(stderr, "tps serve: %s: new requests get 503; waiting up to %g s for those in flight\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM", timeout_s);
  const double deadline = now_seconds() + timeout_s;
  double aborted_at = 0;
  while (!server.wait_in_flight(std::min(deadline, now_seconds() + 0.1))) {
    const timespec now{0, 0};
    if (aborted_at == 0 && (now_seconds() >= deadline || sigtimedwait(&signals, nullptr, &now) > 0)) {
      aborted_at = now_seconds();
      std::fprintf(stderr, "tps serve: ending %zu requests still running (finish_reason \"abort\")\n",
                   server.abort_in_flight());
    }
    if (aborted_at > 0) {
      server.abort_in_flight();  // any that slipped in since
      if (now_seconds() > aborted_at + kAbortGraceSeconds) break;
    }
  }
  server.stop();
}

// Every connection holds a file descriptor: the soft limit is raised as far as the hard
// one allows, and a --max-connections beyond it is an error.
void ensure_open_files(int max_connections) {
  constexpr rlim_t kOtherFiles = 128;  // the model, logs, MPI, and connections being refused
  const rlim_t want = static_cast<rlim_t>(max_connections) + kOtherFiles;
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur >= want) return;
  r.rlim_cur = std::min(r.rlim_max, want);
  setrlimit(RLIMIT_NOFILE, &r);
  if (r.rlim_cur < want)
    fail("--max-connections {} needs {} open files, and this process may open {} (ulimit -n)", max_connections,
         static_cast<unsigned long long>(want), static_cast<unsigned long long>(r.rlim_max));
}

int serve(ServeArgs a) {
  const sigset_t signals = block_shutdown_signals();
  if (a.batch_tokens < a.max_seqs) fail("--batch-tokens must be at least --max-seqs ({})", a.max_seqs);
  speculative_config(a.speculative);  // its flag errors before anything listens or loads
  ensure_open_files(a.server.connections.max_connections);
  ModelSession session(a.tp);
  // Listen first, load second: a health check sees "loading" instead of a refused
  // connection. Under --tp only the leader listens; a port it cannot have is reported
  // once every rank has loaded, so that its exit releases the others.
  std::unique_ptr<LoadingServer> loading;
  std::string listen_error;
  if (!session.follower()) {
    try {
      loading = std::make_unique<LoadingServer>(a.server.host, a.server.port, a.server.connections);
      std::fprintf(stderr, "tps serve: listening on http://%s:%d; loading %s\n", a.server.host.c_str(),
                   loading->port(), a.model.c_str());
    } catch (const Error& e) {
      if (a.tp <= 1) throw;
      listen_error = e.what();
    }
  }
  session.load(a.model);
  if (session.follower()) return session.follow();
  if (!listen_error.empty()) fail("{}", listen_error);
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
  // The first --alias is the name reported; the file name and every alias are accepted.
  so.model_name = a.aliases.empty() ? std::filesystem::path(a.model).filename().string() : a.aliases.front();
  so.model_aliases = a.aliases;
  so.model_aliases.push_back(std::filesystem::path(a.model).filename().string());
  ApiServer server(tokenizer, engine, metrics, log, chat, so);
  server.take_listener(loading->http());
  const int port = loading->port();
  loading.reset();

  // The first line on stdout says the server is ready, and where.
  std::printf("tps serve: %s on http://%s:%d (ctx %lld, %lld KV blocks of %d, max %d sequences, chat %s, %d threads)\n",
              so.model_name.c_str(), so.host.c_str(), port, static_cast<long long>(kv.context),
              static_cast<long long>(kv.blocks), static_cast<int>(kv.block_tokens), a.max_seqs, chat_family_name(chat), threads);
  std::fflush(stdout);
  std::thread waiter([&] { shut_down_on_signal(server, signals, a.shutdown_timeout_s); });
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
      add_ranged_option(sub, "--port", a->server.port, "port (0: any free port, printed at start)", 0, 65535);
      sub.add_option("-t,--threads", a->threads, "threads of the forward pass (default: the cores available)")
          ->check(in_range(1, 4096));
      sub.add_option("-c,--ctx-size", a->context, "tokens per sequence (default: the model's, at most 4096)")
          ->check(in_range(int64_t{2}, int64_t{1} << 24));
      add_ranged_option(sub, "--max-seqs", a->max_seqs, "sequences batched together", 1, 4096);
      sub.add_option("--kv-blocks", a->kv_blocks, "KV cache blocks (default: max-seqs x 512 tokens)")
          ->check(in_range(int64_t{2}, int64_t{1} << 30));
      add_ranged_option(sub, "--block-size", a->block_tokens, "tokens per KV block", int64_t{1}, int64_t{4096});
      add_ranged_option(sub, "--batch-tokens", a->batch_tokens, "token rows per forward pass (chunked prefill budget)", 1,
                        1 << 20);
      add_ranged_option(sub, "--max-queue", a->max_queue, "requests waiting beyond this get 429", 1, 1 << 20);
      sub.add_option("--api-key", a->server.api_key, "require 'Authorization: Bearer KEY' on /v1 routes");
      sub.add_option("--chat-template", a->chat_template,
                     "chatml, llama2, llama3, mistral, phi3 or gemma (default: from the GGUF)");
      add_ranged_option(sub, "--request-timeout", a->server.request_timeout_s,
                        "seconds before a request is cancelled with 408 (0: no limit)", 0.0, 1e6);
      add_ranged_option(sub, "--max-body", a->server.max_body_bytes, "largest request body in bytes (413 beyond)",
                        size_t{64}, size_t{1} << 30);
      sub.add_option("--alias", a->aliases,
                     "a model name requests may give, repeatable; the first is the one reported (default: the file "
                     "name, always accepted)");
      add_ranged_option(sub, "--shutdown-timeout", a->shutdown_timeout_s,
                        "on SIGTERM or SIGINT, seconds the requests in flight have to finish before they end with "
                        "finish_reason abort (0: end them at once)",
                        0.0, 86400.0);
      add_ranged_option(sub, "--max-connections", a->server.connections.max_connections,
                        "connections open at once; more get 503 at once", 1, 65536);
      add_ranged_option(sub, "--read-timeout", a->server.connections.request_read_timeout_s,
                        "seconds a client has to send a request's headers and body, from its first byte (408 beyond)",
                        0.1, 3600.0);
      add_ranged_option(sub, "--idle-timeout", a->server.connections.idle_timeout_s,
                        "seconds a connection may wait for its next request before it is closed", 0.1, 3600.0);
      sub.add_option("--log-file", a->log_file, "access log file (default: stderr)");
      sub.add_option("--profile", a->profile, "hardware profile from `tps probe`: adds decode bandwidth utilization to /metrics");
      sub.add_flag("--no-prefix-cache", a->no_prefix_cache, "do not share KV blocks between requests");
      add_speculative_options(sub, a->speculative);
      add_tensor_parallel_option(sub, a->tp);
      return [a] { return serve(*a); };
    }};

}  // namespace

}  // namespace tps::cli
