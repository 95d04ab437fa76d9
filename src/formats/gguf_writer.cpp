#include <cstdio>
#include <cstring>
#include <memory>

#include "core/error.h"
#include "formats/gguf.h"

namespace tps {

namespace {

constexpr size_t kAlignment = 32;

template <typename T>
void append(std::vector<uint8_t>& out, T v) {
  size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

void append_string(std::vector<uint8_t>& out, const std::string& s) {
  append<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

void append_type(std::vector<uint8_t>& out, GgufType t) { append<uint32_t>(out, static_cast<uint32_t>(t)); }

// Serializes a reader's value back into its wire form.
std::vector<uint8_t> encode(const GgufValue& v) {
  std::vector<uint8_t> out;
  append_type(out, v.type);
  auto put_scalar = [&](GgufType t, int64_t integer, double real) {
    switch (t) {
      case GgufType::kU8: append<uint8_t>(out, integer); break;
      case GgufType::kI8: append<int8_t>(out, integer); break;
      case GgufType::kU16: append<uint16_t>(out, integer); break;
      case GgufType::kI16: append<int16_t>(out, integer); break;
      case GgufType::kU32: append<uint32_t>(out, integer); break;
      case GgufType::kI32: append<int32_t>(out, integer); break;
      case GgufType::kBool: append<uint8_t>(out, integer != 0); break;
      case GgufType::kU64: append<uint64_t>(out, integer); break;
      case GgufType::kI64: append<int64_t>(out, integer); break;
      case GgufType::kF32: append<float>(out, static_cast<float>(real)); break;
      case GgufType::kF64: append<double>(out, real); break;
      default: break;
    }
  };
  if (v.type == GgufType::kString) {
    append_string(out, v.str);
  } else if (v.type == GgufType::kArray) {
    if (v.array_type == GgufType::kArray) fail("cannot copy nested GGUF arrays");
    append_type(out, v.array_type);
    if (v.array_type == GgufType::kString) {
      append<uint64_t>(out, v.strings.size());
      for (const auto& s : v.strings) append_string(out, s);
    } else {
      append<uint64_t>(out, v.numbers.size());
      for (double d : v.numbers) put_scalar(v.array_type, static_cast<int64_t>(d), d);
    }
  } else {
    put_scalar(v.type, v.integer, v.real);
  }
  return out;
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

void GgufWriter::put(const std::string& key, std::vector<uint8_t> encoded) {
  for (auto& kv : kvs_)
    if (kv.key == key) {
      kv.encoded = std::move(encoded);
      return;
    }
  kvs_.push_back({key, std::move(encoded)});
}

void GgufWriter::set_string(const std::string& key, const std::string& v) {
  std::vector<uint8_t> e;
  append_type(e, GgufType::kString);
  append_string(e, v);
  put(key, std::move(e));
}

void GgufWriter::set_u32(const std::string& key, uint32_t v) {
  std::vector<uint8_t> e;
  append_type(e, GgufType::kU32);
  append(e, v);
  put(key, std::move(e));
}

void GgufWriter::set_i32(const std::string& key, int32_t v) {
  std::vector<uint8_t> e;
  append_type(e, GgufType::kI32);
  append(e, v);
  put(key, std::move(e));
}

void GgufWriter::set_f32(const std::string& key, float v) {
  std::vector<uint8_t> e;
  append_type(e, GgufType::kF32);
  append(e, v);
  put(key, std::move(e));
}

void GgufWriter::set_bool(const std::string& key, bool v) {
  std::vector<uint8_t> e;
  append_type(e, GgufType::kBool);
  append<uint8_t>(e, v);
  put(key, std::move(e));
}

void GgufWriter::set_string_array(const std::string& key, const std::vector<std::string>& v) {
  std::vector<uint8_t> e;
  append_type(e, GgufType::kArray);
  append_type(e, GgufType::kString);
  append<uint64_t>(e, v.size());
  for (const auto& s : v) append_string(e, s);
  put(key, std::move(e));
}

void GgufWriter::set_f32_array(const std::string& key, const std::vector<float>& v) {
  std::vector<uint8_t> e;
  append_type(e, GgufType::kArray);
  append_type(e, GgufType::kF32);
  append<uint64_t>(e, v.size());
  for (float f : v) append(e, f);
  put(key, std::move(e));
}

void GgufWriter::set_i32_array(const std::string& key, const std::vector<int32_t>& v) {
  std::vector<uint8_t> e;
  append_type(e, GgufType::kArray);
  append_type(e, GgufType::kI32);
  append<uint64_t>(e, v.size());
  for (int32_t i : v) append(e, i);
  put(key, std::move(e));
}

void GgufWriter::copy_metadata(const GgufFile& from, const std::vector<std::string>& skip_prefixes) {
  for (const auto& [key, value] : from.metadata()) {
    bool skip = key == "general.alignment";
    for (const auto& p : skip_prefixes) skip = skip || key.rfind(p, 0) == 0;
    if (!skip) put(key, encode(value));
  }
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> dims, Fill fill) {
  const auto& info = type_info(type);
  if (dims.empty() || dims[0] % info.block_size != 0)
    fail("tensor '{}': row length {} is not a multiple of the {} block size {}", name, dims.empty() ? 0 : dims[0], info.name, info.block_size);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  size_t nbytes = static_cast<size_t>(n / info.block_size) * info.block_bytes;
  tensors_.push_back({name, type, std::move(dims), nbytes, std::move(fill)});
}

void GgufWriter::write(const std::string& path) const {
  std::vector<uint8_t> header;
  append<uint32_t>(header, 0x46554747);
  append<uint32_t>(header, 3);
  append<uint64_t>(header, tensors_.size());
  append<uint64_t>(header, kvs_.size());
  for (const auto& kv : kvs_) {
    append_string(header, kv.key);
    header.insert(header.end(), kv.encoded.begin(), kv.encoded.end());
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    append_string(header, t.name);
    append<uint32_t>(header, t.dims.size());
    for (int64_t d : t.dims) append<uint64_t>(header, d);
    append<uint32_t>(header, static_cast<uint32_t>(t.type));
    append<uint64_t>(header, offset);
    offset += (t.nbytes + kAlignment - 1) / kAlignment * kAlignment;
  }
  header.resize((header.size() + kAlignment - 1) / kAlignment * kAlignment, 0);

  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "wb"));
  if (!f) fail("cannot create '{}': {}", path, std::strerror(errno));
  auto write_bytes = [&](const uint8_t* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f.get()) != n) fail("cannot write '{}': {}", path, std::strerror(errno));
  };
  write_bytes(header.data(), header.size());
  std::vector<uint8_t> buffer;
  for (const auto& t : tensors_) {
    size_t padded = (t.nbytes + kAlignment - 1) / kAlignment * kAlignment;
    buffer.assign(padded, 0);
    t.fill(std::span<uint8_t>(buffer.data(), t.nbytes));
    write_bytes(buffer.data(), padded);
  }
  if (std::fflush(f.get()) != 0) fail("cannot write '{}': {}", path, std::strerror(errno));
}

}  // namespace tps
