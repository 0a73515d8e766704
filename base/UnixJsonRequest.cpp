#include "base/UnixJsonRequest.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/Error.hpp"
#include "base/UniqueFd.hpp"
#include "base/UnixAddress.hpp"

namespace kovs {

nlohmann::json unixJsonRequest(const std::string& path, const nlohmann::json& request, int timeoutMs) {
    auto addr = unixAddress(path, "agent status socket");
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) throwErrno("socket");
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0)
        throwErrno("connect to the agent at " + path + " (is kovs-agent running?)");
    std::string req = request.dump() + "\n";
    if (::send(fd.get(), req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size()))
        throwErrno("send to " + path);
    std::string in;
    char buf[65536];
    while (true) {
        pollfd p{fd.get(), POLLIN, 0};
        int r = ::poll(&p, 1, timeoutMs);
        if (r == 0) throw Error("agent at " + path + ": no reply within " + std::to_string(timeoutMs) + " ms");
        if (r < 0) throwErrno("poll " + path);
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0) throwErrno("read " + path);
        if (n == 0) break;
        in.append(buf, static_cast<size_t>(n));
    }
    try {
        auto reply = nlohmann::json::parse(in);
        if (reply.contains("error")) throw Error("agent: " + reply["error"].get<std::string>());
        return reply;
    } catch (const nlohmann::json::exception& e) {
        throw Error("agent at " + path + ": unreadable reply: " + e.what());
    }
}

}  // namespace kovs
