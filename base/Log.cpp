#include "base/Log.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include "base/Error.hpp"

namespace kovs {

void setupLogging(const std::string& level, const std::string& file) {
    auto lvl = spdlog::level::from_str(level);
    if (lvl == spdlog::level::off && level != "off") throw Error("log level '" + level + "': expected trace, debug, info, warn, error or off");
    std::shared_ptr<spdlog::logger> logger;
    if (file.empty()) {
        logger = std::make_shared<spdlog::logger>("kovs", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    } else {
        logger = std::make_shared<spdlog::logger>("kovs", std::make_shared<spdlog::sinks::basic_file_sink_mt>(file));
    }
    logger->set_level(lvl);
    logger->flush_on(spdlog::level::info);
    spdlog::set_default_logger(logger);
}

}  // namespace kovs
