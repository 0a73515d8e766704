#include "kube/HttpResponseParser.hpp"

#include <algorithm>
#include <cctype>

#include "base/Error.hpp"

namespace kovs::kube {
namespace {

constexpr size_t kMaxChunkLine = 1024;

bool equalsLower(std::string_view s, std::string_view lower) {
    return s.size() == lower.size() &&
           std::equal(s.begin(), s.end(), lower.begin(), [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

std::string quoted(std::string_view s) {
    std::string out = "'";
    for (char c : s.substr(0, 80)) out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
    return out + (s.size() > 80 ? "...'" : "'");
}

}  // namespace

bool HttpResponseParser::feed(std::string_view data, const OnBody& onBody) {
    size_t i = 0;
    while (i < data.size() && state_ != State::Done) {
        if (state_ == State::Fixed || state_ == State::ChunkData || state_ == State::UntilClose) {
            size_t n = data.size() - i;
            if (state_ != State::UntilClose) {
                n = static_cast<size_t>(std::min<uint64_t>(n, remaining_));
                remaining_ -= n;
                if (remaining_ == 0) state_ = state_ == State::Fixed ? State::Done : State::ChunkEnd;
            }
            std::string_view piece = data.substr(i, n);
            i += n;
            if (!onBody(piece)) return false;
            continue;
        }
        size_t nl = data.find('\n', i);
        size_t end = nl == std::string_view::npos ? data.size() : nl + 1;
        bool head = !headComplete() || state_ == State::Trailers;
        if (head && (headBytes_ += end - i) > kMaxHeadBytes)
            throw Error("HTTP response: headers longer than " + std::to_string(kMaxHeadBytes) + " bytes");
        if (!head && pending_.size() + (end - i) > kMaxChunkLine)
            throw Error("HTTP response: chunk size line longer than " + std::to_string(kMaxChunkLine) + " bytes");
        pending_.append(data.substr(i, end - i));
        i = end;
        if (nl == std::string_view::npos) break;
        std::string l = std::move(pending_);
        pending_.clear();
        l.pop_back();
        if (!l.empty() && l.back() == '\r') l.pop_back();
        line(l);
    }
    return true;
}

void HttpResponseParser::line(std::string_view l) {
    switch (state_) {
    case State::StatusLine: {
        // "HTTP/1.1 200 OK"
        bool ok = l.size() >= 12 && l.substr(0, 7) == "HTTP/1." && std::isdigit(static_cast<unsigned char>(l[7])) &&
                  l[8] == ' ' && (l.size() == 12 || l[12] == ' ');
        for (size_t k = 9; ok && k < 12; ++k) ok = std::isdigit(static_cast<unsigned char>(l[k]));
        ok = ok && l[9] != '0';  // status codes run from 100
        if (!ok) throw Error("HTTP response: bad status line " + quoted(l));
        status_ = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
        state_ = State::Headers;
        return;
    }
    case State::Headers:
        if (l.empty()) {
            headEnd();
        } else {
            header(l);
        }
        return;
    case State::ChunkSize: {
        // "1a2b[;extension]"
        uint64_t size = 0;
        size_t k = 0;
        for (; k < l.size() && std::isxdigit(static_cast<unsigned char>(l[k])); ++k) {
            if (k == 15) throw Error("HTTP response: chunk size " + quoted(l) + " too large");
            size = size * 16 + static_cast<uint64_t>(std::isdigit(static_cast<unsigned char>(l[k]))
                                                          ? l[k] - '0'
                                                          : std::tolower(static_cast<unsigned char>(l[k])) - 'a' + 10);
        }
        std::string_view rest = trim(l.substr(k));
        if (k == 0 || (!rest.empty() && rest.front() != ';'))
            throw Error("HTTP response: bad chunk size line " + quoted(l));
        remaining_ = size;
        state_ = size == 0 ? State::Trailers : State::ChunkData;
        return;
    }
    case State::ChunkEnd:
        if (!l.empty()) throw Error("HTTP response: chunk not followed by CRLF: " + quoted(l));
        state_ = State::ChunkSize;
        return;
    case State::Trailers:
        if (l.empty()) state_ = State::Done;
        return;
    default:
        return;
    }
}

void HttpResponseParser::header(std::string_view l) {
    size_t colon = l.find(':');
    if (colon == 0 || colon == std::string_view::npos || l.substr(0, colon).find_first_of(" \t") != std::string_view::npos)
        throw Error("HTTP response: bad header line " + quoted(l));
    std::string_view name = l.substr(0, colon);
    std::string_view value = trim(l.substr(colon + 1));
    if (equalsLower(name, "transfer-encoding")) {
        // The last coding is the framing one; kovs asks for no compression.
        size_t comma = value.rfind(',');
        std::string_view last = trim(comma == std::string_view::npos ? value : value.substr(comma + 1));
        if (equalsLower(last, "chunked")) {
            chunked_ = true;
        } else if (!equalsLower(last, "identity")) {
            throw Error("HTTP response: unsupported Transfer-Encoding " + quoted(value));
        }
    } else if (equalsLower(name, "content-length")) {
        uint64_t n = 0;
        if (value.empty() || value.size() > 18 ||
            !std::all_of(value.begin(), value.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
            throw Error("HTTP response: bad Content-Length " + quoted(value));
        for (char c : value) n = n * 10 + static_cast<uint64_t>(c - '0');
        if (haveLength_ && n != remaining_) throw Error("HTTP response: conflicting Content-Length headers");
        haveLength_ = true;
        remaining_ = n;
    }
}

void HttpResponseParser::headEnd() {
    if (status_ == 101) throw Error("HTTP response: 101 Switching Protocols to a GET");
    if (status_ < 200) {  // 100 Continue and other interim responses: a real one follows
        size_t used = headBytes_;
        *this = HttpResponseParser();
        headBytes_ = used;
        return;
    }
    if (status_ == 204 || status_ == 304) {
        state_ = State::Done;
    } else if (chunked_) {
        state_ = State::ChunkSize;
    } else if (haveLength_) {
        state_ = remaining_ == 0 ? State::Done : State::Fixed;
    } else {
        state_ = State::UntilClose;
    }
}

bool HttpResponseParser::closeEndsBody() {
    if (state_ == State::UntilClose) state_ = State::Done;
    return state_ == State::Done;
}

}  // namespace kovs::kube
