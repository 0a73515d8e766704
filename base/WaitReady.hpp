#pragma once
// Waits until one fd is ready, or a wake-up eventfd (an interrupt, a stop
// request) is readable, or a deadline passes: the blocking I/O of the agent's
// HTTP server and of its Kubernetes client, which must give up on time and
// stop at once when asked.
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>

namespace kovs {

enum class WaitResult { Ready, Woken, TimedOut, Failed };  // Failed: poll() itself; errno says why

// Ready includes POLLERR and POLLHUP: the next read or write reports those.
// The wake-up fd wins over a ready `fd`.
inline WaitResult waitReady(int fd, short events, int wake, std::chrono::steady_clock::time_point deadline) {
    while (true) {
        auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
        if (left <= 0) return WaitResult::TimedOut;
        pollfd fds[2] = {{fd, events, 0}, {wake, POLLIN, 0}};
        int n = ::poll(fds, 2, static_cast<int>(std::min<long long>(left, INT_MAX)));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return WaitResult::Failed;
        if (fds[1].revents) return WaitResult::Woken;
        if (fds[0].revents) return WaitResult::Ready;
    }
}

}  // namespace kovs
