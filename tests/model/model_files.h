#pragma once
// Writes variants of a fixture GGUF, broken on purpose, into a temporary directory:
// the error paths of loading (and of the commands that load) are checked against them.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

#include "formats/gguf.h"
#include "support/test_files.h"

#include "support/test_files.h"

namespace tps::testing {

struct ModelEdit {
  std::string arch;                       // replaces general.architecture when set
  std::string drop_tensor;                // leaves this tensor out
  std::string reshape_tensor;             // writes this tensor with `new_dims`
  std::vector<int64_t> new_dims;
  std::string retype_tensor;              // writes this (f32) tensor as i32 of the same shape
  std::string u32_key;                    // sets this metadata key to `u32_value`
  uint32_t u32_value = 0;

  static ModelEdit architecture(std::string a) { ModelEdit e; e.arch = std::move(a); return e; }
  static ModelEdit drop(std::string t) { ModelEdit e; e.drop_tensor = std::move(t); return e; }
  static ModelEdit reshape(std::string t, std::vector<int64_t> dims) {
    ModelEdit e;
    e.reshape_tensor = std::move(t);
    e.new_dims = std::move(dims);
    return e;
  }
  static ModelEdit retype(std::string t) { ModelEdit e; e.retype_tensor = std::move(t); return e; }
  static ModelEdit set_u32(std::string key, uint32_t v) {
    ModelEdit e;
    e.u32_key = std::move(key);
    e.u32_value = v;
    return e;
  }
};

using tps::test::temp_path;

// Copies `source` with one edit applied; returns the new file's path.
inline std::string write_edited(const std::string& source, const std::string& name, const ModelEdit& edit) {
  auto in = GgufFile::open(source);
  GgufWriter w;
  std::vector<std::string> skip;
  if (!edit.arch.empty()) skip.push_back("general.architecture");
  if (!edit.u32_key.empty()) skip.push_back(edit.u32_key);
  w.copy_metadata(*in, skip);
  if (!edit.arch.empty()) w.set_string("general.architecture", edit.arch);
  if (!edit.u32_key.empty()) w.set_u32(edit.u32_key, edit.u32_value);
  for (const GgufTensor& t : in->tensors()) {
    if (t.name == edit.drop_tensor) continue;
    std::vector<int64_t> dims = t.name == edit.reshape_tensor ? edit.new_dims : t.dims;
    GgmlType type = t.name == edit.retype_tensor ? GgmlType::kI32 : t.type;
    const uint8_t* data = t.data;
    w.add_tensor(t.name, type, dims, [data, nbytes = t.nbytes](std::span<uint8_t> dst) {
      std::memcpy(dst.data(), data, std::min(nbytes, dst.size()));
      if (dst.size() > nbytes) std::memset(dst.data() + nbytes, 0, dst.size() - nbytes);
    });
  }
  std::string path = temp_path(name);
  w.write(path);
  return path;
}

inline std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

inline std::string write_bytes(const std::string& name, const std::vector<char>& bytes) {
  std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

// The first half of `source`.
inline std::string write_truncated(const std::string& source, const std::string& name) {
  std::vector<char> bytes = read_bytes(source);
  bytes.resize(bytes.size() / 2);
  return write_bytes(name, bytes);
}

// `source` with the type id of `tensor` in its tensor info set to an id no format has.
inline std::string write_unknown_type(const std::string& source, const std::string& name, const std::string& tensor) {
  std::vector<char> bytes = read_bytes(source);
  auto file = GgufFile::open(source);
  const GgufTensor* t = file->find_tensor(tensor);
  // Tensor info: u64 name length, name, u32 n_dims, u64 dims[n_dims], u32 type, u64 offset.
  auto it = std::search(bytes.begin(), bytes.end(), tensor.begin(), tensor.end());
  size_t type_at = static_cast<size_t>(it - bytes.begin()) + tensor.size() + 4 + 8 * t->dims.size();
  uint32_t unknown = 99;
  std::memcpy(bytes.data() + type_at, &unknown, 4);
  return write_bytes(name, bytes);
}

}  // namespace tps::testing
