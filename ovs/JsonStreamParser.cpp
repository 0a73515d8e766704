#include "ovs/JsonStreamParser.hpp"

#include <cctype>
#include <cstdio>

#include "base/Error.hpp"

namespace kovs::ovs {

void JsonStreamParser::fail(const std::string& why) {
    failed_ = true;
    throw Error("JSON-RPC stream at byte " + std::to_string(consumed_ + pos_) + ": " + why);
}

std::vector<nlohmann::json> JsonStreamParser::feed(std::string_view bytes) {
    if (failed_) throw Error("JSON-RPC stream: parser already failed");
    std::vector<nlohmann::json> out;
    buf_.append(bytes);
    for (; pos_ < buf_.size(); ++pos_) {
        char c = buf_[pos_];
        if (depth_ == 0) {
            if (std::isspace(static_cast<unsigned char>(c))) {
                start_ = pos_ + 1;
                continue;
            }
            if (c != '{' && c != '[') {
                char shown[8];
                auto u = static_cast<unsigned char>(c);
                std::snprintf(shown, sizeof shown, std::isprint(u) ? "'%c'" : "0x%02x", u);
                fail(std::string("expected '{' or '[' to start a message, got ") + shown);
            }
            start_ = pos_;
            depth_ = 1;
            continue;
        }
        if (inString_) {
            if (escape_) escape_ = false;
            else if (c == '\\') escape_ = true;
            else if (c == '"') inString_ = false;
            continue;
        }
        switch (c) {
        case '"': inString_ = true; break;
        case '{':
        case '[':
            if (++depth_ > kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth));
            break;
        case '}':
        case ']':
            if (--depth_ == 0) {
                std::string_view text(buf_.data() + start_, pos_ + 1 - start_);
                try {
                    out.push_back(nlohmann::json::parse(text));
                } catch (const nlohmann::json::exception& e) {
                    fail(std::string("invalid JSON message: ") + e.what());
                }
                start_ = pos_ + 1;
            }
            break;
        default: break;
        }
    }
    // Drop what was consumed so the buffer holds at most one partial value.
    if (start_ > 0) {
        consumed_ += start_;
        buf_.erase(0, start_);
        pos_ -= start_;
        start_ = 0;
    }
    if (buf_.size() > kMaxMessageBytes) fail("message larger than " + std::to_string(kMaxMessageBytes) + " bytes");
    return out;
}

}  // namespace kovs::ovs
