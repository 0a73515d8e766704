#pragma once
// kovs reports failures with exceptions in every layer. An Error's message
// names the object and the operation ("tnl/neigh/set br-phy 172.18.0.3: ...").
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace kovs {

class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A failed system call: the message ends with strerror(errno).
class SystemError : public Error {
public:
    SystemError(const std::string& what, int err)
        : Error(what + ": " + std::strerror(err)), code_(err) {}
    int code() const { return code_; }

private:
    int code_;
};

[[noreturn]] inline void throwErrno(const std::string& what) { throw SystemError(what, errno); }

}  // namespace kovs
