// Client overhead of `tps load`: one client streaming from a scripted server that sends
// as fast as it can. "tokens" is per second of the client thread's CPU time, i.e. the
// tokens/s one core of client can take; the bar is >= 20,000 so that the client is never
// the bottleneck of the servers it measures.
#include <benchmark/benchmark.h>

#include <time.h>

#include "core/timer.h"
#include "loadgen/openai_client.h"
#include "loadgen/scripted_server.h"

namespace {

using namespace tps::loadgen;

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

void BM_StreamClient(benchmark::State& state) {
  const int events = 2000;
  const bool per_event_usage = state.range(0) != 0;
  ScriptedServer server([&](const nlohmann::json&, int64_t) {
    ScriptedResponse r;
    r.events.assign(events, ScriptedEvent{0, " token", 1});
    r.per_event_usage = per_event_usage;
    return r;
  });
  Endpoint endpoint = parse_endpoint_url(server.url());
  OpenAiClient client(endpoint);
  Prompt prompt;
  prompt.text = "hello";
  prompt.output_tokens = events;
  int64_t tokens = 0;
  double wall = 0, cpu = 0;
  for (auto _ : state) {
    double w0 = tps::now_seconds(), c0 = thread_cpu_seconds();
    RequestRecord r = client.stream(prompt, 0);
    wall += tps::now_seconds() - w0;
    cpu += thread_cpu_seconds() - c0;
    if (!r.ok || r.output_tokens != events) state.SkipWithError(("stream failed: " + r.error).c_str());
    tokens += r.output_tokens;
  }
  state.counters["tok_per_client_cpu_s"] = double(tokens) / cpu;
  state.counters["tok_per_wall_s"] = double(tokens) / wall;
}
BENCHMARK(BM_StreamClient)->Arg(0)->Arg(1)->ArgName("per_event_usage")->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace
