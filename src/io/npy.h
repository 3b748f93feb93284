// NumPy's array files: .npy (one array) and .npz (a zip of .npy files, as np.savez and
// np.savez_compressed write them). They are how users hand inputs to `octet run` and get
// outputs back, so every malformed file is an octet::Error that starts with the file's
// path and says what is wrong; nothing a file claims is allocated before it is checked
// against the file's real size.
//
// Supported element types (descr): '<f2' '<f4' '<f8' '|i1' '<i2' '<i4' '<i8' '|u1' '<u2'
// '<u4' '<u8' '|b1' '<c8' '<c16', C order only, header versions 1.0, 2.0 and 3.0.
// Big-endian data and fortran_order=True are refused with a hint on how to convert.
//
// bfloat16: numpy has no bfloat16. ml_dtypes.bfloat16 arrays are saved by np.save as the
// raw 2-byte type '<V2' (the type name is lost), so octet reads any 2-byte void array
// ('<V2', '|V2') as bfloat16 and writes bfloat16 as '<V2'; in Python, read such a file
// back with np.load(f).view(ml_dtypes.bfloat16). Other types numpy cannot name (float8,
// 4-bit, strings) are not written.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace octet {

// ---- .npy ----
Tensor read_npy(const std::filesystem::path& path);
// `context` starts every error message (a file name, or "a.npz: member 'x.npy'").
Tensor parse_npy(std::string_view bytes, const std::string& context);
// A .npy file's header without its data: what a reader that loads a slice at a time
// (calibration .npy stacks, one sample per read) needs to seek into the file.
struct NpyHeader {
  DType dtype = DType::Undefined;
  std::vector<int64_t> shape;
  size_t data_offset = 0;  // bytes before the first element
};
// Reads only the header, with the same checks as read_npy, and checks that the file is
// exactly as long as the header says (a truncated file is refused here, not mid-read).
NpyHeader read_npy_header(const std::filesystem::path& path);
// The whole file's bytes: a version 1.0 header (2.0 when the header is too long for 1.0),
// padded so the data starts at a multiple of 64 bytes, as numpy writes it.
std::string npy_bytes(const Tensor& t);
// Writes through a temporary file renamed over `path`, so a failed write leaves no
// half-written file behind.
void write_npy(const std::filesystem::path& path, const Tensor& t);
// The .npy descr for a dtype ("<f4"); an error naming the dtype when numpy cannot hold it.
std::string npy_descr(DType dtype);

// ---- .npz ----
using NamedArrays = std::vector<std::pair<std::string, Tensor>>;
// Arrays in archive order, keyed like np.load does it (member name minus ".npy").
// Members may be stored or deflated (np.savez_compressed); zip64 records are understood.
NamedArrays read_npz(const std::filesystem::path& path);
struct NpzWriteOptions {
  bool compress = false;     // deflate, like np.savez_compressed
  bool force_zip64 = false;  // zip64 records even when not needed (tests the large-file path)
};
void write_npz(const std::filesystem::path& path, const NamedArrays& arrays,
               const NpzWriteOptions& options = {});

// What a file holds, from its first bytes: .npy magic, zip magic, or anything else.
enum class ArrayFileKind { Npy, Npz, Other };
ArrayFileKind sniff_array_file(const std::filesystem::path& path);

namespace io_detail {
// Whole file into memory; errors name the path (missing, a directory, unreadable).
std::string read_file(const std::filesystem::path& path);
}  // namespace io_detail

}  // namespace octet
