// How a kiln-llvm shim hands a string to Rust: a malloc'd, NUL-terminated
// copy (null when out of memory), which `target::take` reads and frees.
#ifndef KILN_LLVM_SHIM_STRING_H
#define KILN_LLVM_SHIM_STRING_H

#include <cstdlib>
#include <cstring>
#include <string>

inline char *dup_string(const std::string &S) {
  char *P = static_cast<char *>(std::malloc(S.size() + 1));
  if (P)
    std::memcpy(P, S.c_str(), S.size() + 1);
  return P;
}

#endif
