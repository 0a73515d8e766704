#pragma once
// The signal state kovs-agent's main() sets up, for the scope of a test:
// SIGTERM and SIGINT blocked (main reads them through a signalfd) and SIGPIPE
// ignored. Children must not inherit it (base/Process initSpawnAttrs).
#include <signal.h>

namespace kovs::test {

class AgentSignals {
public:
    AgentSignals() {
        sigset_t sigs;
        sigemptyset(&sigs);
        sigaddset(&sigs, SIGTERM);
        sigaddset(&sigs, SIGINT);
        sigprocmask(SIG_BLOCK, &sigs, &oldMask_);
        oldPipe_ = signal(SIGPIPE, SIG_IGN);
    }
    ~AgentSignals() {
        signal(SIGPIPE, oldPipe_);
        sigprocmask(SIG_SETMASK, &oldMask_, nullptr);
    }
    AgentSignals(const AgentSignals&) = delete;
    AgentSignals& operator=(const AgentSignals&) = delete;

private:
    sigset_t oldMask_;
    sighandler_t oldPipe_;
};

}  // namespace kovs::test
