#pragma once
// What the agent's server tests share: a thread running the EventLoop the
// servers sit on, and a fresh path for the status socket.
#include <stdlib.h>

#include <string>
#include <thread>

#include "base/Error.hpp"
#include "base/EventLoop.hpp"
#include "tests/support/TempDir.hpp"

namespace kovs::test {

struct LoopThread {
    EventLoop loop;
    std::thread thread;
    void start() { thread = std::thread([this] { loop.run(); }); }
    // Servers on the loop must outlive it: join before they are destroyed.
    void join() {
        if (!thread.joinable()) return;
        loop.stop();
        thread.join();
    }
    ~LoopThread() { join(); }
};

// A socket path in a directory the server must make ("sub"), removed with
// the test.
struct TempSocket {
    TempDir dir{"kovs-status"};
    std::string path = dir / "sub/agent.sock";
};

}  // namespace kovs::test
