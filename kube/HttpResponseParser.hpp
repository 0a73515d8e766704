#pragma once
// Incremental parser for the response to one HTTP/1.1 GET: status line,
// headers, then the body framed by chunked encoding, Content-Length or the
// connection closing. Bytes arrive in whatever pieces the socket hands over
// (a Kubernetes watch is one chunked body that lasts minutes), and decoded
// body bytes are passed on as soon as they are complete. Hand-written rather
// than libcurl: the agent's memory target leaves no room for libcurl's
// dependencies (see docs/benchmarks.md); fuzzed by fuzz_tunnel_peers.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace kovs::kube {

class HttpResponseParser {
public:
    // Decoded body bytes; return false to stop parsing (feed() then returns false).
    using OnBody = std::function<bool(std::string_view)>;

    // Throws kovs::Error on a malformed response or one over the size limits.
    // Returns false when onBody asked to stop.
    bool feed(std::string_view data, const OnBody& onBody);
    // The peer closed the connection: true when that ends the body cleanly,
    // which it does only for a body framed by the close itself.
    bool closeEndsBody();

    bool headComplete() const { return state_ != State::StatusLine && state_ != State::Headers; }
    bool done() const { return state_ == State::Done; }
    int status() const { return status_; }

    static constexpr size_t kMaxHeadBytes = 64 * 1024;

private:
    enum class State { StatusLine, Headers, Fixed, UntilClose, ChunkSize, ChunkData, ChunkEnd, Trailers, Done };

    void line(std::string_view l);
    void header(std::string_view l);
    void headEnd();

    State state_ = State::StatusLine;
    int status_ = 0;
    std::string pending_;  // a line not yet complete
    size_t headBytes_ = 0;
    bool chunked_ = false;
    bool haveLength_ = false;
    uint64_t remaining_ = 0;  // body bytes left: Content-Length, or of the current chunk
};

}  // namespace kovs::kube
