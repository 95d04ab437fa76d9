#include "loadgen/scripted_server.h"

#include <httplib.h>

#include <chrono>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"
#include "core/timer.h"

namespace tps::loadgen {
namespace {

std::string chunk_json(bool chat, const std::string& text, bool role_only, const std::string& finish,
                       const nlohmann::json& usage) {
  nlohmann::json choice = {{"index", 0}, {"finish_reason", finish.empty() ? nlohmann::json() : nlohmann::json(finish)}};
  if (chat) {
    choice["delta"] = role_only ? nlohmann::json{{"role", "assistant"}, {"content", ""}}
                                : nlohmann::json{{"content", text}};
  } else {
    choice["text"] = text;
  }
  nlohmann::json chunk = {{"id", "scripted"}, {"object", chat ? "chat.completion.chunk" : "text_completion"},
                          {"model", "scripted"}, {"choices", nlohmann::json::array({choice})}};
  if (!usage.is_null()) chunk["usage"] = usage;
  return "data: " + chunk.dump() + "\n\n";
}

nlohmann::json usage_json(int64_t prompt, int64_t completion) {
  return {{"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion}};
}

}  // namespace

ScriptedServer::ScriptedServer(Script script, bool tokenize)
    : script_(std::move(script)), server_(std::make_unique<httplib::Server>()) {
  server_->new_task_queue = [] { return new httplib::ThreadPool(64); };
  server_->set_tcp_nodelay(true);  // each event leaves when written, as the script times it
  auto complete = [this](const httplib::Request& req, httplib::Response& res) {
    auto arrived = std::chrono::steady_clock::now();
    int64_t index = requests_.fetch_add(1);
    {
      std::lock_guard lock(mutex_);
      if (arrivals_.size() <= size_t(index)) {
        arrivals_.resize(size_t(index) + 1);
        event_times_.resize(size_t(index) + 1);
      }
      arrivals_[size_t(index)] = std::chrono::duration<double>(arrived.time_since_epoch()).count();
    }
    bool chat = req.path.find("chat") != std::string::npos;
    auto body = nlohmann::json::parse(req.body, nullptr, false);
    ScriptedResponse script = script_(body, index);
    if (script.status != 200) {
      res.status = script.status;
      res.set_content(nlohmann::json{{"error", {{"message", "scripted failure"}, {"code", script.status}}}}.dump(),
                      "application/json");
      return;
    }
    res.set_chunked_content_provider("text/event-stream", [this, chat, script, arrived, index](size_t, httplib::DataSink& sink) {
      auto at = arrived;
      int64_t completion = 0;
      auto write = [&](const std::string& s) { return sink.write(s.data(), s.size()); };
      for (const auto& e : script.events) {
        at += std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(e.delay_s));
        std::this_thread::sleep_until(at);
        {
          std::lock_guard lock(mutex_);
          event_times_[size_t(index)].push_back(now_seconds());
        }
        completion += e.text.empty() ? 0 : e.tokens;
        nlohmann::json usage = script.per_event_usage ? usage_json(script.prompt_tokens, completion) : nlohmann::json();
        if (!write(chunk_json(chat, e.text, e.text.empty(), "", usage))) return false;
      }
      if (script.drop) return false;  // httplib closes the connection mid-stream
      write(chunk_json(chat, "", false, "length", nlohmann::json()));
      if (script.final_usage) {
        nlohmann::json last = {{"id", "scripted"}, {"choices", nlohmann::json::array()},
                               {"usage", usage_json(script.prompt_tokens, completion)}};
        write("data: " + last.dump() + "\n\n");
      }
      write("data: [DONE]\n\n");
      sink.done();
      return !script.close_after;  // false: httplib closes the connection
    });
  };
  server_->Post("/v1/completions", complete);
  server_->Post("/v1/chat/completions", complete);
  server_->Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"object":"list","data":[{"id":"scripted","object":"model"}]})", "application/json");
  });
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(fmt::format("# TYPE scripted_requests_total counter\nscripted_requests_total {}\n", requests_.load()),
                    "text/plain; version=0.0.4");
  });
  if (tokenize) {
    server_->Post("/tokenize", [](const httplib::Request& req, httplib::Response& res) {
      auto body = nlohmann::json::parse(req.body, nullptr, false);
      std::string text = body.is_object() ? body.value("content", std::string()) : std::string();
      std::istringstream words(text);
      nlohmann::json tokens = nlohmann::json::array();
      for (std::string w; words >> w;) tokens.push_back(int64_t(tokens.size()));
      res.set_content(nlohmann::json{{"tokens", tokens}}.dump(), "application/json");
    });
  }
  port_ = server_->bind_to_any_port("127.0.0.1");
  if (port_ <= 0) fail("scripted server: cannot bind a port on 127.0.0.1");
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

ScriptedServer::~ScriptedServer() { stop(); }

void ScriptedServer::stop() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

std::vector<double> ScriptedServer::arrival_times() const {
  std::lock_guard lock(mutex_);
  return arrivals_;
}

std::vector<std::vector<double>> ScriptedServer::event_times() const {
  std::lock_guard lock(mutex_);
  return event_times_;
}

std::string ScriptedServer::url() const { return fmt::format("http://127.0.0.1:{}", port_); }

}  // namespace tps::loadgen
