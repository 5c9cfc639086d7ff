#include "cli/replay.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "io/png_text.h"
#include "util/error.h"

namespace moss {
namespace {

nlohmann::json read_record(const std::string& flag, const std::string& path) {
  PngTextChunk record;
  try {
    record = read_png_text_chunk(path, "generation", kRecordLimit);
  } catch (const Error& e) {
    if (e.code() != ExitCode::Failure) throw;  // a signal's status stays what it is
    throw usage_error(flag + " " + path + ": " + e.what());
  }
  const std::string where = flag + " " + path + ": ";
  switch (record.status) {
    case PngTextStatus::Found: break;
    case PngTextStatus::Missing:
      throw usage_error(where + "no generation record (written with --no-metadata, or not by moss-infer-hip)");
    case PngTextStatus::Damaged: throw usage_error(where + "its generation record is damaged: " + record.detail);
    case PngTextStatus::Compressed:
      throw usage_error(where + "its generation record is compressed (moss-infer-hip writes it uncompressed)");
  }
  nlohmann::json j = nlohmann::json::parse(record.text, nullptr, false);
  if (!j.is_object()) throw usage_error(where + "its generation record is not a JSON object");
  return j;
}

}  // namespace

bool is_replay_flag(const std::string& option) { return option == "--from-png" || option == "--replay"; }

bool ReplaySource::supplied(RequestField field) const {
  return std::find(fields.begin(), fields.end(), field) != fields.end();
}

Error ReplaySource::blame(const Error& e) const {
  const std::string msg = e.what();
  for (RequestField field : fields) {
    const std::string option = field_names(field).flag;
    if (msg.compare(0, option.size(), option) != 0) continue;
    if (msg.size() > option.size() && msg[option.size()] != ' ' && msg[option.size()] != ':') continue;
    return Error(e.code(), flag + " " + path + ": the record's " + field_names(field).record + msg.substr(option.size()));
  }
  // The size check names both sides ("size 32x8192: above 4.2 megapixels").
  if (msg.rfind("size ", 0) == 0 && supplied(RequestField::Width) && supplied(RequestField::Height))
    return Error(e.code(), flag + " " + path + ": the record's width and height: " + msg);
  return e;
}

ReplaySource apply_replay_record(GenerationRequest& request, const std::string& flag, const std::string& path,
                                 const std::set<RequestField>& given) {
  const nlohmann::json record = read_record(flag, path);
  ReplaySource source{flag, path, {}, {}};
  const auto files = record.find("model_files");
  if (files != record.end() && files->is_array())
    for (const nlohmann::json& f : *files)
      if (f.is_object() && f.value("component", nlohmann::json()).is_string() &&
          f.value("file", nlohmann::json()).is_string() && f.value("hash", nlohmann::json()).is_string())
        source.model_files.push_back({f["component"].get<std::string>(), f["file"].get<std::string>(),
                                      f["hash"].get<std::string>(), ""});
  for (const FieldNames& f : request_fields()) {
    if (given.count(f.field)) continue;
    const auto value = record.find(f.record);
    if (value == record.end() || value->is_null()) continue;
    source.fields.push_back(f.field);
    try {
      set_field(request, f.field, *value);
    } catch (const FieldError& e) {
      throw source.blame(usage_error(e.cli));
    }
  }
  return source;
}

std::vector<std::string> replay_file_differences(const ReplaySource& replay, const std::vector<RecordedFile>& loaded) {
  std::vector<std::string> out;
  for (const RecordedFile& was : replay.model_files)
    for (const RecordedFile& now : loaded)
      if (now.component == was.component && (now.file != was.file || now.hash != was.hash))
        out.push_back(replay.flag + " " + replay.path + ": the record's " + was.component + " is " + was.file + " (" +
                      was.hash + "), this run's is " + now.file + " (" + now.hash + ")");
  return out;
}

}  // namespace moss
