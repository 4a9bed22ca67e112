// Checkpoint files: the manifest, the tensor files, the atomic replacement of the directory.
// Gathering and restoring a trainer's state is in checkpoint_state.cc.
#include "shardscope/checkpoint.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "shardscope/base/sha256.h"

namespace shardscope {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFormat = "shardscope-checkpoint";
constexpr int kVersion = 1;

static_assert(std::endian::native == std::endian::little, "tensor files are little-endian f32");

std::string TensorFile(size_t index) {
  char name[48];
  std::snprintf(name, sizeof(name), "tensors/%04zu.f32", index);
  return name;
}

// Writes `size` bytes to `path` and flushes them to the disk (a rename must not publish a
// file whose bytes are still in the page cache only).
Status WriteSynced(const fs::path& path, const void* data, size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Io("cannot create " + path.string() + ": " + std::strerror(errno));
  const char* p = static_cast<const char*>(data);
  size_t left = size;
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return Status::Io("cannot write " + path.string() + ": " + why);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  const bool closed = ::close(fd) == 0;
  if (!synced || !closed) return Status::Io("cannot flush " + path.string());
  return Status::Ok();
}

void SyncDirectory(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

std::string HashOf(const void* data, size_t size) {
  Sha256 h;
  h.Update(data, size);
  return h.HexDigest();
}

// Puts the complete directory `tmp` in place of `dir`: one atomic exchange when `dir`
// exists (renameat2), a rename otherwise. The old checkpoint is removed only afterwards.
Status Publish(const fs::path& tmp, const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    if (::rename(tmp.c_str(), dir.c_str()) != 0)
      return Status::Io("cannot rename " + tmp.string() + " to " + dir.string() + ": " +
                        std::strerror(errno));
    SyncDirectory(dir.parent_path().empty() ? fs::path(".") : dir.parent_path());
    return Status::Ok();
  }
  if (!fs::exists(dir / "manifest.json", ec) && !fs::is_empty(dir, ec)) {
    return Status::Invalid(dir.string() +
                           " exists and is not a checkpoint (no manifest.json): choose another "
                           "directory");
  }
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) != 0)
    return Status::Io("cannot replace " + dir.string() + ": " + std::strerror(errno));
  SyncDirectory(dir.parent_path().empty() ? fs::path(".") : dir.parent_path());
  fs::remove_all(tmp, ec);  // now the old checkpoint; a leftover is harmless
  return Status::Ok();
}

Result<nlohmann::json> ReadManifest(const fs::path& dir) {
  const fs::path path = dir / "manifest.json";
  std::ifstream in(path);
  if (!in) {
    return Status::Invalid(dir.string() + " holds no checkpoint (no readable " + path.string() +
                           ")");
  }
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != kFormat) {
    return Status(StatusCode::kCorrupt,
                  path.string() + ": not a Shardscope checkpoint manifest (damaged or foreign)");
  }
  if (j.value("version", 0) != kVersion) {
    return Status::Invalid(path.string() + ": checkpoint format version " +
                           std::to_string(j.value("version", 0)) + " (this build reads " +
                           std::to_string(kVersion) + ")");
  }
  return j;
}

}  // namespace

const CheckpointTensor* Checkpoint::Find(const std::string& name, const std::string& role) const {
  for (const CheckpointTensor& t : tensors) {
    if (t.name == name && t.role == role) return &t;
  }
  return nullptr;
}

std::vector<std::string> OptimizerStateRoles(const std::string& optimizer) {
  if (optimizer == "momentum") return {"velocity"};
  if (optimizer == "adam") return {"adam_m", "adam_v"};
  return {};
}

Status WriteCheckpoint(const std::string& dir_text, const Checkpoint& c,
                       std::string* manifest_sha256, int64_t* bytes) {
  if (dir_text.empty()) return Status::Invalid("checkpoint directory is empty");
  const fs::path dir = fs::path(dir_text).lexically_normal();
  const fs::path name = dir.filename().empty() ? dir.parent_path().filename() : dir.filename();
  const fs::path parent = fs::absolute(dir).parent_path();
  std::error_code ec;
  fs::create_directories(parent, ec);
  const fs::path tmp =
      parent / ("." + name.string() + ".tmp-" + std::to_string(static_cast<long>(::getpid())));
  fs::remove_all(tmp, ec);
  if (!fs::create_directories(tmp / "tensors", ec)) {
    return Status::Io("cannot create " + (tmp / "tensors").string() + ": " + ec.message());
  }
  nlohmann::json manifest = {{"format", kFormat},
                             {"version", kVersion},
                             {"model", c.model},
                             {"step", c.step},
                             {"batch", c.batch},
                             {"seed", c.seed},
                             {"optimizer", c.optimizer},
                             {"optimizer_steps", c.optimizer_steps},
                             {"saved_under", c.saved_under}};
  nlohmann::json list = nlohmann::json::array();
  int64_t total = 0;
  Status st;
  for (size_t i = 0; i < c.tensors.size() && st.ok(); ++i) {
    const CheckpointTensor& t = c.tensors[i];
    if (t.value.dtype() != DType::kF32) {
      st = Status::Invalid("checkpoint tensor " + t.name + " (" + t.role + ") is not f32");
      break;
    }
    const size_t size = static_cast<size_t>(t.value.size()) * sizeof(float);
    const std::string file = TensorFile(i);
    st = WriteSynced(tmp / file, t.value.data(), size);
    list.push_back({{"name", t.name},
                    {"role", t.role},
                    {"shape", t.value.shape()},
                    {"dtype", "f32"},
                    {"file", file},
                    {"bytes", size},
                    {"sha256", HashOf(t.value.data(), size)}});
    total += static_cast<int64_t>(size);
  }
  manifest["tensors"] = std::move(list);
  const std::string text = manifest.dump(2) + "\n";
  if (st.ok()) st = WriteSynced(tmp / "manifest.json", text.data(), text.size());
  if (st.ok()) {
    SyncDirectory(tmp / "tensors");
    SyncDirectory(tmp);
    st = Publish(tmp, dir);
  }
  if (!st.ok()) {
    fs::remove_all(tmp, ec);
    return st.WithContext("saving checkpoint " + dir.string());
  }
  if (manifest_sha256 != nullptr) *manifest_sha256 = HashOf(text.data(), text.size());
  if (bytes != nullptr) *bytes = total + static_cast<int64_t>(text.size());
  return Status::Ok();
}

Result<Checkpoint> ReadCheckpoint(const std::string& dir_text) {
  const fs::path dir(dir_text);
  SHARDSCOPE_ASSIGN_OR_RETURN(nlohmann::json j, ReadManifest(dir));
  const std::string manifest = (dir / "manifest.json").string();
  Checkpoint c;
  try {
    c.model = j.value("model", "");
    c.step = j.at("step").get<int64_t>();
    c.batch = j.at("batch").get<int64_t>();
    c.seed = j.at("seed").get<uint64_t>();
    c.optimizer = j.at("optimizer").get<std::string>();
    c.optimizer_steps = j.value("optimizer_steps", int64_t{0});
    c.saved_under = j.value("saved_under", "");
    for (const auto& e : j.at("tensors")) {
      CheckpointTensor t;
      t.name = e.at("name").get<std::string>();
      t.role = e.at("role").get<std::string>();
      const Shape shape = e.at("shape").get<Shape>();
      const std::string file = e.at("file").get<std::string>();
      const std::string expected = e.at("sha256").get<std::string>();
      const fs::path path = dir / file;
      if (file.find("..") != std::string::npos || fs::path(file).is_absolute()) {
        return Status(StatusCode::kCorrupt, manifest + ": tensor " + t.name + " names file '" +
                                                file + "' outside the checkpoint");
      }
      int64_t count = 1;
      for (int64_t d : shape) {
        if (d < 0 || d > (int64_t{1} << 40) || count > (int64_t{1} << 40) / std::max<int64_t>(1, d))
          return Status(StatusCode::kCorrupt, manifest + ": tensor " + t.name + " has shape " +
                                                  e.at("shape").dump() + " out of range");
        count *= d;
      }
      std::error_code ec;
      const auto size = fs::file_size(path, ec);
      if (ec || size != static_cast<uintmax_t>(count) * sizeof(float)) {
        return Status(StatusCode::kCorrupt,
                      path.string() + " (tensor " + t.name + ", " + t.role +
                          "): " + (ec ? "missing" : std::to_string(size) + " bytes") +
                          ", expected " + std::to_string(count * 4) + " bytes by " + manifest);
      }
      t.value = Tensor(shape);
      std::ifstream in(path, std::ios::binary);
      in.read(reinterpret_cast<char*>(t.value.data()), static_cast<std::streamsize>(count * 4));
      if (!in) return Status::Io("cannot read " + path.string());
      const std::string got = HashOf(t.value.data(), static_cast<size_t>(count) * 4);
      if (got != expected) {
        return Status(StatusCode::kCorrupt, path.string() + " (tensor " + t.name + ", " + t.role +
                                                "): sha256 " + got + " does not match " + expected +
                                                " in " + manifest + "; the checkpoint is damaged");
      }
      c.tensors.push_back(std::move(t));
    }
  } catch (const nlohmann::json::exception& e) {
    return Status(StatusCode::kCorrupt, manifest + ": " + e.what());
  }
  return c;
}

}  // namespace shardscope
