// octet's public C++ API: the one header a program includes. With the installed package:
//   find_package(octet REQUIRED)
//   target_link_libraries(app PRIVATE octet::octet)   # or octet::octet_static
#pragma once

#include "octet/error.h"
#include "octet/generate.h"
#include "octet/quantize.h"
#include "octet/session.h"
#include "octet/tensor.h"

#define OCTET_VERSION_STRING "0.1.0"
