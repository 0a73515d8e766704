#include "agent/TerminationSignals.hpp"

#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace kovs::agent {
namespace {

sigset_t terminationSet() {
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    return sigs;
}

}  // namespace

TerminationSignals::TerminationSignals(EventLoop& loop, std::chrono::milliseconds cutShortAfter)
    : loop_(loop), cutShortAfter_(cutShortAfter) {
    sigset_t sigs = terminationSet();
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
    thread_ = std::thread([this] { wait(); });
}

TerminationSignals::~TerminationSignals() {
    bool waitingForSignal;
    {
        std::lock_guard lock(mutex_);
        finished_ = true;
        waitingForSignal = received_ == 0;
    }
    done_.notify_all();
    // Still in sigwaitinfo: a signal to that thread alone wakes it.
    if (waitingForSignal) pthread_kill(thread_.native_handle(), SIGTERM);
    thread_.join();
}

void TerminationSignals::wait() {
    sigset_t sigs = terminationSet();
    siginfo_t si;
    int sig;
    do {
        sig = sigwaitinfo(&sigs, &si);
    } while (sig < 0 && errno == EINTR);
    std::unique_lock lock(mutex_);
    if (finished_ || sig < 0) return;
    received_ = sig;
    lock.unlock();
    spdlog::info("signal {}: stopping", sig);
    loop_.stop();
    lock.lock();
    if (done_.wait_for(lock, cutShortAfter_, [this] { return finished_; })) return;
    spdlog::warn("still busy {} ms after signal {}, in a step that does not return to the event loop: exiting now, "
                 "as the SIGKILL after the grace period would", cutShortAfter_.count(), sig);
    spdlog::default_logger()->flush();
    std::fflush(stderr);
    ::_exit(0);
}

}  // namespace kovs::agent
