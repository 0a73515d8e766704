#include "base/EventLoop.hpp"

#include <sys/eventfd.h>

#include <spdlog/spdlog.h>

#include "base/Error.hpp"

namespace kovs {

EventLoop::EventLoop()
    : epoll_(::epoll_create1(EPOLL_CLOEXEC)), wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (!epoll_) throwErrno("epoll_create1");
    if (!wake_) throwErrno("eventfd");
    watch(wake_.get(), EPOLLIN, [this](uint32_t) {
        uint64_t n;
        while (::read(wake_.get(), &n, sizeof n) > 0) {
        }
    });
}

void EventLoop::watch(int fd, uint32_t events, FdCallback cb) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) < 0) throwErrno("epoll_ctl ADD fd " + std::to_string(fd));
    fds_[fd] = std::move(cb);
}

void EventLoop::modify(int fd, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, fd, &ev) < 0) throwErrno("epoll_ctl MOD fd " + std::to_string(fd));
}

void EventLoop::unwatch(int fd) {
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
    fds_.erase(fd);
}

EventLoop::TimerId EventLoop::after(Clock::duration delay, Task task) {
    TimerId id = nextTimer_++;
    timers_.emplace(Clock::now() + delay, std::make_pair(id, std::move(task)));
    return id;
}

void EventLoop::cancel(TimerId id) {
    for (auto it = timers_.begin(); it != timers_.end(); ++it) {
        if (it->second.first == id) {
            timers_.erase(it);
            return;
        }
    }
}

void EventLoop::stop() {
    stopped_ = true;
    uint64_t one = 1;  // wakes an epoll_wait in progress (stop from another thread)
    [[maybe_unused]] auto n = ::write(wake_.get(), &one, sizeof one);
}

void EventLoop::post(Task task) {
    {
        std::lock_guard lock(postedMutex_);
        posted_.push_back(std::move(task));
    }
    uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_.get(), &one, sizeof one);
}

template <typename F>
void EventLoop::guarded(const char* what, F&& f) {
    try {
        f();
    } catch (const std::exception& e) {
        ++callbackErrors_;
        spdlog::error("event loop: a {} failed and was dropped: {}", what, e.what());
    }
}

int EventLoop::msUntilNextTimer() const {
    if (timers_.empty()) return -1;
    auto d = timers_.begin()->first - Clock::now();
    if (d <= Clock::duration::zero()) return 0;
    // Round up so a timer is never woken for a hair too early and spun on.
    return static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(d).count());
}

void EventLoop::fireTimers() {
    auto now = Clock::now();
    while (!timers_.empty() && timers_.begin()->first <= now) {
        auto task = std::move(timers_.begin()->second.second);
        timers_.erase(timers_.begin());
        guarded("timer", task);
    }
}

void EventLoop::drainPosted() {
    std::vector<Task> tasks;
    {
        std::lock_guard lock(postedMutex_);
        tasks.swap(posted_);
    }
    for (auto& t : tasks) guarded("posted task", t);
}

void EventLoop::runOnce(int timeoutMs) {
    epoll_event events[32];
    int n = ::epoll_wait(epoll_.get(), events, 32, timeoutMs);
    if (n < 0 && errno != EINTR) throwErrno("epoll_wait");
    for (int i = 0; i < n; ++i) {
        auto it = fds_.find(events[i].data.fd);
        if (it == fds_.end()) continue;  // unwatched by an earlier callback
        auto cb = it->second;            // copy: the callback may unwatch itself
        guarded("fd callback", [&] { cb(events[i].events); });
    }
    drainPosted();
    fireTimers();
}

void EventLoop::run() {
    while (!stopped_) runOnce(msUntilNextTimer());
}

bool EventLoop::runUntil(const std::function<bool()>& done, Clock::duration timeout) {
    auto deadline = Clock::now() + timeout;
    while (!done()) {
        if (stopped_) return false;
        auto left = deadline - Clock::now();
        if (left <= Clock::duration::zero()) return done();
        int leftMs = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(left).count());
        int t = msUntilNextTimer();
        runOnce(t < 0 ? leftMs : std::min(t, leftMs));
    }
    return true;
}

}  // namespace kovs
