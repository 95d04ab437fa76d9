#pragma once
// Starts the real `tps serve` on loopback (any free port, read back from its first
// line of output) and always stops it when the test ends.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

namespace tps::testing {

inline std::string server_fixture(const std::string& relative) {
  std::string dir;
  if (const char* env = std::getenv("TPS_FIXTURES"); env && std::filesystem::is_directory(env)) {
    dir = env;
  } else if (std::filesystem::is_directory(TPS_SOURCE_DIR "/../shared/fixtures")) {
    dir = TPS_SOURCE_DIR "/../shared/fixtures";
  }
  if (dir.empty() || !std::filesystem::exists(dir + "/" + relative)) return "";
  return dir + "/" + relative;
}

struct StartOptions {
  // Returns once the server listens, before its model is loaded (the port is read from
  // its "listening on" line on stderr), instead of once it is ready.
  bool when_listening = false;
  // Starts it with SIGINT ignored, as a shell starts a background job.
  bool sigint_ignored = false;
};

class ServeProcess {
 public:
  // Commands `tps serve` runs under (mpirun and its flags), looked up in PATH.
  void set_launcher(std::vector<std::string> launcher) { launcher_ = std::move(launcher); }

  // Returns an empty string on success, else what went wrong.
  std::string start(const std::string& model, const std::vector<std::string>& extra = {},
                    const StartOptions& options = {}) {
    int out[2];
    if (pipe(out) != 0) return "pipe failed";
    log_path_ = std::filesystem::temp_directory_path() / ("tps_serve_test_" + std::to_string(getpid()) + "_" +
                                                          std::to_string(counter()++) + ".log");
    std::vector<std::string> args = {TPS_BINARY, "serve", "-m", model, "--port", "0", "-t", "1",
                                     "--log-file", log_path_};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.begin(), launcher_.begin(), launcher_.end());
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], options.when_listening ? 2 : 1);
      close(out[0]);
      close(out[1]);
      if (options.sigint_ignored) signal(SIGINT, SIG_IGN);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execvp(argv[0], argv.data());
      _exit(127);
    }
    close(out[1]);
    // The first line on stdout says the server is ready; on stderr, that it listens.
    const std::regex address(options.when_listening ? "listening on http://[^:]+:(\\d+)" : "http://[^:]+:(\\d+)");
    std::string text;
    std::smatch m;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!std::regex_search(text, m, address) && std::chrono::steady_clock::now() < deadline) {
      pollfd p{out[0], POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[512];
      ssize_t n = read(out[0], buf, sizeof buf);
      if (n <= 0) break;
      text.append(buf, n);
    }
    close(out[0]);
    if (!std::regex_search(text, m, address)) return "no port in server output: " + text;
    port_ = std::stoi(m[1]);
    return "";
  }

  // Sends `sig` and waits up to `seconds` for the server to exit: its exit status, or
  // -1 when it was still running (it is killed then) or died of a signal.
  int signal_and_wait(int sig, double seconds) {
    if (pid_ <= 0) return -1;
    kill(pid_, sig);
    return wait_exit(seconds);
  }
  // Waits up to `seconds` for an exit a signal already asked for; as signal_and_wait.
  int wait_exit(double seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        pid_ = -1;
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  pid_t pid() const { return pid_; }

  ~ServeProcess() { stop(); }

  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 100; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    std::error_code ec;
    std::filesystem::remove(log_path_, ec);
  }

  bool alive() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }
  int port() const { return port_; }
  const std::string& log_path() const { return log_path_; }
  std::unique_ptr<httplib::Client> client() const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port_);
    c->set_read_timeout(60, 0);
    return c;
  }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::vector<std::string> launcher_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_path_;
};

}  // namespace tps::testing
