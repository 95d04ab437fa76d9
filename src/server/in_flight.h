#pragma once
// The generation requests a server is answering, from their submission until their
// response is written, so that a shutdown can wait for them and, at its deadline, end
// the ones still running.
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/request_stream.h"

namespace tps {

class InFlight {
 public:
  // Holds its stream in flight until destroyed.
  class Ticket {
   public:
    Ticket(InFlight& set, std::shared_ptr<RequestStream> stream);
    ~Ticket();
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;

   private:
    InFlight& set_;
    std::shared_ptr<RequestStream> stream_;
  };

  size_t size() const;
  // Waits until none is in flight or `deadline` passes (now_seconds() clock); true
  // when none is.
  bool wait_empty(double deadline) const;
  // Cancels every one: the engine ends each at its next step; returns how many.
  size_t cancel_all();

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable emptied_;
  std::vector<std::shared_ptr<RequestStream>> streams_;
};

}  // namespace tps
